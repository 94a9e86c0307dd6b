"""Qwen2, Qwen2.5 and Qwen3 (the Llama layout with their own biases and Qwen3's q/k norms) and
Qwen3-MoE (fused experts in the sparse layers). Qwen3-Next and Qwen3.5 are in ``hybrid``,
the vision checkpoints in ``multimodal``.
"""

from __future__ import annotations

from dataclasses import replace

from app.engine.architectures.kit import (
    Biases,
    Config,
    assemble,
    attention_dims,
    experts_per_token,
    fused_experts,
    gated_mlp,
    separate_attention,
    sparse_layer_count,
)
from app.engine.shapes import ModelShape


def qwen2_biases(_cfg: Config) -> Biases:
    """Qwen2 / Qwen2.5: always on q, k and v, never on o or the MLP (no config flag)."""
    return True, False, False


def qwen3_biases(cfg: Config) -> Biases:
    """Qwen3 dense: ``attention_bias`` on q, k, v and o; the MLP has none (no flag read)."""
    attention_bias = cfg.flag("attention_bias", False)
    return attention_bias, attention_bias, False


def qwen3_moe(cfg: Config, model_type: str = "qwen3_moe", *,
               peft_fused: bool = True) -> ModelShape:
    """Qwen3-MoE: Qwen3 attention; sparse layers hold a router and ``num_experts`` SwiGLU experts.

    A layer is sparse unless listed in ``mlp_only_layers`` or skipped by
    ``decoder_sparse_step`` (as ``Qwen3MoeDecoderLayer`` decides); dense layers use
    ``intermediate_size``. ``peft_fused`` False: PEFT's conversion table does not know the
    model type (Qwen3-VL-MoE's text model), so it adapts neither the fused experts nor the
    router parameter, and the dense layers' ``nn.Linear`` MLPs as any others.
    """
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    experts = cfg.integer("num_experts")
    active = experts_per_token(cfg, experts, "num_experts")
    moe_intermediate = cfg.integer("moe_intermediate_size")
    step = cfg.integer("decoder_sparse_step", default=1)
    sparse = sparse_layer_count(layers, step, cfg.layer_list("mlp_only_layers", layers))
    dense = layers - sparse
    attention_bias = cfg.flag("attention_bias", False)
    linears = separate_attention(att, layers, qkv_bias=attention_bias, o_bias=attention_bias)
    linears += fused_experts(att.hidden, moe_intermediate, sparse, experts, active,
                             peft_fused=peft_fused, router_target=peft_fused)
    if dense:  # PEFT 0.21 remaps gate_proj/up_proj/down_proj onto the experts: not adapted
        linears += [replace(spec, lora_target=not peft_fused)
                    for spec in gated_mlp(att.hidden, intermediate, dense)]
    norms = (2 * layers + 1) * att.hidden + 2 * layers * att.head_dim
    return assemble(
        cfg, model_type=model_type, att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=norms, norms_per_layer=2, qk_norm=True,
        tied=cfg.flag("tie_word_embeddings", False), num_experts=experts,
        experts_per_token=active, moe_intermediate=moe_intermediate,
    )
