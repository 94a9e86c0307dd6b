"""Gemma 4 (``gemma4``, ``gemma4_text``): per-layer embeddings, shared key/value layers, two
attention widths, an optional mixture of experts beside the MLP, and vision and audio towers.

Mirrors ``modeling_gemma4`` of transformers 5.24; fields a config leaves out take
``Gemma4TextConfig``'s, ``Gemma4VisionConfig``'s and ``Gemma4AudioConfig``'s defaults, as
``AutoConfig`` would. Held to the meta-device count by ``tests/engine/test_hf_configs.py``
(``tools/model_counts.py``) and, for the mixture of experts, ``tests/engine/test_moe_configs.py``.

What sets the language model apart from Gemma 3:

* Two kinds of attention layer (``layer_types``; without it every sixth is full attention and
  the last is forced to full). Full-attention layers use ``global_head_dim`` (default 512) and,
  where ``attention_k_eq_v``, ``num_global_key_value_heads`` and no ``v_proj`` (the values are
  the key projection's output); sliding layers use ``head_dim`` and ``num_key_value_heads``.
* KV sharing: the last ``num_kv_shared_layers`` layers reuse the keys and values of the last
  earlier layer of their kind, so they have no ``k_proj``, ``v_proj`` or ``k_norm``; with
  ``use_double_wide_mlp`` their MLP is twice ``intermediate_size`` wide (E2B).
* Per-layer embeddings (``hidden_size_per_layer_input`` > 0: E2B, E4B): a second embedding table
  of ``vocab_size_per_layer_input`` rows and ``layers x width`` columns, a projection of the
  hidden state to the same width beside it (``per_layer_model_projection``, an ``nn.Linear``
  outside the blocks that bitsandbytes quantises and PEFT adapts, counted here as one layer of
  its own), its RMSNorm, and in every layer a gate (hidden -> width), a projection back and an
  RMSNorm.
* ``enable_moe_block`` (26B-A4B): every layer keeps its dense MLP and adds a router (an
  ``nn.Linear`` ``proj``, a per-channel ``scale`` and a ``per_expert_scale``: both in
  ``split.other``) and fused 3-D experts, with three more RMSNorms. PEFT 0.21 has no conversion
  for ``gemma4``, so "all-linear" adapts the router's projection and the dense MLP, never the
  experts (``LinearSpec.lora_target``). The experts are ``nn.Parameter`` tensors, which
  ``load_in_4bit`` leaves 16-bit (``LinearSpec.packed_4bit``); the router's ``proj`` is an
  ``nn.Linear`` and is packed.

The towers (loaded frozen, never adapted, :attr:`ModelShape.tower_params`): the vision encoder
(patch projection, a learned 2-D position table, Gemma-style blocks with q/k norms, no biases)
with its embedder into the text width, and the audio conformer (two strided convolutions with
LayerNorms, an input projection, blocks of two feed-forwards, chunked attention with a relative
key projection and a per-dimension scale, a light depthwise convolution) with its output
projection and embedder. ``vision_config`` or ``audio_config`` null (26B, 31B: no audio) means no
such tower.

Layer kinds are counted with ``list.count`` over slices of ``layer_types`` or in closed form,
never looped over in Python (``tests/engine/test_config_bounds.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from app.engine.architectures.kit import Attention, Config, assemble
from app.engine.architectures.multimodal import sub_config, with_defaults
from app.engine.shapes import LinearSpec, ModelShape, ParamSplit, ShapeError

TEXT_DEFAULTS: Final[Mapping[str, object]] = {
    "vocab_size": 262_144, "hidden_size": 2304, "intermediate_size": 9216,
    "num_hidden_layers": 30, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "max_position_embeddings": 131_072, "vocab_size_per_layer_input": 262_144,
    "hidden_size_per_layer_input": 256, "global_head_dim": 512,
}
"""``Gemma4TextConfig`` defaults (``global_head_dim`` is read from its keyword arguments)."""
VISION_DEFAULTS: Final[Mapping[str, object]] = {
    "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 16,
    "num_attention_heads": 12, "num_key_value_heads": 12, "head_dim": 64, "patch_size": 16,
    "position_embedding_size": 10_240,
}
"""``Gemma4VisionConfig`` defaults (google/gemma-4-e2b-it's encoder)."""
AUDIO_DEFAULTS: Final[Mapping[str, object]] = {
    "hidden_size": 1024, "num_hidden_layers": 12, "num_attention_heads": 8,
    "conv_kernel_size": 5, "output_proj_dims": 1536, "subsampling_conv_channels": [128, 32],
}
"""``Gemma4AudioConfig`` defaults (the released E2B and E4B audio encoder)."""
SLIDING_PATTERN: Final = 6
"""Without ``layer_types`` every sixth layer is full attention (``Gemma4TextConfig``: "by
default 5:1"), and the last layer is made full attention whatever the list says."""
PATCH_CHANNELS: Final = 3
"""The vision patch projection reads RGB patches: ``3 x patch_size**2`` inputs."""
AUDIO_CONV_KERNEL: Final = 3 * 3
"""The audio subsampling convolutions are 3 x 3, without bias."""
AUDIO_FREQUENCY_REDUCTION: Final = 4
"""``input_proj_linear`` reads ``subsampling_conv_channels[0] // 4 x channels[1]`` features."""
AUDIO_FEED_FORWARD_FACTOR: Final = 4
"""Each audio feed-forward widens to 4 x hidden."""
MAX_AUDIO_CHANNELS: Final = 4096
"""Bound of each ``subsampling_conv_channels`` entry (released: 128 and 32), as
``shapes.FIELD_BOUNDS`` bounds every other integer a config gives."""

FULL, SLIDING = "full_attention", "sliding_attention"
GEMMA4_MODEL_TYPES: Final = frozenset({"gemma4", "gemma4_text"})
"""The model types built here; their activations are approximated (assumption "gemma4": the
sliding layers' attention widths on every layer, the per-layer-embedding inputs and the shared
layers' double-wide MLP left out)."""


@dataclass(frozen=True, slots=True)
class _Kinds:
    """Layers by attention kind, before and after the first KV-shared layer."""

    full_own: int
    sliding_own: int
    full_shared: int
    sliding_shared: int


def _layer_kinds(cfg: Config, layers: int, shared: int) -> _Kinds:
    """Full and sliding layers among those computing their own keys and values and among the
    last ``shared`` ones, which reuse an earlier layer's (``Gemma4TextConfig.kv_sharing_modes``:
    each kind that is shared must have a layer of its own before the first shared one)."""
    own = layers - shared
    types = cfg.raw.get("layer_types")
    if types is None:
        full_total = layers // SLIDING_PATTERN + (1 if layers % SLIDING_PATTERN else 0)
        full_own = own // SLIDING_PATTERN + (1 if own == layers and layers % SLIDING_PATTERN
                                             else 0)
        # the first full layer is the sixth (or the last); the first sliding one is layer 0
        first_full = min(SLIDING_PATTERN, layers) - 1
        first = {FULL: first_full, SLIDING: 0}
    else:
        if not isinstance(types, list) or len(types) != layers:
            raise ShapeError("layer_types", "layer_types_length", layers=layers)
        listed = [*types[:-1], FULL]  # the config class forces the last layer to full
        full_total = listed.count(FULL)
        if full_total + listed.count(SLIDING) != layers:
            raise ShapeError("layer_types", "layer_type_unknown",
                             value=repr(next(t for t in listed if t not in (FULL, SLIDING))),
                             kinds=f"{SLIDING}, {FULL}")
        full_own = listed[:own].count(FULL)
        first = {kind: listed.index(kind) for kind in (FULL, SLIDING) if kind in listed}
    sliding_total = layers - full_total
    present = [first[kind] for kind, n in ((FULL, full_total), (SLIDING, sliding_total)) if n]
    if shared and own <= max(present):
        raise ShapeError("num_kv_shared_layers", "at_most", max=layers - 1 - max(present))
    return _Kinds(full_own, own - full_own, full_total - full_own,
                  sliding_total - (own - full_own))


@dataclass(frozen=True, slots=True)
class CacheLayers:
    """What a serving engine caches for a Gemma 4 language model: the layers that compute
    their own keys and values, by kind (a KV-shared layer reads an earlier layer's cache and
    keeps none), and the full-attention layers' key/value heads and head width."""

    full: int
    sliding: int
    kv_heads: int
    head_dim: int
    full_kv_heads: int
    full_head_dim: int


def cache_layers(config: Mapping[str, object]) -> CacheLayers:
    """:class:`CacheLayers` of a ``gemma4_text`` config (``text_config`` of a ``gemma4`` one),
    its missing fields at ``Gemma4TextConfig``'s defaults. With ``attention_k_eq_v`` the full
    layers' values are their keys' projection, but keys (normed and rotated) and values (normed
    only) are different tensors and both are cached."""
    cfg = with_defaults(config, TEXT_DEFAULTS)
    layers = cfg.integer("num_hidden_layers")
    shared = cfg.count("num_kv_shared_layers")
    if shared > layers:
        raise ShapeError("num_kv_shared_layers", "at_most", max=layers)
    kinds = _layer_kinds(cfg, layers, shared)
    kv_heads = cfg.integer("num_key_value_heads")
    global_kv = (cfg.optional_int("num_global_key_value_heads")
                 if cfg.flag("attention_k_eq_v", False) else None)
    return CacheLayers(kinds.full_own, kinds.sliding_own, kv_heads, cfg.integer("head_dim"),
                       global_kv or kv_heads, cfg.integer("global_head_dim"))


def _attention(cfg: Config, att: Attention, kinds: _Kinds) -> tuple[list[LinearSpec], int]:
    """q/k/v/o of the four groups of layers and their q/k norms (v_norm has no weight)."""
    bias = cfg.flag("attention_bias", False)
    global_dim = cfg.integer("global_head_dim")
    k_eq_v = cfg.flag("attention_k_eq_v", False)
    global_kv = cfg.optional_int("num_global_key_value_heads") if k_eq_v else None
    # Gemma4TextConfig: the global kv heads replace num_key_value_heads on full layers only
    # where attention_k_eq_v
    if global_kv is not None and att.heads % global_kv:
        raise ShapeError("num_global_key_value_heads", "kv_heads_divide")
    linears: list[LinearSpec] = []
    norms = 0
    for dim, kv, own, shared, has_v in (
        (global_dim, global_kv or att.kv_heads, kinds.full_own, kinds.full_shared, not k_eq_v),
        (att.head_dim, att.kv_heads, kinds.sliding_own, kinds.sliding_shared, True),
    ):
        layers = own + shared
        if not layers:
            continue
        linears.append(LinearSpec("q_proj", "q", att.hidden, att.heads * dim, layers, bias=bias))
        if own:
            linears.append(LinearSpec("k_proj", "k", att.hidden, kv * dim, own, bias=bias))
            if has_v:
                linears.append(LinearSpec("v_proj", "v", att.hidden, kv * dim, own, bias=bias))
        linears.append(LinearSpec("o_proj", "o", att.heads * dim, att.hidden, layers, bias=bias))
        norms += layers * dim + own * dim
    return linears, norms


def _mlp(hidden: int, width: int, layers: int) -> list[LinearSpec]:
    if not layers:
        return []
    return [
        LinearSpec("gate_proj", "gate", hidden, width, layers),
        LinearSpec("up_proj", "up", hidden, width, layers),
        LinearSpec("down_proj", "down", width, hidden, layers),
    ]


def gemma4_text(cfg: Config) -> ModelShape:
    """The language model (module docstring)."""
    cfg = with_defaults(cfg.raw, TEXT_DEFAULTS)
    hidden = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    kv_heads = cfg.integer("num_key_value_heads")
    if heads % kv_heads:
        raise ShapeError("num_key_value_heads", "kv_heads_divide")
    att = Attention(hidden, heads, kv_heads, cfg.integer("head_dim"))
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    shared = cfg.count("num_kv_shared_layers")
    if shared > layers:
        raise ShapeError("num_kv_shared_layers", "at_most", max=layers)
    kinds = _layer_kinds(cfg, layers, shared)
    linears, norms = _attention(cfg, att, kinds)
    wide = 2 if cfg.flag("use_double_wide_mlp", False) else 1
    linears += _mlp(hidden, intermediate, layers - shared if wide > 1 else layers)
    if wide > 1:
        linears += _mlp(hidden, wide * intermediate, shared)
    norms += (4 * layers + 1) * hidden
    per_layer = cfg.count("hidden_size_per_layer_input")
    extra_embedding = 0
    if per_layer:
        packed = layers * per_layer
        extra_embedding = cfg.integer("vocab_size_per_layer_input") * packed
        linears += [
            LinearSpec("per_layer_input_gate", "per_layer", hidden, per_layer, layers),
            LinearSpec("per_layer_projection", "per_layer", per_layer, hidden, layers),
            LinearSpec("per_layer_model_projection", "per_layer", hidden, packed, 1),
        ]
        norms += layers * hidden + per_layer
    experts = active = width = other = 0
    if cfg.flag("enable_moe_block", False):
        experts = cfg.integer("num_experts")
        active = cfg.integer("top_k_experts")
        if active > experts:
            raise ShapeError("top_k_experts", "too_many_active_experts", active=active,
                             experts=experts, experts_field="num_experts")
        width = cfg.integer("moe_intermediate_size")
        linears += [
            LinearSpec("proj", "router", hidden, experts, layers),
            LinearSpec("gate_up_proj", "gate_up", hidden, 2 * width, layers, experts, active,
                       lora_target=False, lora_rank_factor=2, packed_4bit=False),
            LinearSpec("down_proj", "down", width, hidden, layers, experts, active,
                       lora_target=False, packed_4bit=False),
        ]
        norms += 3 * layers * hidden
        other = layers * (hidden + experts)  # the router's scale and per_expert_scale
    shape = assemble(
        cfg, model_type="gemma4_text", att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=norms, norms_per_layer=4, qk_norm=True,
        tied=cfg.flag("tie_word_embeddings", True), extra_embedding=extra_embedding,
        num_experts=experts, experts_per_token=active, moe_intermediate=width,
        final_logit_softcap=cfg.is_set("final_logit_softcapping"), mask_kinds=2,
    )
    return replace(shape, split=replace(shape.split, other=shape.split.other + other))


def vision_params(vision: Config, text_hidden: int) -> int:
    """The vision encoder and its embedder (``embed_vision``: hidden -> text hidden, a norm
    without weight)."""
    h = vision.integer("hidden_size")
    i = vision.integer("intermediate_size")
    heads = vision.integer("num_attention_heads")
    kv = vision.integer("num_key_value_heads")
    if heads % kv:
        raise ShapeError("vision_config.num_key_value_heads", "kv_heads_divide")
    dim = vision.integer("head_dim")
    patch = vision.integer("patch_size")
    embed = PATCH_CHANNELS * patch * patch * h + 2 * vision.integer("position_embedding_size") * h
    layer = 2 * heads * dim * h + 2 * kv * dim * h + 2 * dim + 3 * h * i + 4 * h
    return embed + vision.integer("num_hidden_layers") * layer + h * text_hidden


def audio_params(audio: Config, text_hidden: int) -> int:
    """The audio encoder, its output projection (with bias) and its embedder."""
    h = audio.integer("hidden_size")
    heads = audio.integer("num_attention_heads")
    width = heads * (h // heads)
    first, second = _channels(audio.raw.get("subsampling_conv_channels"))
    subsample = (first * AUDIO_CONV_KERNEL + first + second * first * AUDIO_CONV_KERNEL + second
                 + first // AUDIO_FREQUENCY_REDUCTION * second * h)
    feed_forward = 2 * AUDIO_FEED_FORWARD_FACTOR * h * h + 2 * h
    attention = 3 * width * h + h * h + width * h + h // heads  # q, k, v, post, relative k
    light_conv = 2 * h * h + h * h + audio.integer("conv_kernel_size") * h + 2 * h
    layer = 2 * feed_forward + attention + light_conv + 3 * h
    out = audio.integer("output_proj_dims")
    return (subsample + audio.integer("num_hidden_layers") * layer + h * out + out
            + out * text_hidden)


def _channels(value: object) -> tuple[int, int]:
    """``subsampling_conv_channels``: two whole numbers, each at most
    :data:`MAX_AUDIO_CHANNELS`."""
    if isinstance(value, list) and len(value) == 2:
        first, second = value
        if all(isinstance(c, int) and not isinstance(c, bool) and 0 < c <= MAX_AUDIO_CHANNELS
               for c in (first, second)):
            return int(first), int(second)
    raise ShapeError("audio_config.subsampling_conv_channels", "layer_kinds", layers=2,
                     kinds=f"a whole number from 1 to {MAX_AUDIO_CHANNELS:,}")


def _tower(cfg: Config, name: str, defaults: Mapping[str, object]) -> Config | None:
    """A tower's config at its class's defaults; None where the checkpoint has none (null)."""
    if cfg.raw.get(name) is None:
        return None
    return with_defaults(sub_config(cfg.raw, name), defaults)


def gemma4(cfg: Config) -> ModelShape:
    """The whole checkpoint: the language model from ``text_config``, the towers beside it;
    the top-level ``tie_word_embeddings`` (default True) decides lm_head."""
    shape = replace(gemma4_text(Config(sub_config(cfg.raw, "text_config"))), model_type="gemma4")
    tied = cfg.flag("tie_word_embeddings", True)
    head = 0 if tied else shape.vocab_size * shape.hidden_size
    split: ParamSplit = replace(shape.split, lm_head=head)
    vision = _tower(cfg, "vision_config", VISION_DEFAULTS)
    audio = _tower(cfg, "audio_config", AUDIO_DEFAULTS)
    heard = 0 if audio is None else audio_params(audio, shape.hidden_size)
    seen = 0 if vision is None else vision_params(vision, shape.hidden_size)
    return replace(shape, tied_embeddings=tied, split=split, tower_params=seen + heard,
                   audio_tower_params=heard)
