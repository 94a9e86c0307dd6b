"""Mixture-of-experts models and the MoE kit they share (:class:`Moe`, :func:`moe_experts`,
:func:`swiglu_mlp`, :func:`moe_shape`): exact shapes of their config.json. Mixtral (every
layer a router and ``num_local_experts`` fused experts) is here too; the DeepSeek family
(multi-head latent attention, V3 to V4) is in ``deepseek``.

Each builder mirrors the module tree transformers 5 builds for the ``model_type`` (counted on
the meta device by ``tools/moe_counts.py``; ``tests/engine/test_moe_configs.py`` holds every
builder to those counts for real configs, to the parameter):

* ``deepseek_v3`` (DeepSeek-V3, R1, V3.1; Kimi K2 as ``kimi_k2``), ``deepseek_v32`` (V3.2: the
  same plus the sparse-attention indexer), ``glm4_moe_lite`` (GLM-4.7-Flash) and
  ``glm_moe_dsa`` (GLM-5, with the indexer): multi-head latent attention (q and kv compressed
  to ``q_lora_rank`` / ``kv_lora_rank`` with an RMSNorm each, then expanded per head), the
  first ``first_k_dense_replace`` layers dense, the rest a router, ``n_routed_experts`` experts
  and ``n_shared_experts`` shared experts of width ``moe_intermediate_size``. transformers'
  deepseek_v3 ignores ``moe_layer_freq`` (every layer after the dense ones is sparse), so it
  is not read.
* ``glm4_moe`` (GLM-4.5, 4.6, 4.7): grouped-query attention with biases on q/k/v, optional
  per-head q/k norms (``use_qk_norm``), the DeepSeek MoE block.
* ``minimax_m2``: grouped-query attention with RMSNorms over the whole q and k width, every
  layer ``num_local_experts`` experts, no shared expert.
* ``gpt_oss``: attention with biases and one learned sink logit per head, alternating
  sliding-window and full attention, every layer a router with bias and experts with biases.
* ``llama4`` (the text model of the multimodal checkpoint; ``llama4_text`` alone): MoE layers
  every ``interleave_moe_layer_step`` (or those listed in ``moe_layers``) with one shared
  expert, dense layers of width ``intermediate_size_mlp``; the vision tower is counted apart
  (``ModelShape.tower_params``) and stays frozen.
* ``kimi_k25``: the ``text_config`` built as ``deepseek_v3``; the MoonViT tower apart.
* ``mimo_v2_flash`` (MiMo-V2-Flash): full and sliding attention of different widths (sinks on
  the sliding layers), one dense layer, the rest ``n_routed_experts`` experts.

Experts are fused 3-D tensors in transformers 5: one ``gate_up_proj`` (hidden -> 2 x width) and
one ``down_proj`` per layer, ``n_routed_experts`` deep. The parameter count is that of one
linear layer per expert; what LoRA adapts depends on the convention (``states.MoeLora``):
PEFT 0.21 adapts the fused tensors where its conversion table knows the model type
(``peft/utils/transformers_weight_conversion.py``, ``_MODEL_TO_CONVERSION_PATTERN`` of
transformers: deepseek_v3, deepseek_v32, glm4_moe, glm4_moe_lite, glm_moe_dsa as qwen2_moe;
minimax_m2 as mixtral), the gate/up tensor at rank 2r, and then no longer adapts the
``nn.Linear`` layers named like the old experts (the dense layers' and shared experts'
gate_proj/up_proj/down_proj): ``LinearSpec.lora_target`` is False for those. gpt_oss and
llama4 are not in the table: PEFT adapts no expert tensor there (gpt_oss's router is not an
``nn.Linear`` either; llama4's is).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from app.engine.architectures.kit import (
    Attention,
    Config,
    assemble,
    attention_dims,
    experts_per_token,
    fused_experts,
    gated_mlp,
    separate_attention,
)
from app.engine.shapes import LinearSpec, ModelShape, ParamSplit, ShapeError

PEFT_FUSED_TYPES: frozenset[str] = frozenset(
    {"deepseek_v3", "kimi_k2", "deepseek_v32", "glm4_moe", "glm4_moe_lite", "glm_moe_dsa",
     "minimax_m2", "longcat_flash"}
)
"""Model types whose fused experts PEFT 0.21 adapts (module docstring). Not ``kimi_k25``:
PEFT looks up the wrapped model's own type, and on ``Kimi_K25ForConditionalGeneration`` that
is ``kimi_k25``, which its table lacks, so it adapts the language model's ``nn.Linear`` layers
only (attention, dense and shared-expert MLPs): 88,798,208 parameters at r16 on Kimi-K2.5
(``tools/model_counts.py``, transformers 5.25, PEFT 0.21.2), not the 11.8 billion of its
experts adapted per expert."""


SINK_MODEL_TYPES: frozenset[str] = frozenset({"gpt_oss"})
"""Attention sinks and sliding windows: eager attention's scores in the sinks' dtype
(activations.eager_score_bytes), measured on a tiny gpt-oss (assumption "sinks")."""


MIMO_DEFAULTS: dict[str, int] = {
    "num_key_value_heads": 4, "head_dim": 192, "v_head_dim": 128, "n_routed_experts": 256,
    "moe_intermediate_size": 2048,
}
"""``MiMoV2FlashConfig`` defaults (transformers 5.25) a released config may leave out."""


MIMO_FULL_EVERY = 6
"""``MiMoV2FlashConfig.layer_types`` default: full attention at layer 0 and where
``(i + 1) % 6 == 0``, sliding elsewhere."""


@dataclass(frozen=True, slots=True)
class Moe:
    """The sparse layers' experts, as one builder reads them."""

    experts: int
    active: int
    width: int
    layers: int


def moe_experts(
    hidden: int, moe: Moe, *, peft_fused: bool, router_target: bool, bias: bool = False,
) -> list[LinearSpec]:
    return fused_experts(hidden, moe.width, moe.layers, moe.experts, moe.active,
                         peft_fused=peft_fused, router_target=router_target, bias=bias)


def swiglu_mlp(hidden: int, width: int, layers: int, *, target: bool) -> list[LinearSpec]:
    """A SwiGLU MLP (dense layers, shared experts) as ``nn.Linear`` gate/up/down."""
    if not layers:
        return []
    return [
        LinearSpec("gate_proj", "gate", hidden, width, layers, lora_target=target),
        LinearSpec("up_proj", "up", hidden, width, layers, lora_target=target),
        LinearSpec("down_proj", "down", width, hidden, layers, lora_target=target),
    ]


def renamed_mlps(hidden: int, *, shared_width: int, sparse: int, intermediate: int,
                 layers: int, bias: bool = False) -> list[LinearSpec]:
    """The SwiGLU MLPs beside fused experts that PEFT 0.21 stops adapting once its Qwen2-MoE
    conversion renames ``gate_proj``/``up_proj``/``down_proj`` onto the experts (ERNIE 4.5,
    EXAONE MoE): the sparse layers' shared experts (``shared_width`` wide, none where 0) and
    the dense layers' MLP; adapted under the per-expert convention."""
    specs: list[LinearSpec] = []
    if sparse and shared_width:
        specs += gated_mlp(hidden, shared_width, sparse, bias=bias)
    if layers - sparse:
        specs += gated_mlp(hidden, intermediate, layers - sparse, bias=bias)
    return [replace(spec, lora_target=False) for spec in specs]


def moe_shape(
    cfg: Config, *, model_type: str, att: Attention, layers: int, intermediate: int,
    linears: list[LinearSpec], norm: int, other: int, moe: Moe, qk_norm: bool = False,
    mask_kinds: int = 1, tower: int = 0, tied: bool | None = None,
) -> ModelShape:
    """The shape of a MoE decoder; ``tied``: the config's ``tie_word_embeddings``, False where
    it names none unless the family's config class ties by default (ERNIE 4.5)."""
    vocab = cfg.integer("vocab_size")
    if tied is None:
        tied = cfg.flag("tie_word_embeddings", False)
    split = ParamSplit(
        linear=sum(spec.weight_params for spec in linears),
        embedding=vocab * att.hidden,
        lm_head=0 if tied else vocab * att.hidden,
        norm=norm,
        other=sum(spec.bias_params for spec in linears) + other,
    )
    return ModelShape(
        model_type=model_type, hidden_size=att.hidden, intermediate_size=intermediate,
        num_layers=layers, num_heads=att.heads, num_kv_heads=att.kv_heads,
        head_dim=att.head_dim, vocab_size=vocab,
        max_positions=cfg.optional_int("max_position_embeddings"), tied_embeddings=tied,
        linears=tuple(linears), split=split, num_experts=moe.experts,
        experts_per_token=moe.active, moe_intermediate_size=moe.width, norms_per_layer=2,
        qk_norm=qk_norm, mask_kinds=mask_kinds, tower_params=tower,
    )


def layer_kinds(field: str, kinds: object, layers: int, allowed: tuple[str, str]) -> int:
    """How many entries of a per-layer list are ``allowed[1]`` (sparse MLP) or ``allowed[0]``
    (a layer running its own indexer): the list must name every layer, each one of the two.
    Counted with ``list.count``: no Python step per layer (tests/engine/test_config_bounds.py)."""
    if (not isinstance(kinds, list) or len(kinds) != layers
            or kinds.count(allowed[0]) + kinds.count(allowed[1]) != layers):
        raise ShapeError(field, "layer_kinds", layers=layers, kinds=", ".join(allowed))
    return kinds.count(allowed[1] if field == "mlp_layer_types" else allowed[0])


def layer_count(cfg: Config, name: str, default: int) -> int:
    """A layer count that may be 0 (``first_k_dense_replace``), bounded like any other."""
    return 0 if cfg.raw.get(name) == 0 else cfg.integer(name, default=default)


def _glm4_moe(cfg: Config) -> ModelShape:
    """GLM-4.5/4.6/4.7 (module docstring). Biases on q, k and v (``attention_bias``), none on o."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    experts = cfg.integer("n_routed_experts")
    dense = layer_count(cfg, "first_k_dense_replace", 1)
    moe = Moe(experts, experts_per_token(cfg, experts, "n_routed_experts"),
               cfg.integer("moe_intermediate_size"), max(layers - dense, 0))
    shared = cfg.integer("n_shared_experts", default=1)
    qk_norm = cfg.flag("use_qk_norm", False)
    linears = separate_attention(att, layers, qkv_bias=cfg.flag("attention_bias", False),
                                  o_bias=False)
    linears += moe_experts(att.hidden, moe, peft_fused=True, router_target=True)
    linears += swiglu_mlp(att.hidden, moe.width * shared, moe.layers, target=False)
    linears += swiglu_mlp(att.hidden, intermediate, layers - moe.layers, target=False)
    norm = (2 * layers + 1) * att.hidden + (2 * layers * att.head_dim if qk_norm else 0)
    return moe_shape(cfg, model_type="glm4_moe", att=att, layers=layers,
                  intermediate=intermediate, linears=linears, norm=norm, other=0, moe=moe,
                  qk_norm=qk_norm)


def _minimax_m2(cfg: Config) -> ModelShape:
    """MiniMax-M2: no biases, RMSNorm over the whole q width and the whole k width per layer."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    experts = cfg.integer("num_local_experts")
    moe = Moe(experts, experts_per_token(cfg, experts, "num_local_experts"),
               cfg.integer("intermediate_size"), layers)
    linears = separate_attention(att, layers, qkv_bias=False, o_bias=False)
    linears += moe_experts(att.hidden, moe, peft_fused=True, router_target=True)
    norm = (2 * layers + 1) * att.hidden + layers * (att.heads + att.kv_heads) * att.head_dim
    return moe_shape(cfg, model_type="minimax_m2", att=att, layers=layers,
                  intermediate=moe.width, linears=linears, norm=norm, other=0, moe=moe,
                  qk_norm=True)


def _gpt_oss(cfg: Config) -> ModelShape:
    """gpt-oss: biases on every projection (``attention_bias``) and expert, a learned sink per
    head (counted with the biases: 16-bit, never quantised), full and sliding-window masks."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    experts = cfg.integer("num_local_experts")
    moe = Moe(experts, experts_per_token(cfg, experts, "num_local_experts"),
               cfg.integer("intermediate_size"), layers)
    bias = cfg.flag("attention_bias", True)
    linears = separate_attention(att, layers, qkv_bias=bias, o_bias=bias)
    linears += moe_experts(att.hidden, moe, peft_fused=False, router_target=False, bias=True)
    shape = moe_shape(cfg, model_type="gpt_oss", att=att, layers=layers, intermediate=moe.width,
                   linears=linears, norm=(2 * layers + 1) * att.hidden,
                   other=layers * att.heads, moe=moe, mask_kinds=2)
    return replace(shape, attention_sinks=True)


def _llama4_text(cfg: Config, *, model_type: str = "llama4_text", tower: int = 0) -> ModelShape:
    """Llama 4's language model: MoE layers with one shared expert (module docstring)."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    experts = cfg.integer("num_local_experts")
    listed = cfg.layer_list("moe_layers", layers)
    if listed or cfg.raw.get("moe_layers") == []:
        sparse = len(listed)
    else:
        step = cfg.integer("interleave_moe_layer_step", default=1)
        sparse = len(range(step - 1, layers, step))
    moe = Moe(experts, experts_per_token(cfg, experts, "num_local_experts"),
               cfg.integer("intermediate_size"), sparse)
    dense_width = cfg.integer("intermediate_size_mlp")
    bias = cfg.flag("attention_bias", False)
    linears = separate_attention(att, layers, qkv_bias=bias, o_bias=bias)
    linears += moe_experts(att.hidden, moe, peft_fused=False, router_target=True)
    linears += swiglu_mlp(att.hidden, moe.width, moe.layers, target=True)
    linears += swiglu_mlp(att.hidden, dense_width, layers - moe.layers, target=True)
    return moe_shape(cfg, model_type=model_type, att=att, layers=layers, intermediate=dense_width,
                  linears=linears, norm=(2 * layers + 1) * att.hidden, other=0, moe=moe,
                  tower=tower)


def _mimo_v2_flash(cfg: Config) -> ModelShape:
    """MiMo-V2-Flash (``modeling_mimo_v2_flash``, transformers 5.25): ``layer_types`` full or
    sliding attention (``MiMoV2FlashConfig`` default: full at layer 0 and every sixth, the
    release's ``hybrid_layer_pattern``, which transformers does not read), the sliding layers
    with twice ``num_key_value_heads`` and a learned sink per head (counted with the biases);
    q and k ``head_dim`` wide, v and o ``v_head_dim``; ``mlp_layer_types`` dense or sparse
    (default: the first dense, as the release's ``moe_layer_freq``), a dense layer a SwiGLU MLP
    of ``intermediate_size``, a sparse one a router and ``n_routed_experts`` fused experts, no
    shared expert. PEFT 0.21's conversion table has no entry for it: experts and router are
    not adapted (attention and the dense MLP are)."""
    hidden = cfg.integer("hidden_size")
    layers = cfg.integer("num_hidden_layers")
    heads = cfg.integer("num_attention_heads")
    kv_heads = cfg.integer("num_key_value_heads", default=MIMO_DEFAULTS["num_key_value_heads"])
    head_dim = cfg.integer("head_dim", default=MIMO_DEFAULTS["head_dim"])
    v_dim = cfg.integer("v_head_dim", default=MIMO_DEFAULTS["v_head_dim"])
    kinds = cfg.raw.get("layer_types")
    sliding = (layer_kinds("layer_types", kinds, layers, ("sliding_attention", "full_attention"))
               if kinds is not None else
               layers - 1 - layers // MIMO_FULL_EVERY)
    mlp_kinds = cfg.raw.get("mlp_layer_types")
    sparse = (layer_kinds("mlp_layer_types", mlp_kinds, layers, ("dense", "sparse"))
              if mlp_kinds is not None else layers - 1)
    experts = cfg.integer("n_routed_experts", default=MIMO_DEFAULTS["n_routed_experts"])
    moe = Moe(experts, experts_per_token(cfg, experts, "n_routed_experts"),
               cfg.integer("moe_intermediate_size", default=MIMO_DEFAULTS["moe_intermediate_size"]),
               sparse)
    intermediate = cfg.integer("intermediate_size")
    bias = cfg.flag("attention_bias", False)
    linears: list[LinearSpec] = []
    for count, kv in ((layers - sliding, kv_heads), (sliding, 2 * kv_heads)):
        if count:
            linears += [
                LinearSpec("q_proj", "q", hidden, heads * head_dim, count, bias=bias),
                LinearSpec("k_proj", "k", hidden, kv * head_dim, count, bias=bias),
                LinearSpec("v_proj", "v", hidden, kv * v_dim, count, bias=bias),
                LinearSpec("o_proj", "o", heads * v_dim, hidden, count),
            ]
    linears += moe_experts(hidden, moe, peft_fused=False, router_target=False)
    linears += swiglu_mlp(hidden, intermediate, layers - sparse, target=True)
    att = Attention(hidden, heads, kv_heads, head_dim)
    shape = moe_shape(cfg, model_type="mimo_v2_flash", att=att, layers=layers,
                   intermediate=intermediate, linears=linears, norm=(2 * layers + 1) * hidden,
                   other=sliding * heads, moe=moe, mask_kinds=2 if sliding else 1)
    return replace(shape, attention_sinks=sliding > 0)


def text_config_of(cfg: Config) -> Config:
    text = cfg.raw.get("text_config")
    if not isinstance(text, Mapping):
        raise ShapeError("text_config", "config_missing")
    return Config(text)


def _llama4(cfg: Config) -> ModelShape:
    """The multimodal checkpoint: its ``text_config``; the vision tower frozen apart."""
    return _llama4_text(text_config_of(cfg), model_type="llama4",
                        tower=llama4_vision_params(cfg))


def vision_config_of(cfg: Config) -> Config:
    vision = cfg.raw.get("vision_config")
    return Config(vision if isinstance(vision, Mapping) else {})


# transformers' Llama4VisionConfig defaults (configuration_llama4.py), which it builds when a
# checkpoint's config.json leaves them out.
LLAMA4_VISION_DEFAULTS: Mapping[str, int] = {
    "hidden_size": 768, "intermediate_size": 5632, "num_hidden_layers": 34, "num_channels": 3,
    "image_size": 448, "patch_size": 14, "vision_output_dim": 7680,
    "projector_input_dim": 4096, "projector_output_dim": 4096,
}


def llama4_vision_params(cfg: Config) -> int:
    """Llama 4's vision encoder, pixel-shuffle adapter and projector (transformers'
    Llama4VisionModel and Llama4MultiModalProjector): a class embedding and one position
    embedding per patch (plus one), an unfolded patch projection without bias, LayerNorms
    before and after, per layer q/k/v/o with biases, a GELU MLP with biases and two LayerNorms;
    the adapter's two bias-free layers; the projector to the text width, bias-free."""
    vision = vision_config_of(cfg)
    d = LLAMA4_VISION_DEFAULTS

    def get(name: str) -> int:
        return vision.integer(name, default=d[name])

    h, i, layers = get("hidden_size"), get("intermediate_size"), get("num_hidden_layers")
    patch = get("patch_size")
    patches = (get("image_size") // patch) ** 2 + 1
    embeddings = h + patches * h + h * get("num_channels") * patch * patch + 2 * 2 * h
    per_layer = 4 * (h * h + h) + (i * h + i) + (h * i + h) + 2 * 2 * h
    adapter = i * get("projector_input_dim") + get("projector_output_dim") ** 2
    text_hidden = text_config_of(cfg).integer("hidden_size")
    return embeddings + layers * per_layer + adapter + get("vision_output_dim") * text_hidden


def mixtral(cfg: Config) -> ModelShape:
    """Mixtral: Llama attention; every layer a router and ``num_local_experts`` experts (w1/w3
    fused as gate_up_proj, w2 as down_proj in transformers 5; the same parameter count as one
    linear layer per expert, states.MOE_LORAS for what LoRA adapts).
    """
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    experts = cfg.integer("num_local_experts")
    active = experts_per_token(cfg, experts, "num_local_experts")
    linears = separate_attention(att, layers, qkv_bias=False, o_bias=False)
    linears += fused_experts(att.hidden, intermediate, layers, experts, active)
    return assemble(
        cfg, model_type="mixtral", att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=(2 * layers + 1) * att.hidden, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", False), num_experts=experts,
        experts_per_token=active, moe_intermediate=intermediate,
    )


BUILDERS: dict[str, Callable[[Config], ModelShape]] = {
    "glm4_moe": _glm4_moe,
    "minimax_m2": _minimax_m2,
    "gpt_oss": _gpt_oss,
    "mimo_v2_flash": _mimo_v2_flash,
    "llama4": _llama4,
    "llama4_text": _llama4_text,
}
"""The model types this module builds, each by its builder (registered in ``registry``)."""
