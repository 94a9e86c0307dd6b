"""Every term of an estimate with the engine constants its formula quotes.

The "How we calculate" page renders :data:`TERMS`. The engine gives each term a key and the
numbers its formula quotes, read from the very constants the arithmetic uses, so the page
cannot drift from the code; the wording (title, formula, source) is the web layer's, in the
reader's language (``app/web/method_terms.py``), because the engine knows
no language and no presentation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.engine import activations, capabilities, checkpointing, overhead, sharding, states
from app.engine import activations_hybrid as _hybrid
from app.engine import framework_litgpt as _litgpt
from app.engine.estimate import ENGINE_VERSION

Value = int | float | str
"""A number the page formats the reader's way, or a version string it shows as it is."""


@dataclass(frozen=True, slots=True)
class Term:
    """One term of an estimate: the key its wording is found by, the constants its formula
    quotes (by the placeholder names of that wording) and where the arithmetic lives."""

    key: str
    values: Mapping[str, Value]
    module: str


def _bits(quant: states.Quant) -> float:
    return round(states.NF4_BITS[quant], 3)


def _pct(fraction: float, digits: int) -> float:
    return round(100 * fraction, digits)


_zero_w, _zero_g = states.FULL_WEIGHT_GRAD_BYTES["zero"]
_hf_w, _hf_g = states.FULL_WEIGHT_GRAD_BYTES["hf"]
_adam = states.OPTIMIZER_MOMENT_BYTES["adamw"]
_ckpt = activations.CHECKPOINT_INPUT_BYTES

TERMS: tuple[Term, ...] = (
    Term("parameters", {}, "app/engine/architectures/"),
    Term("full-zero", {
        "weights": _zero_w, "gradients": _zero_g, "master": states.ZERO_MASTER_BYTES,
        "moments": _adam, "total": _zero_w + _zero_g + states.ZERO_MASTER_BYTES + _adam,
    }, "app/engine/states.py"),
    Term("full-hf", {
        "weights": _hf_w, "gradients": _hf_g, "moments": _adam,
        "total": _hf_w + _hf_g + _adam,
    }, "app/engine/states.py"),
    Term("optimizers", {
        "adamw": _adam, "adamw_8bit": states.OPTIMIZER_MOMENT_BYTES["adamw_8bit"],
        "sgd": states.OPTIMIZER_MOMENT_BYTES["sgd"],
    }, "app/engine/states.py"),
    Term("lora", {
        "weights": states.ADAPTER_WEIGHT_BYTES, "gradients": states.ADAPTER_GRAD_BYTES,
        "moments": _adam,
        "total": states.ADAPTER_WEIGHT_BYTES + states.ADAPTER_GRAD_BYTES + _adam,
        "frozen": states.BF16_BYTES,
    }, "app/engine/states.py"),
    Term("qlora", {"nf4_dq_bits": _bits("nf4-dq"), "nf4_bits": _bits("nf4")},
         "app/engine/states.py, app/engine/activations.py"),
    Term("litgpt", {"dequantised": _litgpt.DEQUANTISED_BYTES_PER_PARAM,
                    "logits": _litgpt.LOGIT_BYTES, "qkv": _litgpt.QKV_BYTES},
         "app/engine/framework_litgpt.py"),
    Term("sharding", {
        "prefetch": sharding.DS_PREFETCH_BUCKET_SIZE, "bucket": sharding.DS_REDUCE_BUCKET_SIZE,
        "fsdp_units": sharding.FSDP_LIVE_UNITS,
    }, "app/engine/states.py, app/engine/sharding.py"),
    Term("layer-activations", {
        "eager_score": activations.EAGER_SCORE_BYTES,
        "softcap_score": activations.SOFTCAP_SCORE_BYTES,
    }, "app/engine/activations.py"),
    Term("hybrid-layers", {
        "output_gate": _hybrid.OUTPUT_GATE_BYTES,
        "deltanet_key": _hybrid.DELTANET_KEY,
        "deltanet_expanded_key": _hybrid.DELTANET_EXPANDED_KEY_HALVES / 2,
        "deltanet_value": _hybrid.DELTANET_VALUE, "deltanet_head": _hybrid.DELTANET_HEAD,
        "deltanet_state_divisor": _hybrid.DELTANET_STATE_DIVISOR,
        "deltanet_full_value": _hybrid.DELTANET_FULL_VALUE_EXTRA,
        "mamba_value": _hybrid.MAMBA_VALUE, "mamba_key": _hybrid.MAMBA_KEY,
        "mamba_head": _hybrid.MAMBA_HEAD, "mamba_expanded_key": _hybrid.MAMBA_EXPANDED_KEY,
        "mamba_state_num": _hybrid.MAMBA_STATE_NUM, "mamba_state_den": _hybrid.MAMBA_STATE_DEN,
        "mamba_full_value": _hybrid.MAMBA_FULL_VALUE_EXTRA,
    }, "app/engine/activations_hybrid.py"),
    Term("checkpointing", {"bf16": _ckpt["bf16"], "amp": _ckpt["amp"]},
         "app/engine/activations.py"),
    Term("checkpointing-auto", {"params": checkpointing.AUTO_PARAMS // 10**9,
                                "seq": checkpointing.AUTO_SEQ},
         "app/engine/checkpointing.py"),
    Term("loss-head", {
        "forward": activations.LOSS_FORWARD_BYTES_PER_VOCAB,
        "backward": (activations.LOSS_SAVED_BYTES_PER_VOCAB
                     + activations.LOSS_BACKWARD_EXTRA_BYTES_PER_VOCAB),
        "softcap": activations.SOFTCAP_LOGIT_BYTES_PER_VOCAB,
        "chunk_tokens": activations.CHUNKED_LOSS_TOKENS,
    }, "app/engine/activations.py"),
    Term("peak", {}, "app/engine/fit.py"),
    Term("overhead", {
        "logits_bytes": overhead.STRANDED_LOGITS_BYTES_PER_VOCAB,
        "layers": overhead.LAYER_WORKSET_SEGMENTS,
        "expandable_layers": overhead.EXPANDABLE_LAYER_WORKSET_SEGMENTS,
        "fsdp_pct": _pct(overhead.FSDP_ALLOCATOR_RESERVE_FRACTION, 0),
        "context_mib": overhead.CUDA_CONTEXT_BYTES // overhead.MIB,
        "context_stack": overhead.CUDA_CONTEXT_STACK,
        "nccl_gib": round(overhead.NCCL_BUFFER_BYTES / overhead.GIB, 1),
    }, "app/engine/overhead.py"),
    Term("formats", {"fp8_cc": ".".join(map(str, capabilities.FP8_MIN_CC))},
         "app/engine/capabilities.py"),
)

CUDA_CONTEXTS = overhead.CUDA_CONTEXTS
"""The CUDA context by PyTorch and CUDA version, for the page's table (overhead.py)."""
CURRENT_CONTEXT = overhead.CURRENT_CONTEXT

__all__ = ["CUDA_CONTEXTS", "CURRENT_CONTEXT", "ENGINE_VERSION", "TERMS", "Term", "Value"]
