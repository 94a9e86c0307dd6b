"""DeepSeek-V4 (``deepseek_v4``: V4-Flash, V4-Pro): its exact shape, as transformers 5.25's
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

from collections.abc import Mapping
from dataclasses import replace
from typing import Final

from app.engine.arch_moe import _experts, _mlp, _Moe, _shape
from app.engine.shapes import (
    LinearSpec,
    ModelShape,
    ShapeError,
    _Attention,
    _Config,
    _experts_per_token,
)

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


def _layer_counts(cfg: _Config, layers: int) -> tuple[int, int]:
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


def _rates(cfg: _Config) -> tuple[int, int]:
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
        found.append(_Config({field: value}).integer(field))
    return found[0], found[1]


def deepseek_v4(cfg: _Config) -> ModelShape:
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
    moe = _Moe(experts, _experts_per_token(cfg, experts, "n_routed_experts"), width, layers)
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
    linears += _experts(hidden, moe, peft_fused=False, router_target=False)
    linears += _mlp(hidden, width, layers, target=True)
    norm = (layers * (2 * hidden + q_rank + head_dim) + csa * (head_dim + index_dim)
            + hca * head_dim + hidden)
    mix = (2 + hc) * hc
    hyper = layers * 2 * (mix * hc * hidden + mix + HC_SCALES) + (hc * hc * hidden + hc + 1)
    position_bias = csa * csa_rate * 2 * (head_dim + index_dim) + hca * hca_rate * head_dim
    other = layers * heads + hyper + position_bias
    att = _Attention(hidden, heads, 1, head_dim)
    shape = _shape(cfg, model_type="deepseek_v4", att=att, layers=layers, intermediate=width,
                   linears=linears, norm=norm, other=other, moe=moe)
    return replace(shape, attention_sinks=True, latent_norm_width=q_rank)
