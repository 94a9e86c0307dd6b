"""Granite 4.0 hybrids (``granitemoehybrid``): Mamba-2 and attention layers, each followed by a
shared SwiGLU MLP and, where the config names experts, a mixture of experts beside it.

Mirrors transformers 5's ``modeling_granitemoehybrid`` (counted on the meta device by
``tools/newer_moe_counts.py``, transformers 5.24.0 and PEFT 0.21.2): every decoder layer holds
two RMSNorms, either a Mamba-2 mixer (``in_proj`` hidden -> inner + conv + heads, a depthwise
convolution, ``dt_bias``/``A_log``/``D`` per head, a gated RMSNorm over the inner width,
``out_proj``) or q/k/v/o attention (``attention_bias`` on all four), then ``shared_mlp``
(``input_linear`` hidden -> 2 x ``shared_intermediate_size``, ``output_linear`` back) and, when
``num_local_experts`` > 0, ``block_sparse_moe``: a router held as a parameter and the fused
expert tensors ``gate_up_proj``/``down_proj`` of width ``intermediate_size``. With no experts
(Granite 4.0 H-Micro, H-1B) the shared MLP is the layer's whole MLP.

Layer kinds: ``layer_types`` (``mamba``/``linear_attention`` or ``attention``/
``full_attention``; transformers maps the first spellings onto the second), every layer Mamba-2
where the config lists none (``GraniteMoeHybridConfig``'s default).

LoRA ``all-linear`` (PEFT 0.21): PEFT does not treat ``granitemoehybrid`` as a Mamba model
(its ``_check_lora_target_modules_mamba`` list is falcon_h1, mamba, mamba2, falcon_mamba and
nemotron_h), so ``in_proj`` and ``out_proj`` are adapted; its conversion table has no pattern
for the type's experts (transformers maps it to ``granitemoe``, which PEFT's table lacks), so
the router and the expert tensors stay unadapted: ``LinearSpec.lora_target`` False, adapted
under the per-expert convention only.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from app.engine.architectures.kit import (
    MAX_LAYERS,
    Attention,
    Config,
    assemble,
    experts_per_token,
    fused_experts,
    separate_attention,
)
from app.engine.shapes import LinearSpec, MixerLayers, ModelShape, ShapeError

GRANITE_HYBRID_DEFAULTS: Final = {
    "mamba_n_heads": 128, "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4,
    "mamba_expand": 2, "num_local_experts": 8, "num_experts_per_tok": 2,
    "shared_intermediate_size": 1024, "intermediate_size": 11008, "mamba_chunk_size": 256,
}
"""``GraniteMoeHybridConfig`` defaults (transformers 5.24) of the sizes a config may leave out;
``mamba_d_head`` "auto" there is the inner width over the heads."""

MAMBA_KINDS: Final = ("mamba", "linear_attention")
ATTENTION_KINDS: Final = ("attention", "full_attention")


def granite_layer_kinds(raw: object, layers: int) -> tuple[int, int]:
    """How many Mamba-2 and how many attention layers (``list.count``: no loop per layer)."""
    if raw is None:
        return layers, 0
    if not isinstance(raw, list) or len(raw) != layers or layers > MAX_LAYERS:
        raise ShapeError("layer_types", "layer_list_length", layers=layers)
    mamba = sum(raw.count(kind) for kind in MAMBA_KINDS)
    attention = sum(raw.count(kind) for kind in ATTENTION_KINDS)
    if mamba + attention != layers:
        raise ShapeError("layer_types", "layer_type_unknown",
                         value=repr(next(k for k in raw if k not in MAMBA_KINDS + ATTENTION_KINDS)),
                         kinds=", ".join(MAMBA_KINDS + ATTENTION_KINDS))
    return mamba, attention


def granite_mamba_dims(cfg: Config, hidden: int, inner: int | None = None
                       ) -> tuple[int, int, int, int, int, int]:
    """Heads, head width, inner width, state size, groups and kernel of the Mamba-2 mixer, as
    Granite 4.0 and Falcon-H1 name them (their config classes share these defaults); the inner
    width ``mamba_expand`` x hidden unless the caller reads another (Falcon-H1's
    ``mamba_d_ssm``)."""
    heads = cfg.integer("mamba_n_heads", default=GRANITE_HYBRID_DEFAULTS["mamba_n_heads"])
    if inner is None:
        expand = cfg.integer("mamba_expand", default=GRANITE_HYBRID_DEFAULTS["mamba_expand"])
        inner = expand * hidden
    head_dim_raw = cfg.raw.get("mamba_d_head")
    if head_dim_raw is None or head_dim_raw == "auto":
        if inner % heads:
            raise ShapeError("mamba_n_heads", "head_dim_indivisible")
        head_dim = inner // heads
    else:
        head_dim = cfg.integer("mamba_d_head")
    if head_dim * heads != inner:
        raise ShapeError("mamba_d_head", "head_dim_indivisible")
    state = cfg.integer("mamba_d_state", default=GRANITE_HYBRID_DEFAULTS["mamba_d_state"])
    groups = cfg.integer("mamba_n_groups", default=GRANITE_HYBRID_DEFAULTS["mamba_n_groups"])
    kernel = cfg.integer("mamba_d_conv", default=GRANITE_HYBRID_DEFAULTS["mamba_d_conv"])
    return heads, head_dim, inner, state, groups, kernel


def mamba_chunk(cfg: Config) -> int:
    """``mamba_chunk_size``: the Mamba-2 chunk length Granite 4.0 and Falcon-H1 name (256 in
    both config classes, transformers 5.25)."""
    return cfg.integer("mamba_chunk_size", default=GRANITE_HYBRID_DEFAULTS["mamba_chunk_size"])


def granite_attention(cfg: Config, hidden: int) -> Attention:
    """The attention layers' heads: ``head_dim`` when the config gives one, else hidden / heads."""
    heads = cfg.integer("num_attention_heads")
    kv_heads = cfg.integer("num_key_value_heads", default=heads)
    if heads % kv_heads:
        raise ShapeError("num_key_value_heads", "kv_heads_divide")
    head_dim = cfg.optional_int("head_dim")
    if head_dim is None:
        if hidden % heads:
            raise ShapeError("head_dim", "head_dim_indivisible")
        head_dim = hidden // heads
    return Attention(hidden, heads, kv_heads, head_dim)


def granitemoehybrid(cfg: Config) -> ModelShape:
    """Granite 4.0 H (module docstring)."""
    layers = cfg.integer("num_hidden_layers")
    hidden = cfg.integer("hidden_size")
    att = granite_attention(cfg, hidden)
    mamba, attention = granite_layer_kinds(cfg.raw.get("layer_types"), layers)
    attention_bias = cfg.flag("attention_bias", False)
    linears = separate_attention(att, attention, qkv_bias=attention_bias, o_bias=attention_bias) \
        if attention else []
    norms = (2 * layers + 1) * hidden
    other = 0
    mixer = None
    if mamba:
        m_heads, m_head_dim, inner, state, groups, kernel = granite_mamba_dims(cfg, hidden)
        conv_dim = inner + 2 * groups * state
        bias = cfg.flag("mamba_proj_bias", False)
        linears += [
            LinearSpec("in_proj", "qkv", hidden, inner + conv_dim + m_heads, mamba, bias=bias),
            LinearSpec("out_proj", "o", inner, hidden, mamba, bias=bias),
        ]
        conv_bias = conv_dim if cfg.flag("mamba_conv_bias", True) else 0
        other = mamba * (conv_dim * kernel + conv_bias + 3 * m_heads)
        norms += mamba * inner
        mixer = MixerLayers(
            "mamba2", mamba, attention_layers=attention, mlp_layers=layers,
            key_dim=groups * state, expanded_key_dim=m_heads * state, value_dim=inner,
            heads=m_heads, state_per_head=m_head_dim * state, conv_dim=conv_dim,
            chunk_size=mamba_chunk(cfg),
        )
    shared = cfg.integer("shared_intermediate_size",
                         default=GRANITE_HYBRID_DEFAULTS["shared_intermediate_size"])
    linears += [
        LinearSpec("input_linear", "gate_up", hidden, 2 * shared, layers),
        LinearSpec("output_linear", "down", shared, hidden, layers),
    ]
    experts = GRANITE_HYBRID_DEFAULTS["num_local_experts"] \
        if cfg.raw.get("num_local_experts") is None else cfg.count("num_local_experts")
    active = width = 0
    if experts:  # 0: the dense hybrid, its shared MLP alone
        active = GRANITE_HYBRID_DEFAULTS["num_experts_per_tok"] \
            if cfg.raw.get("num_experts_per_tok") is None \
            else experts_per_token(cfg, experts, "num_local_experts")
        width = cfg.integer("intermediate_size",
                            default=GRANITE_HYBRID_DEFAULTS["intermediate_size"])
        linears += fused_experts(hidden, width, layers, experts, active, peft_fused=False,
                                 router_target=False)
    shape = assemble(
        cfg, model_type="granitemoehybrid", att=att, intermediate=width or shared,
        layers=layers, linears=linears, norm_params=norms, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", False), num_experts=experts,
        experts_per_token=active, moe_intermediate=width,
    )
    return replace(shape, split=replace(shape.split, other=shape.split.other + other),
                   mixer=mixer)
