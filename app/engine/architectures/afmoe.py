"""Arcee's AFMoE (``afmoe``: the Trinity models).

Mirrors transformers 5's ``modeling_afmoe`` (counted on the meta device by
``tools/newer_moe_counts.py``, transformers 5.24.0 and PEFT 0.21.2): gated attention (q/k/v/o
with ``attention_bias``, an RMSNorm over each query and key head, and ``gate_proj``, hidden ->
heads x head width without bias, whose sigmoid scales the attention output), four RMSNorms a
layer (before and after attention and MLP); the first ``num_dense_layers`` layers a SwiGLU MLP
of ``intermediate_size``, the others a router (``router.gate``, an ``nn.Linear``), a float32
expert bias (one per expert, not trained), fused experts of ``moe_intermediate_size``
(``num_experts_per_tok`` a token) and a shared SwiGLU MLP ``num_shared_experts`` experts wide.

LoRA ``all-linear`` (PEFT 0.21): transformers' conversion table maps ``afmoe`` to the Qwen2-MoE
pattern, so PEFT adapts the router and the fused experts (gate/up at rank 2r) and, having
renamed every ``gate_proj``/``up_proj``/``down_proj`` onto them, neither the dense and shared
MLPs nor the attention's ``gate_proj`` (``LinearSpec.lora_target`` False; all adapted under the
per-expert convention, the attention gate too: its role is ``gate``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from app.engine.architectures.kit import (
    Config,
    attention_dims,
    experts_per_token,
    separate_attention,
)
from app.engine.architectures.moe import Moe, layer_count, moe_experts, moe_shape, renamed_mlps
from app.engine.shapes import LinearSpec, ModelShape

AFMOE_DEFAULTS: Final = {
    "num_experts": 64, "num_experts_per_tok": 6, "num_shared_experts": 2, "num_dense_layers": 1,
}
"""``AfmoeConfig`` defaults (transformers 5.24) of the expert sizes a config may leave out."""

AFMOE_NORMS_PER_LAYER: Final = 4
"""input, post-attention, pre-MLP and post-MLP RMSNorms (``AfmoeDecoderLayer``)."""


def afmoe(cfg: Config) -> ModelShape:
    """AFMoE (module docstring)."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    dense = min(layer_count(cfg, "num_dense_layers", AFMOE_DEFAULTS["num_dense_layers"]), layers)
    sparse = layers - dense
    experts = cfg.integer("num_experts", default=AFMOE_DEFAULTS["num_experts"])
    active = AFMOE_DEFAULTS["num_experts_per_tok"] \
        if cfg.raw.get("num_experts_per_tok") is None \
        else experts_per_token(cfg, experts, "num_experts")
    width = cfg.integer("moe_intermediate_size")
    moe = Moe(experts, active, width, sparse) if sparse else Moe(0, 0, 0, 0)
    shared = AFMOE_DEFAULTS["num_shared_experts"] \
        if cfg.raw.get("num_shared_experts") is None else cfg.count("num_shared_experts")
    bias = cfg.flag("attention_bias", False)
    linears = separate_attention(att, layers, qkv_bias=bias, o_bias=bias)
    linears.append(LinearSpec("gate_proj", "gate", att.hidden, att.heads * att.head_dim, layers,
                              lora_target=False))
    # the router is an nn.Linear: load_in_4bit packs it like any other
    linears += [replace(spec, packed_4bit=True) if spec.role == "router" else spec
                for spec in moe_experts(att.hidden, moe, peft_fused=True, router_target=True)]
    linears += renamed_mlps(att.hidden, shared_width=width * shared, sparse=sparse,
                            intermediate=intermediate, layers=layers)
    norm = (AFMOE_NORMS_PER_LAYER * layers + 1) * att.hidden + 2 * layers * att.head_dim
    shape = moe_shape(cfg, model_type="afmoe", att=att, layers=layers,
                      intermediate=intermediate, linears=linears, norm=norm,
                      other=sparse * moe.experts, moe=moe, qk_norm=True)
    return replace(shape, norms_per_layer=AFMOE_NORMS_PER_LAYER)
