"""ERNIE 4.5's mixture of experts (``ernie4_5_moe``: ERNIE-4.5-21B-A3B, -300B-A47B and their
Thinking releases; the dense ``ernie4_5`` is ``llama.dense_swiglu``).

Mirrors transformers 5's ``modeling_ernie4_5_moe`` (counted on the meta device by
``tools/newer_moe_counts.py``, transformers 5.24.0 and PEFT 0.21.2): Llama's attention and
SwiGLU MLP, ``use_bias`` on every projection and on lm_head; layer ``i`` holds experts where
``(i + 1) % moe_layer_interval == 0`` and ``moe_layer_start_index <= i <=
moe_layer_end_index`` (-1: the last layer), the others a dense MLP of ``intermediate_size``. A
sparse layer: a router (``moe_num_experts`` x hidden, a float32 parameter) with its score
correction bias (one per expert, not trained), fused experts of ``moe_intermediate_size``
(``moe_k`` of them per token, no bias) and, for ``moe_num_shared_experts`` > 0, one shared
SwiGLU MLP that many experts wide.

LoRA ``all-linear`` (PEFT 0.21): transformers' conversion table maps ``ernie4_5_moe`` to the
Qwen2-MoE pattern, which PEFT's table knows, so PEFT adapts the router and the fused experts
(gate/up at rank 2r) and, having renamed ``gate_proj``/``up_proj``/``down_proj`` onto them, no
longer the dense layers' MLP nor the shared experts (``LinearSpec.lora_target`` False; adapted
under the per-expert convention).
"""

from __future__ import annotations

from typing import Final

from app.engine.architectures.kit import (
    Config,
    attention_dims,
    separate_attention,
)
from app.engine.architectures.moe import Moe, moe_experts, moe_shape, renamed_mlps
from app.engine.shapes import ModelShape, ShapeError

ERNIE_MOE_DEFAULTS: Final = {
    "moe_num_shared_experts": 2, "moe_layer_start_index": 1, "moe_layer_interval": 1,
}
"""``Ernie4_5_MoeConfig`` defaults (transformers 5.24) of the layer schedule and shared experts;
``moe_layer_end_index`` -1 there means the last layer."""


def _layer_index(cfg: Config, name: str, default: int, layers: int) -> int:
    """A layer index that may be 0, or -1 for the last layer; else bounded like a layer
    count."""
    value = cfg.raw.get(name)
    if value is None:
        value = default
    elif not (value in (0, -1) and isinstance(value, int) and not isinstance(value, bool)):
        value = cfg.integer(name)
    return layers - 1 if value == -1 else int(value)


def ernie_sparse_layers(cfg: Config, layers: int) -> int:
    """Layers holding experts, in closed form: the multiples of the interval among ``i + 1``
    for ``i`` from the start index to the end index (clipped to the last layer)."""
    interval = cfg.integer("moe_layer_interval", default=ERNIE_MOE_DEFAULTS["moe_layer_interval"])
    start = _layer_index(cfg, "moe_layer_start_index",
                         ERNIE_MOE_DEFAULTS["moe_layer_start_index"], layers)
    end = min(_layer_index(cfg, "moe_layer_end_index", -1, layers), layers - 1)
    if end < start:
        return 0
    return (end + 1) // interval - start // interval


def ernie4_5_moe(cfg: Config) -> ModelShape:
    """ERNIE 4.5 MoE (module docstring)."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    bias = cfg.flag("use_bias", False)
    intermediate = cfg.integer("intermediate_size")
    experts = cfg.integer("moe_num_experts", "num_experts")
    active = experts_per_token_ernie(cfg, experts)
    sparse = ernie_sparse_layers(cfg, layers)
    width = cfg.integer("moe_intermediate_size")
    # no layer in the schedule: transformers builds a dense model, nothing routes
    moe = Moe(experts, active, width, sparse) if sparse else Moe(0, 0, 0, 0)
    shared_count = ERNIE_MOE_DEFAULTS["moe_num_shared_experts"] \
        if cfg.raw.get("moe_num_shared_experts") is None else cfg.count("moe_num_shared_experts")
    linears = separate_attention(att, layers, qkv_bias=bias, o_bias=bias)
    linears += moe_experts(att.hidden, moe, peft_fused=True, router_target=True)
    linears += renamed_mlps(att.hidden, shared_width=width * shared_count, sparse=sparse,
                            intermediate=intermediate, layers=layers, bias=bias)
    vocab = cfg.integer("vocab_size")
    tied = cfg.flag("tie_word_embeddings", True)
    # the router's score correction bias, and lm_head's bias where use_bias
    other = sparse * experts + (vocab if bias else 0)
    return moe_shape(cfg, model_type="ernie4_5_moe", att=att, layers=layers,
                     intermediate=intermediate, linears=linears,
                     norm=(2 * layers + 1) * att.hidden, other=other, moe=moe, tied=tied)


def experts_per_token_ernie(cfg: Config, experts: int) -> int:
    """``moe_k`` (transformers maps ``num_experts_per_tok`` onto it), at most the experts."""
    active = cfg.integer("moe_k", "num_experts_per_tok")
    if active > experts:
        raise ShapeError("moe_k", "too_many_active_experts", active=active, experts=experts,
                         experts_field="moe_num_experts")
    return active
