"""LFM2 (Liquid): short convolution blocks beside grouped-query attention, a SwiGLU MLP whose
width the config derives, as ``modeling_lfm2`` of transformers 5 builds it; held to the
meta-device count by ``tests/engine/test_hf_configs.py``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from app.engine.architectures.kit import Config, assemble, attention_dims, bounded, gated_mlp
from app.engine.shapes import LinearSpec, ModelShape, ShapeError

LFM2_FF_DIM: Final = 12_288
"""``Lfm2Config.intermediate_size`` default (``block_ff_dim`` in the releases)."""


LFM2_MULTIPLE_OF: Final = 256
"""``Lfm2Config.block_multiple_of`` default."""


MAX_FF_MULTIPLIER: Final = 64.0
"""Largest ``block_ffn_dim_multiplier`` read (released: 1.0)."""


def _lfm2_width(cfg: Config) -> int:
    """``Lfm2MLP``'s width (transformers 5.25): ``block_ff_dim`` (which ``Lfm2Config`` takes over
    ``intermediate_size``), and with ``block_auto_adjust_ff_dim`` (default True) two thirds of
    it, times ``block_ffn_dim_multiplier``, rounded up to ``block_multiple_of``."""
    width = cfg.integer("block_ff_dim", "intermediate_size", default=LFM2_FF_DIM)
    if not cfg.flag("block_auto_adjust_ff_dim", True):
        return width
    width = int(2 * width / 3)
    factor = cfg.raw.get("block_ffn_dim_multiplier", 1.0)
    if factor is None:
        return width
    if isinstance(factor, bool) or not isinstance(factor, int | float) \
            or not 0 < factor <= MAX_FF_MULTIPLIER:
        raise ShapeError("block_ffn_dim_multiplier", "positive_or_null", value=repr(factor))
    multiple = cfg.integer("block_multiple_of", default=LFM2_MULTIPLE_OF)
    width = int(factor * width)
    return bounded("intermediate_size", multiple * ((width + multiple - 1) // multiple))


def lfm2(cfg: Config) -> ModelShape:
    """LiquidAI LFM2 (``modeling_lfm2``, transformers 5.25): ``layer_types`` (or the release's
    ``full_attn_idxs``; neither: every layer attention) are grouped-query attention with
    per-head q/k RMSNorms, or a short convolution (``in_proj`` to three times the width, a
    depthwise ``conv_L_cache`` kernel, ``out_proj``; ``conv_bias`` on all three); every layer a
    SwiGLU MLP (:func:`_lfm2_width`); the embedding output normed (``embedding_norm``, the only
    final norm). Ties its embeddings unless ``tie_embedding`` (read first, as ``Lfm2Config``
    does) or ``tie_word_embeddings`` says not. Every linear layer is an ``nn.Linear``: PEFT's
    all-linear adapts them all."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    kinds = cfg.raw.get("layer_types")
    if kinds is not None:
        if not isinstance(kinds, list) or len(kinds) != layers \
                or not set(kinds) <= {"full_attention", "conv"}:
            raise ShapeError("layer_types", "layer_kinds", layers=layers,
                             kinds="full_attention, conv")
        attention = kinds.count("full_attention")
    elif cfg.raw.get("full_attn_idxs") is not None:
        attention = len(cfg.layer_list("full_attn_idxs", layers))
    else:
        attention = layers
    conv = layers - attention
    width = _lfm2_width(cfg)
    kernel = cfg.integer("conv_L_cache", default=3)
    conv_bias = cfg.flag("conv_bias", False)
    h = att.hidden
    linears = [
        LinearSpec("q_proj", "q", h, att.heads * att.head_dim, attention),
        LinearSpec("k_proj", "k", h, att.kv_heads * att.head_dim, attention),
        LinearSpec("v_proj", "v", h, att.kv_heads * att.head_dim, attention),
        LinearSpec("out_proj", "o", att.heads * att.head_dim, h, attention),
        LinearSpec("in_proj", "qkv", h, 3 * h, conv, bias=conv_bias),
        LinearSpec("out_proj", "attn_out", h, h, conv, bias=conv_bias),
    ]
    linears = [spec for spec in linears if spec.layers]
    linears += gated_mlp(h, width, layers)
    tied = cfg.flag("tie_embedding", cfg.flag("tie_word_embeddings", True))
    shape = assemble(
        cfg, model_type="lfm2", att=att, intermediate=width, layers=layers, linears=linears,
        norm_params=(2 * layers + 1) * h + 2 * attention * att.head_dim, norms_per_layer=2,
        qk_norm=True, tied=tied,
    )
    conv_weights = conv * (h * kernel + (h if conv_bias else 0))
    return replace(shape, split=replace(shape.split, other=shape.split.other + conv_weights))
