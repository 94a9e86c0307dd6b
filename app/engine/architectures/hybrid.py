"""Builders of hybrid decoders: Qwen3-Next and Qwen3.5 (Gated DeltaNet linear attention beside
full attention) and Nemotron-H (Mamba-2 beside attention, MLP and MoE blocks).

Each mirrors the module tree of transformers 5 (``modeling_qwen3_next``, ``modeling_qwen3_5``,
``modeling_qwen3_5_moe``, ``modeling_nemotron_h``); fields a config leaves out take the config
class's default. Layer kinds come from the config's list (``layer_types``, Nemotron-H's
``hybrid_override_pattern``) or, for Qwen, from ``full_attention_interval`` (every fourth layer
full attention); they are counted once, never looped over per parameter.

Parameters that are neither linear layers nor norms (the depthwise convolution, ``A_log``,
``dt_bias``, Mamba's ``D``) are in ``split.other``: 16-bit under QLoRA, never adapted.

LoRA (``target_modules="all-linear"``, PEFT 0.21 on transformers 5): every ``nn.Linear`` but
lm_head. Qwen3-Next's experts are fused 3-D tensors that transformers' conversion table maps to
the Qwen2-MoE pattern, so PEFT adapts the router and the experts (gate_up at rank 2r, down at
r, per expert) and, because it renames ``gate_proj``/``up_proj``/``down_proj`` onto them, no
longer the shared expert; Qwen3.5-MoE and Nemotron-H have no such entry, so their router and
experts stay unadapted (``LinearSpec.lora_target``). On Nemotron-H PEFT refuses "all-linear"
outright, because it will not adapt a Mamba block's ``out_proj``; the engine's "all-linear"
there is every other linear layer, the list a user has to give PEFT instead. Measured:
``tools/model_counts.py``.
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
    gated_mlp,
    sparse_layer_count,
)
from app.engine.shapes import LinearSpec, MixerLayers, ModelShape, ShapeError

FULL_ATTENTION_INTERVAL: Final = 4
"""``Qwen3NextConfig``/``Qwen3_5TextConfig``: without ``layer_types`` every fourth layer is full
attention (``full_attention_interval``, default 4), the rest Gated DeltaNet."""
QWEN_LINEAR_DEFAULTS: Final = {
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32,
}
"""The Gated DeltaNet sizes' defaults in transformers' Qwen3-Next and Qwen3.5 config classes."""
QWEN_HEAD_DIM: Final = 256
"""``head_dim`` default of the Qwen3-Next and Qwen3.5 config classes."""

NEMOTRON_DEFAULTS: Final = {
    "head_dim": 128, "ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64,
    "n_groups": 8, "conv_kernel": 4, "num_key_value_heads": 8, "chunk_size": 128,
}
"""``NemotronHConfig`` defaults of the sizes a released config might leave out."""


def _qwen_layer_kinds(cfg: Config, layers: int) -> int:
    """How many layers are full attention; the others are Gated DeltaNet. Counted with
    ``list.count`` (no Python loop over the layers: ``tests/engine/test_config_bounds.py``)."""
    types = cfg.raw.get("layer_types")
    if types is None:
        interval = cfg.integer("full_attention_interval", default=FULL_ATTENTION_INTERVAL)
        return layers // interval
    if not isinstance(types, list) or len(types) != layers:
        raise ShapeError("layer_types", "layer_types_length", layers=layers)
    full = types.count("full_attention")
    if full + types.count("linear_attention") != layers:
        known = ("linear_attention", "full_attention")
        raise ShapeError("layer_types", "layer_type_unknown",
                         value=repr(next(t for t in types if t not in known)),
                         kinds=", ".join(known))
    return full


def _gated_delta_net(cfg: Config, hidden: int, layers: int, *, split_proj: bool
                     ) -> tuple[list[LinearSpec], int, int, MixerLayers]:
    """Gated DeltaNet layers: their linears, norm params and other params.

    Qwen3-Next fuses the input projections (``in_proj_qkvz``, ``in_proj_ba``); Qwen3.5 splits
    them (``in_proj_qkv``, ``in_proj_z``, ``in_proj_b``, ``in_proj_a``)."""
    values = {name: cfg.integer(name, default=default)
              for name, default in QWEN_LINEAR_DEFAULTS.items()}
    key_dim = values["linear_key_head_dim"] * values["linear_num_key_heads"]
    v_heads = values["linear_num_value_heads"]
    value_dim = values["linear_value_head_dim"] * v_heads
    conv_dim = 2 * key_dim + value_dim
    if split_proj:
        linears = [
            LinearSpec("in_proj_qkv", "qkv", hidden, conv_dim, layers),
            LinearSpec("in_proj_z", "qkv", hidden, value_dim, layers),
            LinearSpec("in_proj_b", "qkv", hidden, v_heads, layers),
            LinearSpec("in_proj_a", "qkv", hidden, v_heads, layers),
        ]
    else:
        linears = [
            LinearSpec("in_proj_qkvz", "qkv", hidden, conv_dim + value_dim, layers),
            LinearSpec("in_proj_ba", "qkv", hidden, 2 * v_heads, layers),
        ]
    linears.append(LinearSpec("out_proj", "o", value_dim, hidden, layers))
    norm = layers * values["linear_value_head_dim"]
    other = layers * (conv_dim * values["linear_conv_kernel_dim"] + 2 * v_heads)
    mixer = MixerLayers(
        "gated_deltanet", layers, attention_layers=0, mlp_layers=0, key_dim=key_dim,
        expanded_key_dim=v_heads * values["linear_key_head_dim"], value_dim=value_dim,
        heads=v_heads,
        state_per_head=values["linear_key_head_dim"] * values["linear_value_head_dim"],
        conv_dim=conv_dim,
    )
    return linears, norm, other, mixer


def _qwen_hybrid(cfg: Config, model_type: str, *, moe: bool, peft_fused: bool,
                 split_proj: bool) -> ModelShape:
    """Qwen3-Next / Qwen3.5 (dense or MoE) text model (module docstring)."""
    hidden = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    kv_heads = cfg.integer("num_key_value_heads")
    if heads % kv_heads:
        raise ShapeError("num_key_value_heads", "kv_heads_divide")
    att = Attention(hidden, heads, kv_heads, cfg.integer("head_dim", default=QWEN_HEAD_DIM))
    layers = cfg.integer("num_hidden_layers")
    full = _qwen_layer_kinds(cfg, layers)
    linear_layers = layers - full
    bias = cfg.flag("attention_bias", False)
    q_width = heads * att.head_dim
    kv_width = kv_heads * att.head_dim
    linears = [  # q_proj also produces the output gate: 2 x heads x head_dim
        LinearSpec("q_proj", "q", hidden, 2 * q_width, full, bias=bias),
        LinearSpec("k_proj", "k", hidden, kv_width, full, bias=bias),
        LinearSpec("v_proj", "v", hidden, kv_width, full, bias=bias),
        LinearSpec("o_proj", "o", q_width, hidden, full, bias=bias),
    ] if full else []
    delta, delta_norm, other, mixer = _gated_delta_net(cfg, hidden, linear_layers,
                                                       split_proj=split_proj)
    if linear_layers:
        linears += delta
    norms = (2 * layers + 1) * hidden + 2 * full * att.head_dim + delta_norm
    experts = active = moe_width = 0
    intermediate = cfg.integer("intermediate_size") if not moe or model_type == "qwen3_next" \
        else 0
    if moe:
        experts = cfg.integer("num_experts")
        active = experts_per_token(cfg, experts, "num_experts")
        moe_width = cfg.integer("moe_intermediate_size")
        shared = cfg.integer("shared_expert_intermediate_size")
        sparse = layers  # Qwen3.5-MoE: every layer sparse (no mlp_only_layers, no step)
        if model_type == "qwen3_next":
            step = cfg.integer("decoder_sparse_step", default=1)
            sparse = sparse_layer_count(layers, step, cfg.layer_list("mlp_only_layers", layers))
        dense = layers - sparse
        if sparse:
            linears += _moe_block(hidden, experts, active, moe_width, shared, sparse,
                                  peft_fused=peft_fused)
        if dense:
            linears += gated_mlp(hidden, intermediate, dense)
            if peft_fused:  # PEFT moved gate_proj/up_proj/down_proj onto the fused experts
                linears[-3:] = [_unadapted(s) for s in linears[-3:]]
    else:
        linears += gated_mlp(hidden, intermediate, layers)
    shape = assemble(
        cfg, model_type=model_type, att=att, intermediate=intermediate or moe_width,
        layers=layers, linears=linears, norm_params=norms, norms_per_layer=2, qk_norm=True,
        tied=cfg.flag("tie_word_embeddings", False), num_experts=experts,
        experts_per_token=active, moe_intermediate=moe_width,
    )
    mixer = replace(mixer, attention_layers=full, mlp_layers=layers)
    return replace(_with_other(shape, other), mixer=mixer if linear_layers else None)


def _unadapted(spec: LinearSpec) -> LinearSpec:
    return replace(spec, lora_target=False)


def _moe_block(hidden: int, experts: int, active: int, width: int, shared: int, layers: int,
               *, peft_fused: bool) -> list[LinearSpec]:
    """Router, fused experts, a shared SwiGLU expert and its sigmoid gate (Qwen3-Next, 3.5)."""
    routed = [
        LinearSpec("gate", "router", hidden, experts, layers, lora_target=peft_fused,
                   packed_4bit=False),
        LinearSpec("gate_up_proj", "gate_up", hidden, 2 * width, layers, experts, active,
                   lora_target=peft_fused, lora_rank_factor=2, packed_4bit=False),
        LinearSpec("down_proj", "down", width, hidden, layers, experts, active,
                   lora_target=peft_fused, packed_4bit=False),
    ]
    shared_mlp = [
        LinearSpec("shared_expert.gate_proj", "gate", hidden, shared, layers,
                   lora_target=not peft_fused),
        LinearSpec("shared_expert.up_proj", "up", hidden, shared, layers,
                   lora_target=not peft_fused),
        LinearSpec("shared_expert.down_proj", "down", shared, hidden, layers,
                   lora_target=not peft_fused),
        LinearSpec("shared_expert_gate", "router", hidden, 1, layers),
    ]
    return routed + shared_mlp


def _with_other(shape: ModelShape, other: int) -> ModelShape:
    return replace(shape, split=replace(shape.split, other=shape.split.other + other))


def qwen3_next(cfg: Config) -> ModelShape:
    return _qwen_hybrid(cfg, "qwen3_next", moe=True, peft_fused=True, split_proj=False)


def qwen3_5_text(cfg: Config) -> ModelShape:
    return _qwen_hybrid(cfg, "qwen3_5", moe=False, peft_fused=False, split_proj=True)


def qwen3_5_moe_text(cfg: Config) -> ModelShape:
    return _qwen_hybrid(cfg, "qwen3_5_moe", moe=True, peft_fused=False, split_proj=True)


def _nemotron_blocks(cfg: Config) -> dict[str, int]:
    """How many blocks of each kind, from ``hybrid_override_pattern`` or ``layers_block_type``
    (``str.count``/``list.count``: no Python loop over the layers)."""
    pattern = cfg.raw.get("hybrid_override_pattern")
    blocks = cfg.raw.get("layers_block_type", cfg.raw.get("layer_types"))
    items: str | list[object]
    names: dict[str, tuple[str, ...]]
    if blocks is None and isinstance(pattern, str):
        field, items = "hybrid_override_pattern", pattern
        names = {"mamba": ("M",), "attention": ("*",), "mlp": ("-",), "moe": ("E",)}
    elif isinstance(blocks, list):
        field, items = "layers_block_type", blocks
        names = {"mamba": ("mamba", "linear_attention"), "attention": ("attention",
                 "full_attention"), "mlp": ("mlp",), "moe": ("moe",)}
    else:
        raise ShapeError("hybrid_override_pattern", "config_missing")
    if not 0 < len(items) <= MAX_LAYERS:
        raise ShapeError(field, "layer_list_length", layers=MAX_LAYERS)
    count = {kind: sum(items.count(n) for n in spelled) for kind, spelled in names.items()}
    if sum(count.values()) != len(items):
        known = [n for spelled in names.values() for n in spelled]
        raise ShapeError(field, "layer_type_unknown",
                         value=repr(next(i for i in items if i not in known)),
                         kinds=", ".join(known))
    return count


def nemotron_h(cfg: Config) -> ModelShape:
    """Nemotron-H: a stack of blocks, each one RMSNorm and one mixer: Mamba-2 (``M``), attention
    (``*``), a squared-ReLU MLP (``-``) or a mixture of non-gated experts (``E``)."""
    count = _nemotron_blocks(cfg)
    layers = sum(count.values())
    hidden = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    kv_heads = cfg.integer("num_key_value_heads", default=NEMOTRON_DEFAULTS["num_key_value_heads"])
    if heads % kv_heads:
        raise ShapeError("num_key_value_heads", "kv_heads_divide")
    att = Attention(hidden, heads, kv_heads,
                     cfg.integer("head_dim", default=NEMOTRON_DEFAULTS["head_dim"]))
    linears: list[LinearSpec] = []
    other = 0
    norms = (layers + 1) * hidden
    if count["attention"]:
        n = count["attention"]
        linears += [
            LinearSpec("q_proj", "q", hidden, heads * att.head_dim, n),
            LinearSpec("k_proj", "k", hidden, kv_heads * att.head_dim, n),
            LinearSpec("v_proj", "v", hidden, kv_heads * att.head_dim, n),
            LinearSpec("o_proj", "o", heads * att.head_dim, hidden, n),
        ]
    mixer = None
    if count["mamba"]:
        mamba, other, mamba_norms, mixer = _nemotron_mamba(cfg, hidden, count)
        linears += mamba
        norms += mamba_norms
    mlp_bias = cfg.flag("mlp_bias", False)
    intermediate = 0
    if count["mlp"]:
        intermediate = cfg.integer("intermediate_size")
        linears += [
            LinearSpec("up_proj", "fc", hidden, intermediate, count["mlp"], bias=mlp_bias),
            LinearSpec("down_proj", "fc_out", intermediate, hidden, count["mlp"], bias=mlp_bias),
        ]
    experts = active = width = 0
    if count["moe"]:
        moe, experts, active, width = _nemotron_moe(cfg, hidden, count["moe"], mlp_bias)
        linears += moe
    shape = assemble(
        cfg, model_type="nemotron_h", att=att, intermediate=intermediate or width,
        layers=layers, linears=linears, norm_params=norms, norms_per_layer=1,
        tied=cfg.flag("tie_word_embeddings", False), num_experts=experts,
        experts_per_token=active, moe_intermediate=width, gated_mlp=False,
    )
    return replace(_with_other(shape, other), mixer=mixer)


def _nemotron_mamba(cfg: Config, hidden: int, count: dict[str, int]
                    ) -> tuple[list[LinearSpec], int, int, MixerLayers]:
    """Nemotron-H's Mamba-2 blocks: their linear layers, other parameters (the depthwise
    convolution, ``A_log``, ``dt_bias``, ``D``), norm parameters and mixer widths."""
    n = count["mamba"]
    m_heads = cfg.integer("mamba_num_heads", default=NEMOTRON_DEFAULTS["mamba_num_heads"])
    inner = m_heads * cfg.integer("mamba_head_dim", default=NEMOTRON_DEFAULTS["mamba_head_dim"])
    state = cfg.integer("ssm_state_size", default=NEMOTRON_DEFAULTS["ssm_state_size"])
    groups = cfg.integer("n_groups", default=NEMOTRON_DEFAULTS["n_groups"])
    kernel = cfg.integer("conv_kernel", default=NEMOTRON_DEFAULTS["conv_kernel"])
    conv_dim = inner + 2 * groups * state
    bias = cfg.flag("use_bias", False)
    linears = [
        LinearSpec("in_proj", "qkv", hidden, inner + conv_dim + m_heads, n, bias=bias),
        # PEFT refuses to adapt a Mamba model's out_proj (_check_lora_target_modules_mamba)
        LinearSpec("out_proj", "o", inner, hidden, n, bias=bias, lora_target=False),
    ]
    conv_bias = conv_dim if cfg.flag("use_conv_bias", True) else 0
    other = n * (conv_dim * kernel + conv_bias + 3 * m_heads)
    mixer = MixerLayers(
        "mamba2", n, attention_layers=count["attention"],
        mlp_layers=count["mlp"] + count["moe"], key_dim=groups * state,
        expanded_key_dim=m_heads * state, value_dim=inner, heads=m_heads,
        state_per_head=inner // m_heads * state, conv_dim=conv_dim,
        chunk_size=cfg.integer("chunk_size", default=NEMOTRON_DEFAULTS["chunk_size"]),
    )
    return linears, other, n * inner, mixer


def _nemotron_moe(cfg: Config, hidden: int, n: int, mlp_bias: bool
                  ) -> tuple[list[LinearSpec], int, int, int]:
    """Nemotron-H's MoE blocks: router, non-gated experts (through a latent width where the
    config names one), the shared expert; with the experts, active experts and their width."""
    experts = cfg.integer("n_routed_experts", "num_local_experts")
    active = experts_per_token(cfg, experts, "n_routed_experts")
    width = cfg.integer("moe_intermediate_size")
    shared = cfg.integer("moe_shared_expert_intermediate_size")
    latent = cfg.optional_int("moe_latent_size")
    expert_in = latent or hidden
    linears = [
        LinearSpec("gate", "router", hidden, experts, n, lora_target=False,
                   packed_4bit=False),
        LinearSpec("experts.up_proj", "fc", expert_in, width, n, experts, active,
                   lora_target=False, packed_4bit=False),
        LinearSpec("experts.down_proj", "fc_out", width, expert_in, n, experts, active,
                   lora_target=False, packed_4bit=False),
        LinearSpec("shared_experts.up_proj", "fc", hidden, shared, n, bias=mlp_bias),
        LinearSpec("shared_experts.down_proj", "fc_out", shared, hidden, n, bias=mlp_bias),
    ]
    if latent:
        linears += [
            LinearSpec("fc1_latent_proj", "fc", hidden, latent, n, bias=mlp_bias),
            LinearSpec("fc2_latent_proj", "fc_out", latent, hidden, n, bias=mlp_bias),
        ]
    return linears, experts, active, width
