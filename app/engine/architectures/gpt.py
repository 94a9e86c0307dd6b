"""The GPT-2 lineage: GPT-2 (Conv1D projections, learned positions), Falcon and GPT-NeoX
(Pythia): LayerNorms with biases and plain GELU MLPs, as ``modeling_gpt2``,
``modeling_falcon`` and ``modeling_gpt_neox`` of transformers 5 build them; fields left out
take the config class's default.
"""

from __future__ import annotations

from typing import Final

from app.engine.architectures.kit import Attention, Config, assemble
from app.engine.shapes import LinearSpec, ModelShape, ShapeError

FALCON_FFN_FACTOR: Final = 4
"""``FalconConfig.ffn_hidden_size`` defaults to 4 x hidden."""


NEOX_FFN_FACTOR: Final = 4
"""Pythia and GPT-NeoX-20B: intermediate = 4 x hidden (``GPTNeoXConfig`` default 24576)."""


def falcon(cfg: Config) -> ModelShape:
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
    att = Attention(hidden, heads, kv_heads, head_dim)
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
    return assemble(
        cfg, model_type="falcon", att=att, intermediate=ffn, layers=layers, linears=linears,
        norm_params=(norms_per_layer * layers + 1) * 2 * hidden, norms_per_layer=norms_per_layer,
        tied=cfg.flag("tie_word_embeddings", True), gated_mlp=False,
    )


def gpt_neox(cfg: Config) -> ModelShape:
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
    att = Attention(hidden, heads, heads, hidden // heads)
    linears = [
        LinearSpec("query_key_value", "qkv", hidden, 3 * hidden, layers, bias=bias),
        LinearSpec("dense", "attn_out", hidden, hidden, layers, bias=bias),
        LinearSpec("dense_h_to_4h", "fc", hidden, intermediate, layers, bias=True),
        LinearSpec("dense_4h_to_h", "fc_out", intermediate, hidden, layers, bias=True),
    ]
    return assemble(
        cfg, model_type="gpt_neox", att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=(2 * layers + 1) * 2 * hidden, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", False), gated_mlp=False,
    )


def gpt2(cfg: Config) -> ModelShape:
    """GPT-2: Conv1D projections with biases, LayerNorm (weight and bias), learned positions,
    a plain GELU MLP of width ``n_inner`` (4 x hidden by default), lm_head tied."""
    hidden = cfg.integer("n_embd", "hidden_size")
    heads = cfg.integer("n_head", "num_attention_heads")
    layers = cfg.integer("n_layer", "num_hidden_layers")
    positions = cfg.integer("n_positions", "max_position_embeddings")
    inner = cfg.integer("n_inner", default=4 * hidden)
    if hidden % heads:
        raise ShapeError("n_head", "heads_divide_embd")
    att = Attention(hidden, heads, heads, hidden // heads)
    linears = [
        LinearSpec("c_attn", "qkv", hidden, 3 * hidden, layers, bias=True),
        LinearSpec("c_proj", "attn_out", hidden, hidden, layers, bias=True),
        LinearSpec("c_fc", "fc", hidden, inner, layers, bias=True),
        LinearSpec("c_proj", "fc_out", inner, hidden, layers, bias=True),
    ]
    return assemble(
        cfg, model_type="gpt2", att=att, intermediate=inner, layers=layers, linears=linears,
        norm_params=(2 * layers + 1) * 2 * hidden, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", True), extra_embedding=positions * hidden,
        gated_mlp=False, max_positions=positions,
    )
