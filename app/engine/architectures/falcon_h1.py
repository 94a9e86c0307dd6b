"""Falcon-H1 (``falcon_h1``): a parallel hybrid, attention and a Mamba-2 mixer side by side in
every layer, then a SwiGLU MLP.

Mirrors transformers 5's ``modeling_falcon_h1`` (counted on the meta device by
``tools/newer_moe_counts.py``, transformers 5.24.0 and PEFT 0.21.2): every decoder layer holds
q/k/v/o (``attention_bias``), the Mamba-2 mixer (``in_proj`` hidden -> inner + conv + heads with
``mamba_proj_bias``, a depthwise convolution, ``dt_bias``/``A_log``/``D`` per head, a gated
RMSNorm over the inner width where ``mamba_rms_norm``, ``out_proj`` with ``projectors_bias``),
the MLP (``mlp_bias``) and two RMSNorms. The Mamba inner width is ``mamba_d_ssm`` (1024 in
``FalconH1Config``), or ``mamba_expand`` x hidden where it is null.

LoRA: PEFT 0.21 refuses ``target_modules="all-linear"`` on falcon_h1
(``_check_lora_target_modules_mamba``: it will not adapt a Mamba ``out_proj``); the engine's
"all-linear" is every other linear layer, the list a user has to give PEFT instead, as for
Nemotron-H (``LinearSpec.lora_target`` False on ``out_proj``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from app.engine.architectures.granite_hybrid import granite_mamba_dims, mamba_chunk
from app.engine.architectures.kit import (
    Config,
    assemble,
    attention_dims,
    gated_mlp,
    separate_attention,
)
from app.engine.shapes import LinearSpec, MixerLayers, ModelShape

FALCON_H1_D_SSM: Final = 1024
"""``FalconH1Config.mamba_d_ssm`` default: the Mamba inner width where a config names none."""


def falcon_h1_inner(cfg: Config) -> int | None:
    """``mamba_d_ssm``: its default where the config leaves it out, None (``mamba_expand`` x
    hidden) where the config sets it null."""
    if "mamba_d_ssm" in cfg.raw and cfg.raw["mamba_d_ssm"] is None:
        return None
    return cfg.integer("mamba_d_ssm", default=FALCON_H1_D_SSM)


def falcon_h1(cfg: Config) -> ModelShape:
    """Falcon-H1 (module docstring)."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    attention_bias = cfg.flag("attention_bias", False)
    linears = separate_attention(att, layers, qkv_bias=attention_bias, o_bias=attention_bias)
    heads, head_dim, inner, state, groups, kernel = granite_mamba_dims(
        cfg, att.hidden, falcon_h1_inner(cfg))
    conv_dim = inner + 2 * groups * state
    linears += [
        LinearSpec("in_proj", "qkv", att.hidden, inner + conv_dim + heads, layers,
                   bias=cfg.flag("mamba_proj_bias", False)),
        # PEFT refuses to adapt a Mamba model's out_proj (_check_lora_target_modules_mamba)
        LinearSpec("out_proj", "o", inner, att.hidden, layers,
                   bias=cfg.flag("projectors_bias", False), lora_target=False),
    ]
    linears += gated_mlp(att.hidden, intermediate, layers, bias=cfg.flag("mlp_bias", False))
    conv_bias = conv_dim if cfg.flag("mamba_conv_bias", True) else 0
    other = layers * (conv_dim * kernel + conv_bias + 3 * heads)
    norms = (2 * layers + 1) * att.hidden + (layers * inner if cfg.flag("mamba_rms_norm", False)
                                             else 0)
    shape = assemble(
        cfg, model_type="falcon_h1", att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=norms, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", False),
    )
    mixer = MixerLayers(
        "mamba2", layers, attention_layers=layers, mlp_layers=layers, key_dim=groups * state,
        expanded_key_dim=heads * state, value_dim=inner, heads=heads,
        state_per_head=head_dim * state, conv_dim=conv_dim, chunk_size=mamba_chunk(cfg),
        gated_norm=cfg.flag("mamba_rms_norm", False),
    )
    return replace(shape, split=replace(shape.split, other=shape.split.other + other),
                   mixer=mixer)
