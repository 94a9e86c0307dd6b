"""The DeepSeek family: multi-head latent attention with the DeepSeek MoE block (V3, R1, V3.1,
V3.2, Kimi K2 and K2.5, GLM-4.7-Flash, GLM-5; described in ``moe``'s module docstring) and
DeepSeek-V4, below.

DeepSeek-V4 (``deepseek_v4``: V4-Flash, V4-Pro): its exact shape, as transformers 5.25's
``modeling_deepseek_v4`` builds it (counted on the meta device by ``tools/moe_counts.py`` and
``tools/model_counts.py``; held to those counts by ``tests/engine/test_moe_configs.py`` and
``tests/engine/test_hf_configs.py``).

Every layer: attention with one key/value head of ``head_dim`` (q compressed to
``q_lora_rank`` with an RMSNorm, ``kv_proj`` to one head with an RMSNorm), a learned sink per
head, and a grouped low-rank output (``o_a_proj``, an ``nn.Linear`` subclass of ``o_groups``
blocks: heads x head_dim / o_groups -> o_groups x o_lora_rank, then ``o_b_proj`` to the
hidden width); a router, ``n_routed_experts`` fused experts and one shared expert of
``moe_intermediate_size`` (transformers reads no other shared width); two hyper-connections
(``hc_mult`` streams: a (2 + hc) x hc by hc x hidden mixing matrix, its bias and 3 scales)
around attention and MLP, and one more before the output head (hc by hc x hidden, hc, 1).
``layer_types`` (or the release's ``compress_ratios``: 0 sliding, 4 CSA, 128 HCA, as
``DeepseekV4Config`` maps them) adds a compressor: CSA (rate 4) overlapping windows of width
2 x head_dim (kv and gate projections, a rate x 2 x head_dim position bias, an RMSNorm) and a
Lightning Indexer at ``index_head_dim`` (its own compressor, q from the compressed q, a scorer
of ``index_n_heads``); HCA (rate 128) one window of head_dim. The sliding layers have none.

PEFT 0.21's conversion table has no ``deepseek_v4`` entry: the fused experts and the router
(parameters) are not adapted, every ``nn.Linear`` is, ``o_a_proj`` included; bitsandbytes'
4-bit loading swaps only exact ``nn.Linear`` modules, so ``o_a_proj`` stays 16-bit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Final

from app.engine.architectures.kit import Attention, Config, experts_per_token
from app.engine.architectures.moe import (
    PEFT_FUSED_TYPES,
    Moe,
    layer_count,
    layer_kinds,
    moe_experts,
    moe_shape,
    swiglu_mlp,
    text_config_of,
    vision_config_of,
)
from app.engine.shapes import LinearSpec, ModelShape, ShapeError

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
    {"deepseek_v3", "kimi_k2", "kimi_k25", "deepseek_v32", "glm4_moe_lite", "glm_moe_dsa",
     "longcat_flash"}
)
"""Multi-head latent attention: activations measured (comment above; assumption "mla")."""


# The sparse-attention indexer's LayerNorm on its keys (weight and bias): transformers'
# DeepseekV32Indexer / GlmMoeDsaIndexer, ``nn.LayerNorm(index_head_dim)``.
INDEXER_NORM_PARAMS_PER_WIDTH = 2


def _sparse_layers(cfg: Config, layers: int, *, lite: bool = False) -> int:
    """Layers holding experts: those ``mlp_layer_types`` calls sparse where the config lists
    them (deepseek_v32, glm4_moe_lite, glm_moe_dsa), else all after ``first_k_dense_replace``
    (transformers' default 3; GLM-4.7-Flash's config class makes only the first layer dense)."""
    kinds = cfg.raw.get("mlp_layer_types")
    if kinds is not None:
        return layer_kinds("mlp_layer_types", kinds, layers, ("dense", "sparse"))
    if lite:
        return max(layers - 1, 0)
    return max(layers - layer_count(cfg, "first_k_dense_replace", 3), 0)


def _mla(cfg: Config, model_type: str, *, indexer: bool, lite: bool = False) -> ModelShape:
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
    moe = Moe(experts, experts_per_token(cfg, experts, "n_routed_experts"),
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
    linears += moe_experts(hidden, moe, peft_fused=fused, router_target=fused)
    linears += swiglu_mlp(hidden, moe.width * shared, moe.layers, target=not fused)
    linears += swiglu_mlp(hidden, intermediate, layers - moe.layers, target=not fused)
    att = Attention(hidden, heads, heads, qk_dim)
    shape = moe_shape(cfg, model_type=model_type, att=att, layers=layers,
                   intermediate=intermediate, linears=linears, norm=norm, other=0, moe=moe)
    return replace(shape, latent_norm_width=(q_rank or 0) + kv_rank)


def _indexed_layers(cfg: Config, layers: int) -> int:
    """Layers that run their own indexer. GLM-5 (``glm_moe_dsa``) may share one layer's top-k
    with the next ones (``indexer_types``, or the schedule ``index_topk_freq`` /
    ``index_skip_topk_offset``: a layer is "full" when ``max(i - offset + 1, 0) % freq == 0``,
    transformers' GlmMoeDsaConfig); DeepSeek-V3.2 runs one in every layer."""
    kinds = cfg.raw.get("indexer_types")
    if kinds is not None:
        return layer_kinds("indexer_types", kinds, layers, ("full", "shared"))
    pattern = cfg.raw.get("index_topk_pattern")
    if pattern is not None:  # "FSSF...": F full, S shared
        letters = list(pattern) if isinstance(pattern, str) else pattern
        return layer_kinds("index_topk_pattern", letters, layers, ("F", "S"))
    freq = cfg.integer("index_topk_freq", default=1)
    offset = layer_count(cfg, "index_skip_topk_offset", 2)
    first = offset - 1  # layers 0..first all run the indexer (their term is 0)
    if first < 0:
        return layers // freq
    head = min(layers, first + 1)
    rest = layers - head
    return head + rest // freq


def _deepseek_v3(cfg: Config) -> ModelShape:
    return _mla(cfg, "deepseek_v3", indexer=False)


def _kimi_k2(cfg: Config) -> ModelShape:
    return _mla(cfg, "kimi_k2", indexer=False)


def _deepseek_v32(cfg: Config) -> ModelShape:
    return _mla(cfg, "deepseek_v32", indexer=True)


def _glm4_moe_lite(cfg: Config) -> ModelShape:
    return _mla(cfg, "glm4_moe_lite", indexer=False, lite=True)


def _glm_moe_dsa(cfg: Config) -> ModelShape:
    return _mla(cfg, "glm_moe_dsa", indexer=True)


def _kimi_k25(cfg: Config) -> ModelShape:
    """Kimi K2.5: a DeepSeek-V3 language model (``text_config``) and a MoonViT tower."""
    text = text_config_of(cfg)
    shape = _mla(text, "kimi_k25", indexer=False)
    return replace(shape, tower_params=moonvit_params(vision_config_of(cfg), shape.hidden_size))


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


def moonvit_params(vision: Config, text_hidden: int) -> int:
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


SLIDING: Final = "sliding_attention"


CSA: Final = "compressed_sparse_attention"


HCA: Final = "heavily_compressed_attention"


LAYER_TYPES: Final = (SLIDING, CSA, HCA)


RATIO_TO_TYPE: Final[Mapping[int, str]] = {0: SLIDING, 4: CSA, 128: HCA}
"""``_COMPRESS_RATIO_TO_LAYER_TYPE`` of transformers 5.25's ``configuration_deepseek_v4``."""


DEFAULT_RATES: Final[Mapping[str, int]] = {CSA: 4, HCA: 128}
"""``DeepseekV4Config.default_compress_rates``."""


DEFAULTS: Final[Mapping[str, int]] = {
    "num_attention_heads": 64, "head_dim": 512, "q_lora_rank": 1024, "o_groups": 8,
    "o_lora_rank": 1024, "hc_mult": 4, "index_n_heads": 64, "index_head_dim": 128,
    "n_routed_experts": 256, "moe_intermediate_size": 2048,
}
"""``DeepseekV4Config`` defaults (V4-Flash's) a config may leave out."""


HC_SCALES: Final = 3
"""Scales of one hyper-connection (pre, post, comb: ``DeepseekV4HyperConnection.scale``)."""


def _layer_counts(cfg: Config, layers: int) -> tuple[int, int]:
    """How many layers are CSA and HCA (``DeepseekV4Config.__post_init__``: ``layer_types``,
    else the legacy ``compress_ratios``, else two HCA layers and then HCA/CSA alternating),
    each list cut to ``layers`` as transformers cuts it."""
    kinds = cfg.raw.get("layer_types")
    field = "layer_types"
    if kinds is None and cfg.raw.get("compress_ratios") is not None:
        field = "compress_ratios"
        ratios = cfg.raw["compress_ratios"]
        if not isinstance(ratios, list) or len(ratios) < layers \
                or not set(ratios[:layers]) <= set(RATIO_TO_TYPE):
            raise ShapeError(field, "layer_kinds", layers=layers,
                             kinds=", ".join(map(str, RATIO_TO_TYPE)))
        kinds = [RATIO_TO_TYPE[r] for r in ratios[:layers]]
    if kinds is None:
        rest = max(layers - 2, 0)
        return rest // 2, min(layers, 2) + rest - rest // 2
    if not isinstance(kinds, list) or len(kinds) < layers \
            or not set(kinds[:layers]) <= set(LAYER_TYPES):
        raise ShapeError(field, "layer_kinds", layers=layers, kinds=", ".join(LAYER_TYPES))
    return kinds[:layers].count(CSA), kinds[:layers].count(HCA)


def _rates(cfg: Config) -> tuple[int, int]:
    """The CSA and HCA compression rates: ``compress_rate_csa``/``_hca`` where given (the legacy
    keys transformers folds in last), else ``compress_rates``, else the defaults."""
    rates = cfg.raw.get("compress_rates")
    given = rates if isinstance(rates, Mapping) else {}
    found = []
    for kind, legacy in ((CSA, "compress_rate_csa"), (HCA, "compress_rate_hca")):
        value = cfg.raw.get(legacy)
        field = legacy if value is not None else f"compress_rates.{kind}"
        if value is None:
            value = given.get(kind, DEFAULT_RATES[kind])
        found.append(Config({field: value}).integer(field))
    return found[0], found[1]


def deepseek_v4(cfg: Config) -> ModelShape:
    def size(name: str) -> int:
        return cfg.integer(name, default=DEFAULTS[name])

    hidden = cfg.integer("hidden_size")
    layers = cfg.integer("num_hidden_layers")
    heads, head_dim, q_rank = size("num_attention_heads"), size("head_dim"), size("q_lora_rank")
    groups, o_rank, hc = size("o_groups"), size("o_lora_rank"), size("hc_mult")
    index_heads, index_dim = size("index_n_heads"), size("index_head_dim")
    if (heads * head_dim) % groups:
        raise ShapeError("o_groups", "head_dim_indivisible")
    experts = size("n_routed_experts")
    width = size("moe_intermediate_size")
    moe = Moe(experts, experts_per_token(cfg, experts, "n_routed_experts"), width, layers)
    csa, hca = _layer_counts(cfg, layers)
    csa_rate, hca_rate = _rates(cfg)
    linears = [
        LinearSpec("q_a_proj", "qkv", hidden, q_rank, layers),
        LinearSpec("q_b_proj", "qkv", q_rank, heads * head_dim, layers),
        LinearSpec("kv_proj", "qkv", hidden, head_dim, layers),
        LinearSpec("o_a_proj", "o", heads * head_dim // groups, groups * o_rank, layers,
                   packed_4bit=False),
        LinearSpec("o_b_proj", "o", groups * o_rank, hidden, layers),
        # CSA compressors and their indexers, HCA compressors
        LinearSpec("kv_proj", "qkv", hidden, 2 * head_dim, csa),
        LinearSpec("gate_proj", "qkv", hidden, 2 * head_dim, csa),
        LinearSpec("kv_proj", "qkv", hidden, 2 * index_dim, csa),
        LinearSpec("gate_proj", "qkv", hidden, 2 * index_dim, csa),
        LinearSpec("q_b_proj", "qkv", q_rank, index_heads * index_dim, csa),
        LinearSpec("weights_proj", "qkv", hidden, index_heads, csa),
        LinearSpec("kv_proj", "qkv", hidden, head_dim, hca),
        LinearSpec("gate_proj", "qkv", hidden, head_dim, hca),
    ]
    linears = [spec for spec in linears if spec.layers]
    linears += moe_experts(hidden, moe, peft_fused=False, router_target=False)
    linears += swiglu_mlp(hidden, width, layers, target=True)
    norm = (layers * (2 * hidden + q_rank + head_dim) + csa * (head_dim + index_dim)
            + hca * head_dim + hidden)
    mix = (2 + hc) * hc
    hyper = layers * 2 * (mix * hc * hidden + mix + HC_SCALES) + (hc * hc * hidden + hc + 1)
    position_bias = csa * csa_rate * 2 * (head_dim + index_dim) + hca * hca_rate * head_dim
    other = layers * heads + hyper + position_bias
    att = Attention(hidden, heads, 1, head_dim)
    shape = moe_shape(cfg, model_type="deepseek_v4", att=att, layers=layers, intermediate=width,
                   linears=linears, norm=norm, other=other, moe=moe)
    return replace(shape, attention_sinks=True, latent_norm_width=q_rank)


BUILDERS: dict[str, Callable[[Config], ModelShape]] = {
    "deepseek_v3": _deepseek_v3,
    "kimi_k2": _kimi_k2,
    "kimi_k25": _kimi_k25,
    "deepseek_v32": _deepseek_v32,
    "glm4_moe_lite": _glm4_moe_lite,
    "glm_moe_dsa": _glm_moe_dsa,
}
"""The model types of multi-head latent attention this module builds (registered in
``registry``; ``deepseek_v4`` is registered by name)."""


@dataclass(frozen=True, slots=True)
class V4Cache:
    """What a DeepSeek-V4 request keeps beside its sliding window (transformers'
    ``DeepseekV4CSACache`` and ``DeepseekV4HCACache``): the CSA layers one compressed entry of
    ``head_dim`` and one indexer entry of ``index_dim`` per ``csa_rate`` tokens, the HCA layers
    one entry of ``head_dim`` per ``hca_rate`` tokens."""

    csa_layers: int
    hca_layers: int
    csa_rate: int
    hca_rate: int
    head_dim: int
    index_dim: int


def v4_cache(raw: Mapping[str, object]) -> V4Cache:
    """The compressed layers of a ``deepseek_v4`` config, read as :func:`deepseek_v4` reads
    them (the same layer kinds, rates and defaults; errors name the field)."""
    cfg = Config(raw)
    csa, hca = _layer_counts(cfg, cfg.integer("num_hidden_layers"))
    csa_rate, hca_rate = _rates(cfg)
    return V4Cache(csa, hca, csa_rate, hca_rate,
                   cfg.integer("head_dim", default=DEFAULTS["head_dim"]),
                   cfg.integer("index_head_dim", default=DEFAULTS["index_head_dim"]))
