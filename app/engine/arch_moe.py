"""Mixture-of-experts and multi-head latent attention models: exact shapes of their config.json.

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

from app.engine.shapes import (
    LinearSpec,
    ModelShape,
    ParamSplit,
    ShapeError,
    _Attention,
    _attention_dims,
    _Config,
    _experts_per_token,
    _separate_attention,
    fused_experts,
)

PEFT_FUSED_TYPES: frozenset[str] = frozenset(
    {"deepseek_v3", "kimi_k2", "deepseek_v32", "glm4_moe", "glm4_moe_lite", "glm_moe_dsa",
     "minimax_m2"}
)
"""Model types whose fused experts PEFT 0.21 adapts (module docstring). Not ``kimi_k25``:
PEFT looks up the wrapped model's own type, and on ``Kimi_K25ForConditionalGeneration`` that
is ``kimi_k25``, which its table lacks, so it adapts the language model's ``nn.Linear`` layers
only (attention, dense and shared-expert MLPs): 88,798,208 parameters at r16 on Kimi-K2.5
(``tools/model_counts.py``, transformers 5.25, PEFT 0.21.2), not the 11.8 billion of its
experts adapted per expert."""

# Activations of multi-head latent attention: those of standard attention with keys and values
# expanded per head (kv_b_proj's output holds k_nope and v, the new key tensor k_nope and k_rope;
# as many bytes as q, k, v and the output at head width qk_head_dim when v_head_dim =
# qk_nope_head_dim, as in every released MLA model), plus the two latent RMSNorms
# (ModelShape.latent_norm_width), plus the shared expert and the first dense layers' MLPs
# (activations.mlp_width_per_token). Measured on whole steps of a tiny DeepSeek-V3 at 3 and 5
# layers, full fine-tuning and LoRA, with and without checkpointing
# (tools/calibrate/results/cpu-moe.json, held to 10 % by tests/engine/test_calibration_moe.py;
# before these terms the 5-layer step was 3.3 % under with eager attention). Eager attention
# there: MLA's value heads are narrower than its query/key heads, so SDPA on a CPU falls back
# to the math kernel and keeps the score matrix (32 bytes per token per key position, which
# made an earlier SDPA check read 9.9-14.5 % under), which a GPU's memory-efficient kernel does
# not keep.
MLA_MODEL_TYPES: frozenset[str] = frozenset(
    {"deepseek_v3", "kimi_k2", "kimi_k25", "deepseek_v32", "glm4_moe_lite", "glm_moe_dsa"}
)
"""Multi-head latent attention: activations measured (comment above; assumption "mla")."""
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

# The sparse-attention indexer's LayerNorm on its keys (weight and bias): transformers'
# DeepseekV32Indexer / GlmMoeDsaIndexer, ``nn.LayerNorm(index_head_dim)``.
INDEXER_NORM_PARAMS_PER_WIDTH = 2


@dataclass(frozen=True, slots=True)
class _Moe:
    """The sparse layers' experts, as one builder reads them."""

    experts: int
    active: int
    width: int
    layers: int


def _experts(
    hidden: int, moe: _Moe, *, peft_fused: bool, router_target: bool, bias: bool = False,
) -> list[LinearSpec]:
    return fused_experts(hidden, moe.width, moe.layers, moe.experts, moe.active,
                         peft_fused=peft_fused, router_target=router_target, bias=bias)


def _mlp(hidden: int, width: int, layers: int, *, target: bool) -> list[LinearSpec]:
    """A SwiGLU MLP (dense layers, shared experts) as ``nn.Linear`` gate/up/down."""
    if not layers:
        return []
    return [
        LinearSpec("gate_proj", "gate", hidden, width, layers, lora_target=target),
        LinearSpec("up_proj", "up", hidden, width, layers, lora_target=target),
        LinearSpec("down_proj", "down", width, hidden, layers, lora_target=target),
    ]


def _shape(
    cfg: _Config, *, model_type: str, att: _Attention, layers: int, intermediate: int,
    linears: list[LinearSpec], norm: int, other: int, moe: _Moe, qk_norm: bool = False,
    mask_kinds: int = 1, tower: int = 0,
) -> ModelShape:
    vocab = cfg.integer("vocab_size")
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


def _layer_kinds(field: str, kinds: object, layers: int, allowed: tuple[str, str]) -> int:
    """How many entries of a per-layer list are ``allowed[1]`` (sparse MLP) or ``allowed[0]``
    (a layer running its own indexer): the list must name every layer, each one of the two."""
    if (not isinstance(kinds, list) or len(kinds) != layers
            or not all(kind in allowed for kind in kinds)):
        raise ShapeError(field, "layer_kinds", layers=layers, kinds=", ".join(allowed))
    counted = allowed[1] if field == "mlp_layer_types" else allowed[0]
    return sum(1 for kind in kinds if kind == counted)


def _count(cfg: _Config, name: str, default: int) -> int:
    """A layer count that may be 0 (``first_k_dense_replace``), bounded like any other."""
    return 0 if cfg.raw.get(name) == 0 else cfg.integer(name, default=default)


def _sparse_layers(cfg: _Config, layers: int, *, lite: bool = False) -> int:
    """Layers holding experts: those ``mlp_layer_types`` calls sparse where the config lists
    them (deepseek_v32, glm4_moe_lite, glm_moe_dsa), else all after ``first_k_dense_replace``
    (transformers' default 3; GLM-4.7-Flash's config class makes only the first layer dense)."""
    kinds = cfg.raw.get("mlp_layer_types")
    if kinds is not None:
        return _layer_kinds("mlp_layer_types", kinds, layers, ("dense", "sparse"))
    if lite:
        return max(layers - 1, 0)
    return max(layers - _count(cfg, "first_k_dense_replace", 3), 0)


def _mla(cfg: _Config, model_type: str, *, indexer: bool, lite: bool = False) -> ModelShape:
    """DeepSeek's multi-head latent attention with the DeepSeek MoE block (module docstring).

    ``ModelShape`` describes the attention as the activations see it: ``num_kv_heads`` =
    heads (k and v are expanded per head) and ``head_dim`` = ``qk_nope_head_dim`` +
    ``qk_rope_head_dim``, the width of a query or key head."""
    hidden = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    q_rank = cfg.optional_int("q_lora_rank")
    kv_rank = cfg.integer("kv_lora_rank")
    rope = cfg.integer("qk_rope_head_dim")
    nope = cfg.integer("qk_nope_head_dim")
    v_dim = cfg.integer("v_head_dim")
    experts = cfg.integer("n_routed_experts")
    moe = _Moe(experts, _experts_per_token(cfg, experts, "n_routed_experts"),
               cfg.integer("moe_intermediate_size"), _sparse_layers(cfg, layers, lite=lite))
    shared = cfg.integer("n_shared_experts", default=1)
    bias = cfg.flag("attention_bias", False)
    qk_dim = nope + rope
    linears: list[LinearSpec] = []
    norm = (2 * layers + 1) * hidden + layers * kv_rank
    if q_rank is None:
        linears.append(LinearSpec("q_proj", "qkv", hidden, heads * qk_dim, layers))
    else:
        linears += [
            LinearSpec("q_a_proj", "qkv", hidden, q_rank, layers, bias=bias),
            LinearSpec("q_b_proj", "qkv", q_rank, heads * qk_dim, layers),
        ]
        norm += layers * q_rank
    linears += [
        LinearSpec("kv_a_proj_with_mqa", "qkv", hidden, kv_rank + rope, layers, bias=bias),
        LinearSpec("kv_b_proj", "qkv", kv_rank, heads * (nope + v_dim), layers),
        LinearSpec("o_proj", "o", heads * v_dim, hidden, layers, bias=bias),
    ]
    if indexer:
        if q_rank is None:
            raise ShapeError("q_lora_rank", "config_missing")
        index_heads = cfg.integer("index_n_heads")
        index_dim = cfg.integer("index_head_dim")
        with_indexer = _indexed_layers(cfg, layers)
        linears += [
            LinearSpec("wq_b", "qkv", q_rank, index_heads * index_dim, with_indexer),
            LinearSpec("wk", "qkv", hidden, index_dim, with_indexer),
            LinearSpec("weights_proj", "qkv", hidden, index_heads, with_indexer),
        ]
        norm += with_indexer * INDEXER_NORM_PARAMS_PER_WIDTH * index_dim
    fused = model_type in PEFT_FUSED_TYPES
    linears += _experts(hidden, moe, peft_fused=fused, router_target=fused)
    linears += _mlp(hidden, moe.width * shared, moe.layers, target=not fused)
    linears += _mlp(hidden, intermediate, layers - moe.layers, target=not fused)
    att = _Attention(hidden, heads, heads, qk_dim)
    shape = _shape(cfg, model_type=model_type, att=att, layers=layers,
                   intermediate=intermediate, linears=linears, norm=norm, other=0, moe=moe)
    return replace(shape, latent_norm_width=(q_rank or 0) + kv_rank)


def _indexed_layers(cfg: _Config, layers: int) -> int:
    """Layers that run their own indexer. GLM-5 (``glm_moe_dsa``) may share one layer's top-k
    with the next ones (``indexer_types``, or the schedule ``index_topk_freq`` /
    ``index_skip_topk_offset``: a layer is "full" when ``max(i - offset + 1, 0) % freq == 0``,
    transformers' GlmMoeDsaConfig); DeepSeek-V3.2 runs one in every layer."""
    kinds = cfg.raw.get("indexer_types")
    if kinds is not None:
        return _layer_kinds("indexer_types", kinds, layers, ("full", "shared"))
    pattern = cfg.raw.get("index_topk_pattern")
    if pattern is not None:  # "FSSF...": F full, S shared
        letters = list(pattern) if isinstance(pattern, str) else pattern
        return _layer_kinds("index_topk_pattern", letters, layers, ("F", "S"))
    freq = cfg.integer("index_topk_freq", default=1)
    offset = _count(cfg, "index_skip_topk_offset", 2)
    first = offset - 1  # layers 0..first all run the indexer (their term is 0)
    if first < 0:
        return layers // freq
    head = min(layers, first + 1)
    rest = layers - head
    return head + rest // freq


def _deepseek_v3(cfg: _Config) -> ModelShape:
    return _mla(cfg, "deepseek_v3", indexer=False)


def _kimi_k2(cfg: _Config) -> ModelShape:
    return _mla(cfg, "kimi_k2", indexer=False)


def _deepseek_v32(cfg: _Config) -> ModelShape:
    return _mla(cfg, "deepseek_v32", indexer=True)


def _glm4_moe_lite(cfg: _Config) -> ModelShape:
    return _mla(cfg, "glm4_moe_lite", indexer=False, lite=True)


def _glm_moe_dsa(cfg: _Config) -> ModelShape:
    return _mla(cfg, "glm_moe_dsa", indexer=True)


def _glm4_moe(cfg: _Config) -> ModelShape:
    """GLM-4.5/4.6/4.7 (module docstring). Biases on q, k and v (``attention_bias``), none on o."""
    att = _attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    experts = cfg.integer("n_routed_experts")
    dense = _count(cfg, "first_k_dense_replace", 1)
    moe = _Moe(experts, _experts_per_token(cfg, experts, "n_routed_experts"),
               cfg.integer("moe_intermediate_size"), max(layers - dense, 0))
    shared = cfg.integer("n_shared_experts", default=1)
    qk_norm = cfg.flag("use_qk_norm", False)
    linears = _separate_attention(att, layers, qkv_bias=cfg.flag("attention_bias", False),
                                  o_bias=False)
    linears += _experts(att.hidden, moe, peft_fused=True, router_target=True)
    linears += _mlp(att.hidden, moe.width * shared, moe.layers, target=False)
    linears += _mlp(att.hidden, intermediate, layers - moe.layers, target=False)
    norm = (2 * layers + 1) * att.hidden + (2 * layers * att.head_dim if qk_norm else 0)
    return _shape(cfg, model_type="glm4_moe", att=att, layers=layers,
                  intermediate=intermediate, linears=linears, norm=norm, other=0, moe=moe,
                  qk_norm=qk_norm)


def _minimax_m2(cfg: _Config) -> ModelShape:
    """MiniMax-M2: no biases, RMSNorm over the whole q width and the whole k width per layer."""
    att = _attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    experts = cfg.integer("num_local_experts")
    moe = _Moe(experts, _experts_per_token(cfg, experts, "num_local_experts"),
               cfg.integer("intermediate_size"), layers)
    linears = _separate_attention(att, layers, qkv_bias=False, o_bias=False)
    linears += _experts(att.hidden, moe, peft_fused=True, router_target=True)
    norm = (2 * layers + 1) * att.hidden + layers * (att.heads + att.kv_heads) * att.head_dim
    return _shape(cfg, model_type="minimax_m2", att=att, layers=layers,
                  intermediate=moe.width, linears=linears, norm=norm, other=0, moe=moe,
                  qk_norm=True)


def _gpt_oss(cfg: _Config) -> ModelShape:
    """gpt-oss: biases on every projection (``attention_bias``) and expert, a learned sink per
    head (counted with the biases: 16-bit, never quantised), full and sliding-window masks."""
    att = _attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    experts = cfg.integer("num_local_experts")
    moe = _Moe(experts, _experts_per_token(cfg, experts, "num_local_experts"),
               cfg.integer("intermediate_size"), layers)
    bias = cfg.flag("attention_bias", True)
    linears = _separate_attention(att, layers, qkv_bias=bias, o_bias=bias)
    linears += _experts(att.hidden, moe, peft_fused=False, router_target=False, bias=True)
    shape = _shape(cfg, model_type="gpt_oss", att=att, layers=layers, intermediate=moe.width,
                   linears=linears, norm=(2 * layers + 1) * att.hidden,
                   other=layers * att.heads, moe=moe, mask_kinds=2)
    return replace(shape, attention_sinks=True)


def _llama4_text(cfg: _Config, *, model_type: str = "llama4_text", tower: int = 0) -> ModelShape:
    """Llama 4's language model: MoE layers with one shared expert (module docstring)."""
    att = _attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    experts = cfg.integer("num_local_experts")
    listed = cfg.layer_list("moe_layers", layers)
    if listed or cfg.raw.get("moe_layers") == []:
        sparse = len(listed)
    else:
        step = cfg.integer("interleave_moe_layer_step", default=1)
        sparse = len(range(step - 1, layers, step))
    moe = _Moe(experts, _experts_per_token(cfg, experts, "num_local_experts"),
               cfg.integer("intermediate_size"), sparse)
    dense_width = cfg.integer("intermediate_size_mlp")
    bias = cfg.flag("attention_bias", False)
    linears = _separate_attention(att, layers, qkv_bias=bias, o_bias=bias)
    linears += _experts(att.hidden, moe, peft_fused=False, router_target=True)
    linears += _mlp(att.hidden, moe.width, moe.layers, target=True)
    linears += _mlp(att.hidden, dense_width, layers - moe.layers, target=True)
    return _shape(cfg, model_type=model_type, att=att, layers=layers, intermediate=dense_width,
                  linears=linears, norm=(2 * layers + 1) * att.hidden, other=0, moe=moe,
                  tower=tower)


def _mimo_v2_flash(cfg: _Config) -> ModelShape:
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
    sliding = (_layer_kinds("layer_types", kinds, layers, ("sliding_attention", "full_attention"))
               if kinds is not None else
               layers - 1 - layers // MIMO_FULL_EVERY)
    mlp_kinds = cfg.raw.get("mlp_layer_types")
    sparse = (_layer_kinds("mlp_layer_types", mlp_kinds, layers, ("dense", "sparse"))
              if mlp_kinds is not None else layers - 1)
    experts = cfg.integer("n_routed_experts", default=MIMO_DEFAULTS["n_routed_experts"])
    moe = _Moe(experts, _experts_per_token(cfg, experts, "n_routed_experts"),
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
    linears += _experts(hidden, moe, peft_fused=False, router_target=False)
    linears += _mlp(hidden, intermediate, layers - sparse, target=True)
    att = _Attention(hidden, heads, kv_heads, head_dim)
    shape = _shape(cfg, model_type="mimo_v2_flash", att=att, layers=layers,
                   intermediate=intermediate, linears=linears, norm=(2 * layers + 1) * hidden,
                   other=sliding * heads, moe=moe, mask_kinds=2 if sliding else 1)
    return replace(shape, attention_sinks=sliding > 0)


def _text_config(cfg: _Config) -> _Config:
    text = cfg.raw.get("text_config")
    if not isinstance(text, Mapping):
        raise ShapeError("text_config", "config_missing")
    return _Config(text)


def _llama4(cfg: _Config) -> ModelShape:
    """The multimodal checkpoint: its ``text_config``; the vision tower frozen apart."""
    return _llama4_text(_text_config(cfg), model_type="llama4",
                        tower=llama4_vision_params(cfg))


def _kimi_k25(cfg: _Config) -> ModelShape:
    """Kimi K2.5: a DeepSeek-V3 language model (``text_config``) and a MoonViT tower."""
    text = _text_config(cfg)
    shape = _mla(text, "kimi_k25", indexer=False)
    return replace(shape, tower_params=moonvit_params(_vision_config(cfg), shape.hidden_size))


def _vision_config(cfg: _Config) -> _Config:
    vision = cfg.raw.get("vision_config")
    return _Config(vision if isinstance(vision, Mapping) else {})


# transformers' Llama4VisionConfig defaults (configuration_llama4.py), which it builds when a
# checkpoint's config.json leaves them out.
LLAMA4_VISION_DEFAULTS: Mapping[str, int] = {
    "hidden_size": 768, "intermediate_size": 5632, "num_hidden_layers": 34, "num_channels": 3,
    "image_size": 448, "patch_size": 14, "vision_output_dim": 7680,
    "projector_input_dim": 4096, "projector_output_dim": 4096,
}


def llama4_vision_params(cfg: _Config) -> int:
    """Llama 4's vision encoder, pixel-shuffle adapter and projector (transformers'
    Llama4VisionModel and Llama4MultiModalProjector): a class embedding and one position
    embedding per patch (plus one), an unfolded patch projection without bias, LayerNorms
    before and after, per layer q/k/v/o with biases, a GELU MLP with biases and two LayerNorms;
    the adapter's two bias-free layers; the projector to the text width, bias-free."""
    vision = _vision_config(cfg)
    d = LLAMA4_VISION_DEFAULTS

    def get(name: str) -> int:
        return vision.integer(name, default=d[name])

    h, i, layers = get("hidden_size"), get("intermediate_size"), get("num_hidden_layers")
    patch = get("patch_size")
    patches = (get("image_size") // patch) ** 2 + 1
    embeddings = h + patches * h + h * get("num_channels") * patch * patch + 2 * 2 * h
    per_layer = 4 * (h * h + h) + (i * h + i) + (h * i + h) + 2 * 2 * h
    adapter = i * get("projector_input_dim") + get("projector_output_dim") ** 2
    text_hidden = _text_config(cfg).integer("hidden_size")
    return embeddings + layers * per_layer + adapter + get("vision_output_dim") * text_hidden


# MoonViT's image channels: RGB (transformers' kimi_k25 patch embedding, a Conv2d of 3 inputs).
MOONVIT_CHANNELS = 3
# transformers' Kimi_K25VisionConfig defaults (K2.5's own MoonViT), for a config without them;
# the release names them vt_hidden_size, vt_intermediate_size, vt_num_hidden_layers and
# init_pos_emb_height/width, transformers hidden_size, ..., pos_emb_height/width.
MOONVIT_DEFAULTS: Mapping[str, int] = {
    "hidden_size": 1152, "intermediate_size": 4304, "layers": 27, "patch_size": 14,
    "pos_emb": 64,
}
# Its patch merger joins a 2 x 2 block of patches (``merge_kernel_size``, [2, 2] in K2.5).
MOONVIT_MERGE = 2 * 2


def moonvit_params(vision: _Config, text_hidden: int) -> int:
    """Kimi K2.5's MoonViT and patch-merger projector (transformers' kimi_k25): a Conv2d patch
    embedding with bias, learned 2-D position embeddings, per layer two LayerNorms, q/k/v and
    the output projection with biases and a GELU MLP with biases, a final LayerNorm; the
    projector's LayerNorm, and two linear layers with biases over the merged patches."""
    d = MOONVIT_DEFAULTS
    h = vision.integer("vt_hidden_size", "hidden_size", default=d["hidden_size"])
    i = vision.integer("vt_intermediate_size", "intermediate_size",
                       default=d["intermediate_size"])
    patch = vision.integer("patch_size", default=d["patch_size"])
    positions = (vision.integer("init_pos_emb_height", "pos_emb_height", default=d["pos_emb"])
                 * vision.integer("init_pos_emb_width", "pos_emb_width", default=d["pos_emb"]))
    mm = vision.integer("mm_hidden_size", default=h)
    merged = mm * MOONVIT_MERGE
    embeddings = h * MOONVIT_CHANNELS * patch * patch + h + positions * h
    per_layer = 2 * 2 * h + 4 * (h * h + h) + (i * h + i) + (h * i + h)
    projector = 2 * mm + merged * merged + merged + text_hidden * merged + text_hidden
    layers = vision.integer("vt_num_hidden_layers", "num_hidden_layers", default=d["layers"])
    return embeddings + layers * per_layer + 2 * h + projector


BUILDERS: dict[str, Callable[[_Config], ModelShape]] = {
    "deepseek_v3": _deepseek_v3,
    "kimi_k2": _kimi_k2,
    "kimi_k25": _kimi_k25,
    "deepseek_v32": _deepseek_v32,
    "glm4_moe": _glm4_moe,
    "glm4_moe_lite": _glm4_moe_lite,
    "glm_moe_dsa": _glm_moe_dsa,
    "minimax_m2": _minimax_m2,
    "gpt_oss": _gpt_oss,
    "mimo_v2_flash": _mimo_v2_flash,
    "llama4": _llama4,
    "llama4_text": _llama4_text,
}
"""The model types this module builds, each by its builder (registered in ``shapes``)."""
