"""Phi (1, 1.5, 2: attention and MLP side by side, biases everywhere, an lm_head bias) and
Phi-3 / Phi-4 (fused ``qkv_proj`` and ``gate_up_proj``), as ``modeling_phi`` and
``modeling_phi3`` of transformers 5 build them.
"""

from __future__ import annotations

from dataclasses import replace

from app.engine.architectures.kit import Config, assemble, attention_dims
from app.engine.shapes import LinearSpec, ModelShape


def phi(cfg: Config) -> ModelShape:
    """Phi 1, 1.5 and 2: attention and MLP side by side after one LayerNorm per layer; q/k/v and
    ``dense`` with biases, a plain GELU MLP (fc1, fc2) with biases, lm_head with a bias;
    optional LayerNorms on q and k per head (``qk_layernorm``)."""
    att = attention_dims(cfg)
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
    shape = assemble(
        cfg, model_type="phi", att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=norms, norms_per_layer=1, qk_norm=qk_norm,
        tied=cfg.flag("tie_word_embeddings", False), gated_mlp=False,
    )
    return _with_lm_head_bias(shape)


def _with_lm_head_bias(shape: ModelShape) -> ModelShape:
    """Phi's lm_head carries a bias (``nn.Linear(hidden, vocab, bias=True)``): vocabulary-many
    parameters in ``other``."""

    split = replace(shape.split, other=shape.split.other + shape.vocab_size)
    return replace(shape, split=split)


def phi3(cfg: Config) -> ModelShape:
    """Phi-3 / Phi-4: fused ``qkv_proj`` and ``gate_up_proj``, no biases."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    q_width = att.heads * att.head_dim
    qkv_out = q_width + 2 * att.kv_heads * att.head_dim
    linears = [
        LinearSpec("qkv_proj", "qkv", att.hidden, qkv_out, layers),
        LinearSpec("o_proj", "o", q_width, att.hidden, layers),
        LinearSpec("gate_up_proj", "gate_up", att.hidden, 2 * intermediate, layers),
        LinearSpec("down_proj", "down", intermediate, att.hidden, layers),
    ]
    return assemble(
        cfg, model_type="phi3", att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=(2 * layers + 1) * att.hidden, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", False),
    )
