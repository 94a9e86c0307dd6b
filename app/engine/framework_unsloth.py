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

3. **Its own LoRA kernels** (``unsloth/kernels/fast_lora.py``, read at unslothai/unsloth
   ``015bdef0``): with dropout 0 and adapters on every linear layer of a dense decoder layer
   (what ``FastLanguageModel.get_peft_model`` patches; with dropout it warns and leaves the
   LoRA matrices to PEFT), ``LoRA_QKV``, ``LoRA_W`` and ``LoRA_MLP`` replace PEFT's modules.
   What one recomputed layer keeps, per token, read off their ``save_for_backward`` calls and
   those of the kernels around them (:func:`fast_lora_layer_bytes_per_token`):

   * ``Fast_RMS_Layernorm`` (``kernels/rms_layernorm.py``) saves its input, the weight and the
     fp32 ``rstd`` of each row (4 bytes); its bf16 output is new (2h, twice a layer);
   * ``LoRA_QKV`` saves only its input (the norm's output) and the adapters; q, k and v are
     new, and ``Fast_RoPE_Embedding_QK`` (``kernels/rope_embedding.py``) clones the
     transposed q and k (``Q.clone() if not Q.is_contiguous()``) and saves only cos and sin,
     so the attention kernel's saved q, k, v, output and fp32 logsumexp are what stays
     (2q + 4kv + 2q + 4 nh); ``LoRA_W`` (o_proj) saves the attention output, the same tensor;
   * the residual after attention (2h), which the second norm saves;
   * ``LoRA_MLP`` saves X, ``e = X @ gate`` and ``g = X @ up`` (2i each); ``h = swiglu(e, g)``
     is recomputed in the backward, not saved, and the backward works in place
     (``_backward_function(DW, e, g)`` overwrites them, ``dX`` is written into X's storage):
     its one new tensor is ``DW = dY @ down^T`` (2i) beside e and g;
   * the checkpoint's backward (``UnslothCheckpointFunction.backward``) holds the recomputed
     layer's output and the gradient arriving for it (``outputs``, ``args``: 2h each) until
     ``torch.autograd.backward(outputs_with_grad, args_with_grad)`` returns.

   PEFT's modules (activations.lora_layer_bytes_per_token) keep each adapted layer's own copy
   of its input and lora_A's output, RMSNorm's fp32 inputs and SwiGLU's product besides: 304
   KB per token and layer for Llama 3.1 8B with QLoRA as PEFT prepares it, 139 KB here.
   ``matmul_lora`` casts the fp32 adapters to bf16 for each matmul (``A.to(dtype)``) and saves
   the fp32 originals, so no bf16 copy is held from forward to backward (PEFT under autocast
   holds one).
4. **No fp32 embeddings, lm_head or norms.** ``unsloth_zoo.training_utils.prepare_model_for_
   training`` (what Unsloth's ``prepare_model_for_kbit_training`` calls, with
   ``train_layernorms``, ``train_embedding`` and ``train_lm_head`` False) marks only the
   ``lora_A``/``lora_B`` parameters trainable and upcasts only those (``float32_mixed_
   precision``); every frozen parameter keeps its loaded dtype. So a QLoRA job keeps bf16
   embeddings, lm_head and norms, and a bf16 residual stream, where PEFT's
   ``prepare_model_for_kbit_training`` makes them fp32.
5. **Checkpoints on the GPU.** Unsloth's checkpoint function (``unsloth_zoo/gradient_
   checkpointing.py``, ``UnslothCheckpointFunction``) copies each layer's input through one
   GPU buffer (two when memory allows: ``GPU_BUFFERS_B``, double buffering) into pinned CPU
   buffers, and never offloads the last layer's input (``LAST_GC_INDEX``: "next run skips
   offloading it"): :data:`CHECKPOINTS_ON_GPU` layer inputs stay, where torchtune's
   offloading keeps up to five (activations.OFFLOAD_STASH_TENSORS). The buffers are allocated
   once, grown to a layer's input and kept for the step: ``UnslothCheckpointFunction.backward``
   copies the offloaded input back into one of them and recomputes the layer from it, so the
   three inputs' bytes stay beside the recomputed layer in the backward as well (and the last
   layer's own input at its backward). Below 512 tokens it checkpoints without offloading
   (:data:`OFFLOAD_MIN_SEQ_LEN`).

6. **Expandable segments.** Importing Unsloth sets ``PYTORCH_CUDA_ALLOC_CONF`` to
   ``expandable_segments:True`` where the platform supports it (``unsloth_zoo/__init__.py``;
   not on Windows or WSL), so the caching allocator's reserve is the expandable one
   (overhead.py).

Not modelled: the size of Unsloth's loss chunks follows the free memory (``unsloth_zoo/fused_
losses/cross_entropy_loss.py``, ``get_chunk_size``: half the free memory, at most 4 GiB of fp32
logits a chunk), which the engine cannot know before the step; it keeps one chunk of
``CHUNKED_LOSS_TOKENS`` tokens. Models other than dense decoder layers with two norms and a
gated MLP (mixtures of experts, hybrids, q/k norms) keep PEFT's layer count, the larger.

Not added either, because today's Unsloth no longer holds them: Unsloth's published
long-context table (unsloth.ai/blog/llama3-3) was measured with unslothai/unsloth ``0e0d8fc3``
of December 2024, which held about a third more per token than this count: ``matmul_lora``
added the adapter's product out of place (in place since ``6485cbb4``), every attention layer
kept RoPE tables of its own for the whole sequence (one shared module since ``63782ea3``), and
its checkpointing had no GPU copy buffers (since unsloth-zoo ``1a257d80``). Replayed through
the caching allocator (tools/calibrate/unsloth_replay.py), that code comes within 5 % below
the table, and today's peaks at this count (docs/accuracy.md, "The figures' own code"). The
assumption shown with the estimate says so.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, TypeVar

if TYPE_CHECKING:
    from app.engine.shapes import ModelShape
    from app.engine.states import LoraSetup

UNSLOTH: Final = "unsloth"

CHECKPOINTS_ON_GPU: Final = 3
"""Layer inputs Unsloth's checkpointing keeps on the GPU, in the forward and beside the
recomputed layer in the backward: its one or two GPU copy buffers and the last layer's input,
which it never offloads (module docstring, point 5)."""

OFFLOAD_MIN_SEQ_LEN: Final = 512
"""Below this ``max_seq_length`` Unsloth checkpoints without offloading: "For seq < 512,
gc="unsloth" offloading overhead isn't worth it; standard gc is faster"
(``unsloth/models/_utils.py``, ``apply_unsloth_gradient_checkpointing``); the job's sequence
stands for the model's ``max_seq_length``."""

BF16_BYTES: Final = 2
RSTD_BYTES: Final = 4
"""Fast_RMS_Layernorm's fp32 ``r`` (1 / rms) per row, saved for the backward."""
LOGSUMEXP_BYTES: Final = 4
"""The attention kernel's fp32 logsumexp per head, saved for the backward."""
FAST_LORA_ROLES: Final = frozenset({"q", "k", "v", "o", "gate", "up", "down"})
"""The linear layers Unsloth's fused LoRA functions take together (QKV, O, the gated MLP)."""


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

    @property
    def seq_len(self) -> int: ...


J = TypeVar("J", bound=TrainingJob)


def as_run(job: J) -> J:
    """``job`` as Unsloth runs it: its fused loss, its allocator setting and its offloaded
    checkpointing when checkpointing is on (module docstring); any other framework's job
    unchanged."""
    if job.framework != UNSLOTH:
        return job
    offloads = job.gradient_checkpointing and job.seq_len >= OFFLOAD_MIN_SEQ_LEN
    return dataclasses.replace(
        job, loss_head="chunked", expandable_segments=True,
        activation_offload=job.activation_offload or offloads)


def fast_lora_applies(shape: ModelShape, lora: LoraSetup | None) -> bool:
    """Whether Unsloth's LoRA kernels run this model's layers (module docstring, point 3): a
    dense decoder layer with two norms and a gated MLP, adapters on all of its linear layers,
    no dropout."""
    if lora is None or lora.dropout > 0 or shape.is_moe or shape.mixer is not None:
        return False
    if not shape.gated_mlp or shape.qk_norm or shape.norms_per_layer != 2 \
            or shape.latent_norm_width:
        return False
    roles = {spec.role for spec in shape.linears}
    if roles != FAST_LORA_ROLES:
        return False
    if lora.targets == "all-linear":
        return True
    names = {lora.targets} if isinstance(lora.targets, str) else set(lora.targets)
    return {spec.name for spec in shape.linears} <= names


def fast_lora_layer_bytes_per_token(shape: ModelShape) -> int:
    """One decoder layer under Unsloth's kernels, bytes per token (module docstring, point 3):
    the two norms' outputs and fp32 rstd, q and the attention output, k and v, the fp32
    logsumexp, the residual after attention, the MLP's e and g and the backward's ``DW``, the
    recomputed output and its gradient: ``10h + 4q + 4kv + 6i + 4nh + 8``, the layer's input
    (the checkpoint) apart."""
    h, i = shape.hidden_size, shape.intermediate_size
    norms = 2 * (BF16_BYTES * h + RSTD_BYTES)
    attention = BF16_BYTES * (2 * shape.q_width + 2 * shape.kv_width) \
        + LOGSUMEXP_BYTES * shape.num_heads
    residual = BF16_BYTES * h
    mlp = BF16_BYTES * 3 * i  # e and g saved, DW new in the backward
    recompute = BF16_BYTES * 2 * h  # the recomputed output and the gradient arriving for it
    return norms + attention + residual + mlp + recompute
