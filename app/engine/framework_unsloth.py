"""What Unsloth does beyond the Hugging Face recipe it wraps (``framework="unsloth"``).

The precision preset (fp32 adapters under bf16 autocast; a full fine-tune in pure bf16) is in
:mod:`precision`. On top of it Unsloth changes two terms, each applied by :func:`as_run`:

1. **No full logits.** Unsloth computes the loss with Apple's Cut Cross Entropy, which never
   materialises the logits (unsloth.ai/blog/llama3-3, December 2024: "we collaborated with
   Apple to add their new Cut Cross Entropy (CCE) algorithm"; the modules unsloth_zoo compiles
   import ``fused_linear_cross_entropy`` and keep it on unless ``UNSLOTH_ENABLE_CCE=0``), and
   since 2025 its own chunked fused loss (docs.unsloth.ai, "500K Context Length Fine-tuning",
   "Unsloth Loss Refactoring: Chunk & Fuse": "instead of computing language model head logits
   and cross-entropies over the entire sequence at once, we process manageable slices"). The
   engine takes its chunked loss head (one chunk of ``CHUNKED_LOSS_TOKENS`` tokens' logits):
   an upper bound on both, so the stranded bf16 logits of the allocator's reserve shrink to one
   chunk's too.
2. **Checkpoints in CPU memory.** Unsloth's notebooks all train with
   ``use_gradient_checkpointing="unsloth"``, which "smartly offloads intermediate activations to
   system RAM asynchronously whilst being only 1% slower" (unslothai/unsloth README; blog
   "Unsloth Gradient Checkpointing - 4x longer context windows", April 2024): with gradient
   checkpointing on, the engine's activation offload (``activations.OFFLOAD_STASH_TENSORS``
   layer inputs stay on the GPU, the layer recomputed in the backward as before).

Not modelled, because no source we read states them as bytes: Unsloth's own LoRA autograd
kernels (the fused LoRA MLP and QKV functions save fewer tensors in the recomputed layer than
PEFT's modules) and which parameters its QLoRA preparation keeps in fp32. The engine keeps
PEFT's layout for both, the larger; the "How we calculate" page says so.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Final, Protocol, TypeVar

UNSLOTH: Final = "unsloth"


class TrainingJob(Protocol):
    """What :func:`as_run` reads of a job: a protocol, so that this module does not import
    ``estimate`` (which imports it)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def framework(self) -> str: ...

    @property
    def gradient_checkpointing(self) -> bool: ...

    @property
    def activation_offload(self) -> bool: ...


J = TypeVar("J", bound=TrainingJob)


def as_run(job: J) -> J:
    """``job`` as Unsloth runs it: its fused loss, and its offloaded checkpointing when
    checkpointing is on (module docstring); any other framework's job unchanged."""
    if job.framework != UNSLOTH:
        return job
    return dataclasses.replace(
        job, loss_head="chunked",
        activation_offload=job.activation_offload or job.gradient_checkpointing)
