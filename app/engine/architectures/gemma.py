"""Gemma (1), Gemma 2 and the Gemma 3 text model: GeGLU MLPs, embeddings tied by default,
Gemma 2/3's four RMSNorms per layer. Gemma 3's multimodal checkpoint is in ``multimodal``,
Gemma 4 in ``gemma4``.

Each mirrors the module tree transformers 5 builds for its ``model_type`` (``modeling_gemma``,
``modeling_gemma2``, ``modeling_gemma3``), fields left out taking the config class's default.
"""

from __future__ import annotations

from typing import Final

from app.engine.architectures.kit import (
    Attention,
    Config,
    assemble,
    attention_dims,
    gated_mlp,
    separate_attention,
)
from app.engine.shapes import ModelShape, ShapeError

# Config-class defaults where a released config may leave the field out (transformers 5.24).
GEMMA_HEAD_DIM: Final = 256
"""``GemmaConfig.head_dim``: 256 for every Gemma, even where hidden / heads differs (7B: 192)."""


GEMMA_KV_HEADS: Final = 16
"""``GemmaConfig.num_key_value_heads``: 16 (Gemma 7B's multi-head attention)."""


def gemma(cfg: Config) -> ModelShape:
    """Gemma 1: two RMSNorms per layer, GeGLU MLP, head_dim 256 and embeddings tied by default."""
    hidden = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    kv_heads = cfg.integer("num_key_value_heads", default=GEMMA_KV_HEADS)
    if heads % kv_heads:
        raise ShapeError("num_key_value_heads", "kv_heads_divide")
    att = Attention(hidden, heads, kv_heads, cfg.integer("head_dim", default=GEMMA_HEAD_DIM))
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    bias = cfg.flag("attention_bias", False)
    linears = separate_attention(att, layers, qkv_bias=bias, o_bias=bias)
    linears += gated_mlp(hidden, intermediate, layers)
    return assemble(
        cfg, model_type="gemma", att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=(2 * layers + 1) * hidden, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", True), mask_kinds=1,
    )


def gemma2_or_3(cfg: Config, model_type: str, *, qk_norm: bool) -> ModelShape:
    """Gemma 2 / Gemma 3 text: four RMSNorms per layer (pre/post attention and feed-forward),
    explicit head_dim, GeGLU MLP, embeddings tied by default; Gemma 3 adds q/k norms.
    Gemma 2 soft-caps attention scores and logits (defaults 50 and 30 in transformers'
    Gemma2Config); both build a full and a sliding-window causal mask."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    attention_bias = cfg.flag("attention_bias", False)
    linears = separate_attention(att, layers, qkv_bias=attention_bias, o_bias=attention_bias)
    linears += gated_mlp(att.hidden, intermediate, layers)
    norms = (4 * layers + 1) * att.hidden + (2 * layers * att.head_dim if qk_norm else 0)
    return assemble(
        cfg, model_type=model_type, att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=norms, norms_per_layer=4, qk_norm=qk_norm,
        tied=cfg.flag("tie_word_embeddings", True),
        attention_softcap=cfg.is_set(
            "attn_logit_softcapping", 50.0 if model_type == "gemma2" else None
        ),
        final_logit_softcap=cfg.is_set(
            "final_logit_softcapping", 30.0 if model_type == "gemma2" else None
        ),
        mask_kinds=2,
    )
