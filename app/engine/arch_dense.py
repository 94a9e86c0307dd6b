"""Builders of the older and plainer dense decoders: OLMo 2, Gemma (1), Phi (1, 1.5, 2), Falcon,
GPT-NeoX (Pythia), SmolLM3 and LFM2.

Each mirrors the module tree transformers 5 builds for its ``model_type`` (``modeling_olmo2``,
``modeling_gemma``, ``modeling_phi``, ``modeling_falcon``, ``modeling_gpt_neox``), and a field
the config leaves out takes the default of that model's config class (``Olmo2Config``,
``GemmaConfig``, ...), as ``AutoConfig`` would; the totals are held to transformers on the meta
device by ``tests/engine/test_hf_configs.py`` (``tools/model_counts.py``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from app.engine.shapes import (
    LinearSpec,
    ModelShape,
    ShapeError,
    _assemble,
    _Attention,
    _attention_dims,
    _bounded,
    _Config,
    _dense_swiglu,
    _gated_mlp,
    _llama_biases,
    _separate_attention,
)

# Config-class defaults where a released config may leave the field out (transformers 5.24).
GEMMA_HEAD_DIM: Final = 256
"""``GemmaConfig.head_dim``: 256 for every Gemma, even where hidden / heads differs (7B: 192)."""
GEMMA_KV_HEADS: Final = 16
"""``GemmaConfig.num_key_value_heads``: 16 (Gemma 7B's multi-head attention)."""
FALCON_FFN_FACTOR: Final = 4
"""``FalconConfig.ffn_hidden_size`` defaults to 4 x hidden."""
NEOX_FFN_FACTOR: Final = 4
"""Pythia and GPT-NeoX-20B: intermediate = 4 x hidden (``GPTNeoXConfig`` default 24576)."""


def olmo2(cfg: _Config) -> ModelShape:
    """OLMo 2: Llama's linears without biases (``attention_bias`` on q/k/v/o); norms after the
    attention and the MLP (two per layer) and RMSNorms on the full q and k widths."""
    att = _attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    bias = cfg.flag("attention_bias", False)
    linears = _separate_attention(att, layers, qkv_bias=bias, o_bias=bias)
    linears += _gated_mlp(att.hidden, intermediate, layers)
    qk_norm = layers * (att.heads + att.kv_heads) * att.head_dim
    return _assemble(
        cfg, model_type="olmo2", att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=(2 * layers + 1) * att.hidden + qk_norm, norms_per_layer=2,
        qk_norm=True, tied=cfg.flag("tie_word_embeddings", False),
    )


def gemma(cfg: _Config) -> ModelShape:
    """Gemma 1: two RMSNorms per layer, GeGLU MLP, head_dim 256 and embeddings tied by default."""
    hidden = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    kv_heads = cfg.integer("num_key_value_heads", default=GEMMA_KV_HEADS)
    if heads % kv_heads:
        raise ShapeError("num_key_value_heads", "kv_heads_divide")
    att = _Attention(hidden, heads, kv_heads, cfg.integer("head_dim", default=GEMMA_HEAD_DIM))
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    bias = cfg.flag("attention_bias", False)
    linears = _separate_attention(att, layers, qkv_bias=bias, o_bias=bias)
    linears += _gated_mlp(hidden, intermediate, layers)
    return _assemble(
        cfg, model_type="gemma", att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=(2 * layers + 1) * hidden, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", True), mask_kinds=1,
    )


def phi(cfg: _Config) -> ModelShape:
    """Phi 1, 1.5 and 2: attention and MLP side by side after one LayerNorm per layer; q/k/v and
    ``dense`` with biases, a plain GELU MLP (fc1, fc2) with biases, lm_head with a bias;
    optional LayerNorms on q and k per head (``qk_layernorm``)."""
    att = _attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    q_width = att.heads * att.head_dim
    kv_width = att.kv_heads * att.head_dim
    linears = [
        LinearSpec("q_proj", "q", att.hidden, q_width, layers, bias=True),
        LinearSpec("k_proj", "k", att.hidden, kv_width, layers, bias=True),
        LinearSpec("v_proj", "v", att.hidden, kv_width, layers, bias=True),
        LinearSpec("dense", "o", q_width, att.hidden, layers, bias=True),
        LinearSpec("fc1", "fc", att.hidden, intermediate, layers, bias=True),
        LinearSpec("fc2", "fc_out", intermediate, att.hidden, layers, bias=True),
    ]
    qk_norm = cfg.flag("qk_layernorm", False)
    norms = (layers + 1) * 2 * att.hidden
    if qk_norm:
        norms += layers * 2 * 2 * (att.hidden // att.heads)
    shape = _assemble(
        cfg, model_type="phi", att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=norms, norms_per_layer=1, qk_norm=qk_norm,
        tied=cfg.flag("tie_word_embeddings", False), gated_mlp=False,
    )
    return _with_lm_head_bias(shape)


def _with_lm_head_bias(shape: ModelShape) -> ModelShape:
    """Phi's lm_head carries a bias (``nn.Linear(hidden, vocab, bias=True)``): vocabulary-many
    parameters in ``other``."""
    from dataclasses import replace

    split = replace(shape.split, other=shape.split.other + shape.vocab_size)
    return replace(shape, split=split)


def falcon(cfg: _Config) -> ModelShape:
    """Falcon: fused ``query_key_value``; the original layout shares one key/value head
    (``multi_query``), the new decoder architecture (40B, 180B, 11B) has ``num_kv_heads``;
    a plain GELU MLP of ``ffn_hidden_size`` (4 x hidden); LayerNorms with bias: two per layer
    unless attention and MLP run in parallel after one (``parallel_attn``; the new
    architecture uses two there unless ``num_ln_in_parallel_attn`` is 1); lm_head tied."""
    hidden = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    layers = cfg.integer("num_hidden_layers")
    if hidden % heads:
        raise ShapeError("head_dim", "head_dim_indivisible")
    head_dim = hidden // heads
    new_arch = cfg.flag("new_decoder_architecture", False)
    multi_query = cfg.flag("multi_query", True)
    kv_config = cfg.integer("num_kv_heads", default=heads)
    kv_heads = kv_config if new_arch or not multi_query else 1
    if heads % kv_heads:
        raise ShapeError("num_kv_heads", "kv_heads_divide")
    ffn = cfg.integer("ffn_hidden_size", default=FALCON_FFN_FACTOR * hidden)
    bias = cfg.flag("bias", False)
    att = _Attention(hidden, heads, kv_heads, head_dim)
    qkv_out = (heads + 2 * kv_heads) * head_dim if new_arch else (
        hidden + 2 * head_dim if multi_query else 3 * hidden
    )
    linears = [
        LinearSpec("query_key_value", "qkv", hidden, qkv_out, layers, bias=bias),
        LinearSpec("dense", "attn_out", hidden, hidden, layers, bias=bias),
        LinearSpec("dense_h_to_4h", "fc", hidden, ffn, layers, bias=bias),
        LinearSpec("dense_4h_to_h", "fc_out", ffn, hidden, layers, bias=bias),
    ]
    parallel = cfg.flag("parallel_attn", True)
    ln_in_parallel = cfg.integer("num_ln_in_parallel_attn", default=2 if new_arch else 1)
    norms_per_layer = 2 if not parallel or ln_in_parallel == 2 else 1
    return _assemble(
        cfg, model_type="falcon", att=att, intermediate=ffn, layers=layers, linears=linears,
        norm_params=(norms_per_layer * layers + 1) * 2 * hidden, norms_per_layer=norms_per_layer,
        tied=cfg.flag("tie_word_embeddings", True), gated_mlp=False,
    )


def gpt_neox(cfg: _Config) -> ModelShape:
    """GPT-NeoX and Pythia: fused ``query_key_value`` and ``dense`` (biases: ``attention_bias``,
    default on), a plain GELU MLP with biases, two LayerNorms per layer with bias, separate
    embed_in and lm_head."""
    hidden = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    layers = cfg.integer("num_hidden_layers")
    if hidden % heads:
        raise ShapeError("head_dim", "head_dim_indivisible")
    intermediate = cfg.integer("intermediate_size", default=NEOX_FFN_FACTOR * hidden)
    bias = cfg.flag("attention_bias", True)
    att = _Attention(hidden, heads, heads, hidden // heads)
    linears = [
        LinearSpec("query_key_value", "qkv", hidden, 3 * hidden, layers, bias=bias),
        LinearSpec("dense", "attn_out", hidden, hidden, layers, bias=bias),
        LinearSpec("dense_h_to_4h", "fc", hidden, intermediate, layers, bias=True),
        LinearSpec("dense_4h_to_h", "fc_out", intermediate, hidden, layers, bias=True),
    ]
    return _assemble(
        cfg, model_type="gpt_neox", att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=(2 * layers + 1) * 2 * hidden, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", False), gated_mlp=False,
    )


def smollm3(cfg: _Config) -> ModelShape:
    """SmolLM3 (``modeling_smollm3``, transformers 5.25): the Llama layout (``attention_bias``,
    ``mlp_bias`` as Llama reads them); its NoPE layers (``no_rope_layers``) change no parameter.
    ``SmolLM3Config.tie_word_embeddings`` defaults to True: a config that leaves it out ties."""
    return _dense_swiglu(cfg, "smollm3", biases=_llama_biases, tied_default=True)


LFM2_FF_DIM: Final = 12_288
"""``Lfm2Config.intermediate_size`` default (``block_ff_dim`` in the releases)."""
LFM2_MULTIPLE_OF: Final = 256
"""``Lfm2Config.block_multiple_of`` default."""
MAX_FF_MULTIPLIER: Final = 64.0
"""Largest ``block_ffn_dim_multiplier`` read (released: 1.0)."""


def _lfm2_width(cfg: _Config) -> int:
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
    return _bounded("intermediate_size", multiple * ((width + multiple - 1) // multiple))


def lfm2(cfg: _Config) -> ModelShape:
    """LiquidAI LFM2 (``modeling_lfm2``, transformers 5.25): ``layer_types`` (or the release's
    ``full_attn_idxs``; neither: every layer attention) are grouped-query attention with
    per-head q/k RMSNorms, or a short convolution (``in_proj`` to three times the width, a
    depthwise ``conv_L_cache`` kernel, ``out_proj``; ``conv_bias`` on all three); every layer a
    SwiGLU MLP (:func:`_lfm2_width`); the embedding output normed (``embedding_norm``, the only
    final norm). Ties its embeddings unless ``tie_embedding`` (read first, as ``Lfm2Config``
    does) or ``tie_word_embeddings`` says not. Every linear layer is an ``nn.Linear``: PEFT's
    all-linear adapts them all."""
    att = _attention_dims(cfg)
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
    linears += _gated_mlp(h, width, layers)
    tied = cfg.flag("tie_embedding", cfg.flag("tie_word_embeddings", True))
    shape = _assemble(
        cfg, model_type="lfm2", att=att, intermediate=width, layers=layers, linears=linears,
        norm_params=(2 * layers + 1) * h + 2 * attention * att.head_dim, norms_per_layer=2,
        qk_norm=True, tied=tied,
    )
    conv_weights = conv * (h * kernel + (h if conv_bias else 0))
    return replace(shape, split=replace(shape.split, other=shape.split.other + conv_weights))
