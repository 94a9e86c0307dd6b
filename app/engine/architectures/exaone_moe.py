"""EXAONE's mixture of experts (``exaone_moe``: K-EXAONE); the dense EXAONE 4.0 is
``llama.dense_swiglu``.

Mirrors transformers 5's ``modeling_exaone_moe`` (counted on the meta device by
``tools/newer_moe_counts.py``, transformers 5.24.0 and PEFT 0.21.2): EXAONE 4.0's attention (no
bias, an RMSNorm over each query and key head), two RMSNorms a layer; a layer is dense (a SwiGLU
MLP of ``intermediate_size``) or sparse as ``mlp_layer_types`` lists them, else the first
``first_k_dense_replace`` dense and the rest sparse. A sparse layer: a router (``num_experts``
x hidden, a float32 parameter; its score correction is a buffer, no parameter), fused experts
of ``moe_intermediate_size`` (``num_experts_per_tok`` a token) and one shared SwiGLU MLP
``num_shared_experts`` experts wide.

LoRA ``all-linear`` (PEFT 0.21): transformers' conversion table maps ``exaone_moe`` to the
Qwen2-MoE pattern, so PEFT adapts the router and the fused experts (gate/up at rank 2r) and no
longer the dense layers' MLP nor the shared experts (``LinearSpec.lora_target`` False; adapted
under the per-expert convention). Serving: sliding and full layers as ``layer_types`` or
``sliding_window_pattern`` give them (:mod:`app.engine.serving_kv`).
"""

from __future__ import annotations

from typing import Final

from app.engine.architectures.kit import (
    Config,
    attention_dims,
    experts_per_token,
    separate_attention,
)
from app.engine.architectures.moe import (
    Moe,
    layer_count,
    layer_kinds,
    moe_experts,
    moe_shape,
    renamed_mlps,
)
from app.engine.shapes import ModelShape

EXAONE_MOE_DEFAULTS: Final = {
    "num_experts": 64, "num_experts_per_tok": 8, "moe_intermediate_size": 1024,
    "num_shared_experts": 1, "first_k_dense_replace": 1,
}
"""``ExaoneMoeConfig`` defaults (transformers 5.24) of the expert sizes a config may leave out."""


def exaone_moe(cfg: Config) -> ModelShape:
    """EXAONE MoE (module docstring)."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    kinds = cfg.raw.get("mlp_layer_types")
    if kinds is not None:
        sparse = layer_kinds("mlp_layer_types", kinds, layers, ("dense", "sparse"))
    else:
        dense = layer_count(cfg, "first_k_dense_replace",
                            EXAONE_MOE_DEFAULTS["first_k_dense_replace"])
        sparse = max(layers - dense, 0)
    experts = cfg.integer("num_experts", default=EXAONE_MOE_DEFAULTS["num_experts"])
    active = EXAONE_MOE_DEFAULTS["num_experts_per_tok"] \
        if cfg.raw.get("num_experts_per_tok") is None \
        else experts_per_token(cfg, experts, "num_experts")
    width = cfg.integer("moe_intermediate_size",
                        default=EXAONE_MOE_DEFAULTS["moe_intermediate_size"])
    moe = Moe(experts, active, width, sparse) if sparse else Moe(0, 0, 0, 0)
    shared = EXAONE_MOE_DEFAULTS["num_shared_experts"] \
        if cfg.raw.get("num_shared_experts") is None else cfg.count("num_shared_experts")
    linears = separate_attention(att, layers, qkv_bias=False, o_bias=False)
    linears += moe_experts(att.hidden, moe, peft_fused=True, router_target=True)
    linears += renamed_mlps(att.hidden, shared_width=width * shared, sparse=sparse,
                            intermediate=intermediate, layers=layers)
    norm = (2 * layers + 1) * att.hidden + 2 * layers * att.head_dim
    return moe_shape(cfg, model_type="exaone_moe", att=att, layers=layers,
                     intermediate=intermediate, linears=linears, norm=norm, other=0, moe=moe,
                     qk_norm=True)
