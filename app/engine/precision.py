"""Training precision: which dtype the weights, adapters, gradients and optimizer states take.

Two ways of training in bf16 are in common use, and they differ by up to half the model states:

* ``amp`` (mixed precision): fp32 master weights with bf16 autocast. The Hugging Face Trainer
  with ``bf16=True``; for a full fine-tune the engine's two accountings (``zero``: bf16 weights
  and gradients plus an fp32 master copy; ``hf``: fp32 weights and gradients); for LoRA, PEFT's
  fp32 adapters (``autocast_adapter_dtype=True``) on a bf16 base.
* ``bf16`` (pure bf16): weights, gradients and optimizer states all in bf16, no fp32 copy
  anywhere, no autocast. torchtune's recipes (``dtype: bf16``) and LitGPT's ``bf16-true``.
  PyTorch's optimizers create their states like the parameter (``torch.zeros_like(p)``), so
  AdamW's two moments take 2 + 2 bytes instead of 4 + 4; 8-bit optimizers keep their 2 bytes.

``adapter_dtype`` is the LoRA adapters' dtype (fp32 as PEFT keeps them by default, bf16 as
torchtune and LitGPT ``bf16-true`` build them, or PEFT with ``autocast_adapter_dtype=False``);
their gradients and optimizer states follow it. ``base_dtype`` is the frozen base's dtype for
LoRA/QLoRA (bf16 as usual; fp32 as some FSDP examples load it); with QLoRA it applies to what
is not quantised (embeddings, lm_head, norms).

``framework`` presets set the three the way each framework's own recipes do; an explicit
choice overrides the preset (:func:`resolve`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from app.engine.errors import EngineError

Precision = Literal["amp", "bf16"]
AdapterDtype = Literal["fp32", "bf16"]
BaseDtype = Literal["bf16", "fp32"]
Framework = Literal["hf", "torchtune", "litgpt", "unsloth"]

PRECISIONS: tuple[Precision, ...] = ("amp", "bf16")
ADAPTER_DTYPES: tuple[AdapterDtype, ...] = ("fp32", "bf16")
BASE_DTYPES: tuple[BaseDtype, ...] = ("bf16", "fp32")
FRAMEWORKS: tuple[Framework, ...] = ("hf", "torchtune", "litgpt", "unsloth")
BnbVersion = Literal["current", "0.41"]
BNB_VERSIONS: tuple[BnbVersion, ...] = ("current", "0.41")
"""The bitsandbytes releases QLoRA can be sized for, as every surface names them: ``current``
(0.43.2 and later) and ``0.41`` (0.41 to 0.43.1, which kept every 4-bit layer's input for the
backward pass: ``ctx.tensors = (A, B)``, removed in bitsandbytes commit 9e753741 / 0.43.2).
Most QLoRA figures published in 2023 and 2024 were measured with the older releases."""

DTYPE_BYTES: dict[str, int] = {"bf16": 2, "fp32": 4}
"""Bytes per element (IEEE fp32, bfloat16)."""


@dataclass(frozen=True, slots=True)
class TrainingPrecision:
    """The resolved dtypes of one job."""

    precision: Precision = "amp"
    adapter_dtype: AdapterDtype = "fp32"
    base_dtype: BaseDtype = "bf16"

    @property
    def adapter_bytes(self) -> int:
        return DTYPE_BYTES[self.adapter_dtype]

    @property
    def base_bytes(self) -> int:
        return DTYPE_BYTES[self.base_dtype]


AMP = TrainingPrecision("amp", "fp32", "bf16")
PURE_BF16 = TrainingPrecision("bf16", "bf16", "bf16")

# Each framework's recipe defaults, by method ("full" or the adapter methods), and where they
# come from:
# * hf: transformers' TrainingArguments(bf16=True) is autocast over fp32 master weights; PEFT's
#   get_peft_model(autocast_adapter_dtype=True) keeps adapters in fp32; the base is loaded with
#   torch_dtype=torch.bfloat16 (transformers' and PEFT's LoRA guides).
# * torchtune: every recipe config sets ``dtype: bf16`` (e.g. recipes/configs/llama3_1/
#   8B_lora_single_device.yaml, 8B_full_single_device.yaml), and the recipes build the model,
#   adapters included, under training.set_default_dtype(dtype): pure bf16.
# * litgpt: the published recipes (config_hub/finetune/*/{full,lora,qlora}.yaml) set
#   ``precision: bf16-true``: pure bf16, adapters included. (Without a config, litgpt's
#   get_default_supported_precision(training=True) picks bf16-mixed; choose amp for that.)
# * unsloth: LoRA/QLoRA run through unsloth_zoo.training_utils.prepare_model_for_training with
#   float32_mixed_precision=True (fp32 adapters) under the Trainer's bf16=True; a full fine-tune
#   of a bf16 model keeps bf16 (unsloth/models/vision.py, post_patch_model: "Use bfloat16
#   precision for full finetuning").
FRAMEWORK_PRESETS: dict[Framework, dict[str, TrainingPrecision]] = {
    "hf": {"full": AMP, "adapters": AMP},
    "torchtune": {"full": PURE_BF16, "adapters": PURE_BF16},
    "litgpt": {"full": PURE_BF16, "adapters": PURE_BF16},
    "unsloth": {"full": PURE_BF16, "adapters": AMP},
}


def preset(framework: Framework, method: str) -> TrainingPrecision:
    """The framework's own choice for this method (``full`` or an adapter method)."""
    return FRAMEWORK_PRESETS[framework]["full" if method == "full" else "adapters"]


RESOLVED_KEPT = 256
"""How many choices :func:`resolve` keeps resolved: 4 frameworks x 3 methods x 3 x 3 x 3 valid
choices are 324, and a sizing asks about a dozen of them hundreds of times (every step model
reads its job's dtypes); the bound keeps an invalid choice from growing it."""


@lru_cache(maxsize=RESOLVED_KEPT)
def resolve(framework: Framework, method: str, precision: Precision | None,
            adapter_dtype: AdapterDtype | None, base_dtype: BaseDtype | None) -> TrainingPrecision:
    """The framework's preset with each explicit choice put over it (kept: a pure function of
    five names, :data:`RESOLVED_KEPT`).

    Choosing pure bf16 over an amp preset also makes the adapters bf16 (pure bf16 has no fp32
    copy anywhere) unless ``adapter_dtype`` is given; choosing amp over a pure-bf16 preset gives
    PEFT's fp32 adapters likewise."""
    chosen = preset(framework, method)
    if precision is not None and precision != chosen.precision:
        chosen = AMP if precision == "amp" else PURE_BF16
    return TrainingPrecision(
        precision=chosen.precision,
        adapter_dtype=adapter_dtype or chosen.adapter_dtype,
        base_dtype=base_dtype or chosen.base_dtype,
    )


def bnb_saves_inputs(version: BnbVersion, method: str) -> bool:
    """``Job.bnb_saves_inputs`` for the bitsandbytes release a surface was given.

    The release matters only for 4-bit layers, so ``0.41`` on a LoRA or full fine-tune is a
    contradiction and refused (field ``bnb_version``), as a 4-bit ``quant`` on LoRA is, rather
    than silently ignored; the surfaces share this one rule."""
    if version not in BNB_VERSIONS:
        raise EngineError("bnb_version", "not_one_of", value=repr(version),
                          allowed=", ".join(BNB_VERSIONS))
    if version == "0.41" and method != "qlora":
        raise EngineError("bnb_version", "bnb_needs_qlora")
    return version == "0.41"
