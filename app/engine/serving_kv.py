"""What a serving engine keeps per token and per request: the KV cache layout of a model.

Read from the model's Hugging Face ``config.json`` directly (a small reader of its own, beside
:mod:`app.engine.shapes`, whose builders count parameters and do not carry attention layouts):
which layers are full attention, which slide over a window, which are linear attention or
Mamba with a fixed state, and whether the keys and values are a multi-head latent (MLA).

The arithmetic follows vLLM's KV cache specs (``vllm/v1/kv_cache_interface.py`` and
``vllm/config/model.py::get_num_kv_heads``, v0.11.0; shared/reference/serving-findings.md
§1.6):

* full attention (MHA/GQA): ``2 x kv_heads_per_gpu x head_dim x dtype bytes`` per token and
  layer, with ``kv_heads_per_gpu = max(1, kv_heads // tp)`` (heads are replicated when the
  tensor-parallel degree exceeds them);
* MLA (DeepSeek-V2/V3, Kimi K2; LongCat-Flash, two attention sublayers a layer): one latent
  of ``kv_lora_rank + qk_rope_head_dim`` per token and layer, replicated on every rank
  (``MLAAttentionSpec``; not divided by TP);
* sliding-window layers keep at most ``window - 1 + max_num_batched_tokens`` tokens of a
  request, plus one block (``SlidingWindowSpec.max_memory_usage_bytes``);
* linear-attention (gated DeltaNet) and Mamba layers keep one fixed state per request
  whatever its length (``MambaSpec``), split over the tensor-parallel ranks by heads;
* Gemma 4: full-attention layers have their own key/value heads and head width
  (``num_global_key_value_heads``, ``global_head_dim``), and the last ``num_kv_shared_layers``
  layers read an earlier layer's cache and keep none (as vLLM's ``kv_sharing_target_layer_name``
  layers allocate nothing; :func:`app.engine.architectures.gemma4.cache_layers`). The per-kind page
  sizes are taken as they are; vLLM's hybrid manager pads groups to one page size, which this
  leaves out.
The four below follow transformers' code of the family (``models/mimo_v2_flash/
modeling_mimo_v2_flash.py`` at commit 019770dd, ``models/deepseek_v4/modeling_deepseek_v4.py``
at 01976081, read on 2026-12-04; tests/engine/test_serving_kv.py holds the figures):

* MiMo-V2-Flash (``mimo_v2_flash``, ``MiMoV2FlashAttention``): keys of
  ``head_dim`` (192) and values of ``v_head_dim`` (128); the sliding layers have twice the
  full layers' key/value heads (8 against 4) and a window of ``sliding_window`` (128); which
  layers slide is ``layer_types``, else the checkpoint's ``hybrid_layer_pattern`` (1 slides),
  else ``MiMoV2FlashConfig``'s rule (the first and every sixth layer attend in full).
* DeepSeek-V4 (``deepseek_v4``, ``DeepseekV4HCACache`` and
  ``DeepseekV4CSACache``): every layer keeps a sliding window of one shared key/value head of
  ``head_dim`` (values are the keys' tensor); a CSA layer also keeps one compressed entry of
  ``head_dim`` and one indexer entry of ``index_head_dim`` per ``compress_rate`` (4) tokens, an
  HCA layer one entry of ``head_dim`` per 128 tokens, and each a fixed buffer of the tokens
  still to compress (:class:`CompressedCache`). One head: every rank keeps all of it.
* MiniMax-M3 (``minimax_m3``, ``minimax_m3_vl``; ``modeling_minimax_m3_vl.py``, transformers
  5.24.0): every layer attends in full (GQA), and each layer ``layer_types`` marks
  ``minimax_m3_sparse`` (a release: ``sparse_attention_config.sparse_attention_freq``; 57 of
  60) also keeps its lightning indexer's key, one head of ``index_head_dim`` (128) per token
  (``MiniMaxM3VLSparseCacheLayer``), at the cache's dtype as DeepSeek-V4's indexer entries are
  counted, on every rank.
* LFM2 (``lfm2``): its short-convolution layers keep no keys or values but a convolution
  state of ``(conv_L_cache - 1) x conv_dim`` values a request (vLLM's
  ``MambaStateShapeCalculator.short_conv_state_shape``, split over the ranks as Mamba's
  convolution state is; transformers' ``Lfm2HybridConvCache`` allocates ``conv_L_cache``
  columns of ``hidden_size`` for every layer instead).

Every integer read here has an upper bound (:data:`KV_FIELD_BOUNDS`), as the shapes' do, and
nothing loops over a value from the config: layer kinds are counted in closed form or over a
list whose length the layer bound caps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from app.engine.architectures.deepseek import v4_cache
from app.engine.architectures.falcon_h1 import falcon_h1_inner
from app.engine.architectures.gemma4 import GEMMA4_MODEL_TYPES, cache_layers
from app.engine.architectures.granite_hybrid import granite_layer_kinds, granite_mamba_dims
from app.engine.architectures.kit import (
    FIELD_BOUNDS,
    MAX_CONV_KERNEL,
    MAX_HEADS,
    MAX_HIDDEN_SIZE,
    MAX_LAYERS,
    MAX_POSITIONS,
    MAX_STATE_SIZE,
    Config,
    attention_dims,
)
from app.engine.architectures.longcat import LONGCAT_DEFAULTS, SUBLAYERS_PER_LAYER
from app.engine.architectures.minimax_m3 import SPARSE_LAYER, indexer_cache
from app.engine.architectures.step3p7 import serving_layer_types
from app.engine.errors import EngineError
from app.engine.shapes import ModelShape

BLOCK_TOKENS: Final = 16
"""Tokens per KV block (vLLM ``--block-size`` default 16, ``vllm/config/cache.py``)."""

STATE_DTYPE_BYTES: Final = 2
"""Linear-attention and Mamba states are kept in the model's 16-bit dtype (vLLM
``--mamba-ssm-cache-dtype auto``), not in an fp8 KV cache's."""
KV_FIELD_BOUNDS: Final[Mapping[str, int]] = {
    **FIELD_BOUNDS,
    "sliding_window": MAX_POSITIONS, "attention_chunk_size": MAX_POSITIONS,
    "sliding_window_pattern": MAX_LAYERS,
    "mamba_d_state": MAX_STATE_SIZE, "mamba_n_groups": MAX_HEADS,
    "mamba_d_conv": MAX_CONV_KERNEL,
    "conv_dim": MAX_HIDDEN_SIZE,
}
"""Upper bound of every integer this reader takes from a config: the shapes' own table, so a
field has one bound wherever it is read, plus the attention-layout and Mamba fields only the
KV reader takes (windows and chunks are token counts, bounded like positions; the ``mamba_*``
spellings of older Mamba configs share the bounds of the fields they rename)."""

GROUP_SIZE_SPREAD: Final = 1.25
"""vLLM groups a hybrid's layers by the largest kind's count instead of the smallest's when the
largest is under 1.25 times the smallest (gpt-oss-20b with an EAGLE head: 12 sliding, 13 full),
to avoid padding (``kv_cache_utils.py``, v0.11.0)."""

GEMMA3_SLIDING_PATTERN: Final = 6
"""Gemma 3's default ``sliding_window_pattern`` (transformers ``Gemma3TextConfig``): five local
layers, then one global; released configs leave it out."""

GEMMA4_WINDOW: Final = 512
"""``Gemma4TextConfig.sliding_window`` default (E2B, E4B; 26B and 31B give 1024)."""

FULL = "full_attention"
SLIDING = "sliding_attention"
LINEAR = "linear_attention"
MAMBA = "mamba"
CONV = "conv"
"""LFM2's short-convolution layers: no KV cache, a fixed convolution state per request."""
LAYER_KINDS: Final = (FULL, SLIDING, LINEAR, MAMBA, CONV)
_ALIASES: Final[Mapping[str, str]] = {
    "full_attention": FULL, "attention": FULL, "global": FULL,
    "sliding_attention": SLIDING, "sliding_window": SLIDING, "local": SLIDING,
    "chunked_attention": SLIDING,
    "linear_attention": LINEAR,
    "mamba": MAMBA, "mamba2": MAMBA, "conv": CONV,
    SPARSE_LAYER: FULL,
}


STEP3P7_TYPES: Final = frozenset({"step3p7", "step3p5"})
"""Step-3.7-Flash's checkpoint type and its text config's (a ``text_config`` may name it),
whose ``layer_types`` a hub config pads with the MTP layers
(:func:`app.engine.architectures.step3p7.serving_layer_types`)."""
MINIMAX_M3_TYPES: Final = frozenset({"minimax_m3", "minimax_m3_vl", "minimax_m3_vl_text"})
"""MiniMax-M3's types, whose sparse layers keep the lightning indexer's keys
(:func:`app.engine.architectures.minimax_m3.indexer_cache`)."""
MIMO_FULL_EVERY: Final = 6
"""``MiMoV2FlashConfig``'s default ``layer_types``: layer 0 and every sixth layer (5, 11, ...)
attend in full, the others slide."""
MIMO_SWA_HEADS_FACTOR: Final = 2
"""``MiMoV2FlashAttention``: a sliding layer has twice ``num_key_value_heads``."""
OLMO3_FULL_EVERY: Final = 4
"""``Olmo3Config``'s default ``layer_types``: layers 3, 7, 11, ... attend in full, the others
over ``sliding_window``."""
EXAONE_MOE_LAYOUT: Final[Mapping[str, object]] = {"sliding_window": 4096,
                                                   "sliding_window_pattern": 4}
"""``ExaoneMoeConfig`` defaults: three of four layers attend over a 4,096-token window where a
config lists no ``layer_types`` (a null ``sliding_window`` there: every layer full)."""
AFMOE_LAYOUT: Final[Mapping[str, object]] = {"sliding_window": 1024, "sliding_window_pattern": 4}
"""``AfmoeConfig`` defaults: every ``global_attn_every_n_layers``-th layer (4) attends in full,
the others over a 1,024-token window, where a config lists no ``layer_types``."""
V4_WINDOW: Final = 128
"""``DeepseekV4Config.sliding_window`` default."""


@dataclass(frozen=True, slots=True)
class CompressedCache:
    """Layers that keep one entry of ``entry_elements`` values per ``rate`` tokens of a request
    (DeepSeek-V4's compressed attention), and a fixed ``state_elements`` each (the tokens of an
    unfinished window, waiting to be compressed, and the previous window's overlap)."""

    layers: int
    rate: int
    entry_elements: int
    state_elements: int


@dataclass(frozen=True, slots=True)
class KvLayout:
    """A model's cache as a serving engine lays it out (per layer kind, before tensor
    parallelism and dtype)."""

    full_layers: int
    sliding_layers: int
    window: int
    linear_layers: int
    kv_heads: int
    head_dim: int
    mla_latent: int = 0
    """``kv_lora_rank + qk_rope_head_dim`` for MLA models, else 0."""
    state_elements: int = 0
    """Elements of one request's fixed state in one linear-attention or Mamba layer, before
    tensor parallelism (recurrent state plus convolution state)."""
    full_kv_heads: int = 0
    full_head_dim: int = 0
    """The full-attention layers' key/value heads and head width where they differ from the
    sliding layers' (Gemma 4); 0: the same as ``kv_heads`` and ``head_dim``."""
    value_head_dim: int = 0
    """The values' width where it differs from the keys' ``head_dim`` (MiMo-V2-Flash: 128
    against 192); 0: the same."""
    shared_kv: bool = False
    """Keys and values are one tensor (DeepSeek-V4's shared key/value head): kept once."""
    compressed: tuple[CompressedCache, ...] = ()
    indexer_layers: int = 0
    indexer_dim: int = 0
    """Layers that keep an indexer key of ``indexer_dim`` values per token beside their keys
    and values (MiniMax-M3's lightning indexer): one head, so every rank keeps all of it."""

    @property
    def is_mla(self) -> bool:
        return self.mla_latent > 0

    def kv_heads_per_gpu(self, tp: int) -> int:
        """vLLM's ``get_num_kv_heads``: ``max(1, kv_heads // tp)``; MLA always 1."""
        return 1 if self.is_mla else max(1, self.kv_heads // tp)

    def token_layer_bytes(self, tp: int, dtype_bytes: int) -> int:
        """One token's keys and values in one (sliding, or uniform) attention layer on one
        GPU."""
        if self.is_mla:
            return self.mla_latent * dtype_bytes
        if self.shared_kv:
            return self.kv_heads_per_gpu(tp) * self.head_dim * dtype_bytes
        return (self.kv_heads_per_gpu(tp) * (self.head_dim + (self.value_head_dim or self.head_dim))
                * dtype_bytes)

    def full_token_layer_bytes(self, tp: int, dtype_bytes: int) -> int:
        """One token's keys and values in one full-attention layer on one GPU (its own heads
        and width where the model gives them, vLLM's ``max(1, heads // tp)`` as for the
        others)."""
        if not self.full_kv_heads:
            return self.token_layer_bytes(tp, dtype_bytes)
        heads = max(1, self.full_kv_heads // tp)
        key = self.full_head_dim or self.head_dim
        return heads * (key + (self.value_head_dim or key)) * dtype_bytes

    def compressed_token_bytes(self, dtype_bytes: int) -> int:
        """What one more token costs in the compressed layers on one GPU, on average (one entry
        per ``rate`` tokens, rounded up; one head, so the same on every rank)."""
        return sum(-(-kind.layers * kind.entry_elements * dtype_bytes // kind.rate)
                   for kind in self.compressed)

    def indexer_token_bytes(self, dtype_bytes: int) -> int:
        """One token's indexer keys over the indexed layers on one GPU (one head, replicated)."""
        return self.indexer_layers * self.indexer_dim * dtype_bytes

    def compressed_request_bytes(self, context: int, dtype_bytes: int) -> int:
        """A request's compressed entries (one per complete window) and the fixed buffers of
        the compressed layers, on one GPU."""
        return sum(kind.layers * ((context // kind.rate) * kind.entry_elements * dtype_bytes
                                  + kind.state_elements * STATE_DTYPE_BYTES)
                   for kind in self.compressed)

    def bytes_per_token(self, tp: int, dtype_bytes: int) -> int:
        """What one more token of a request costs on one GPU while it is within every window:
        keys and values in every attention layer (full and sliding)."""
        return (self.full_layers * self.full_token_layer_bytes(tp, dtype_bytes)
                + self.sliding_layers * self.token_layer_bytes(tp, dtype_bytes)
                + self.compressed_token_bytes(dtype_bytes) + self.indexer_token_bytes(dtype_bytes))

    def state_bytes(self, tp: int, padded: bool = False) -> int:
        """One request's fixed state across the linear-attention/Mamba layers on one GPU, in the
        model's dtype whatever the KV cache's (vLLM's ``mamba_ssm_cache_dtype`` "auto"); with
        ``padded``, over vLLM's padding layers too (:meth:`grouped_layers`)."""
        linear = self.grouped_layers(padded)[2]
        return linear * -(-self.state_elements // tp) * STATE_DTYPE_BYTES

    def grouped_layers(self, padded: bool = True) -> tuple[int, int, int]:
        """Full, sliding and linear layers as vLLM's hybrid manager lays them out: the layers of
        each kind are cut into groups of one size, the last group of a kind padded with empty
        layers that still take their share of every block (``kv_cache_utils.py``
        ``_get_kv_cache_groups_uniform_page_size``, v0.11.0: "Add N padding layers, may waste at
        most x% KV cache memory"). The group size is the smallest kind's count, or the largest's
        when that is under :data:`GROUP_SIZE_SPREAD` times the smallest. Gemma 3 27B's 52 sliding
        and 10 full layers become 60 and 10 (vLLM 0.19.0 logged 8 padding layers, 15.38 %). A
        model of one kind is not grouped, nor any model with ``padded`` off (SGLang and llama.cpp
        keep no such groups)."""
        counts = (self.full_layers, self.sliding_layers, self.linear_layers)
        present = [count for count in counts if count]
        if not padded or len(present) < 2:
            return counts
        size = min(present)
        if max(present) < size * GROUP_SIZE_SPREAD:
            size = max(present)
        full, sliding, linear = (_round_up(count, size) for count in counts)
        return full, sliding, linear

    def pool_bytes_per_token(self, tp: int, dtype_bytes: int) -> int:
        """What one token of the pool costs on one GPU once the hybrid manager's padding layers
        are counted (:meth:`grouped_layers`); :meth:`bytes_per_token` without a hybrid's padding."""
        full, sliding, _ = self.grouped_layers()
        return (full * self.full_token_layer_bytes(tp, dtype_bytes)
                + sliding * self.token_layer_bytes(tp, dtype_bytes)
                + self.compressed_token_bytes(dtype_bytes) + self.indexer_token_bytes(dtype_bytes))

    def request_bytes(self, context: int, tp: int, dtype_bytes: int, batched_tokens: int,
                      padded: bool = True) -> int:
        """One request of ``context`` tokens, as vLLM's hybrid manager reserves it: full layers
        every token (block-rounded), sliding layers ``min(window - 1 + batched, context)``
        tokens plus a block, linear layers their fixed state; each kind over its padded layer
        count (:meth:`grouped_layers`)."""
        full, sliding, _ = self.grouped_layers(padded)
        per_layer = self.token_layer_bytes(tp, dtype_bytes)
        full_tokens = _round_up(context, BLOCK_TOKENS)
        kept = min(self.window - 1 + batched_tokens, context) if self.sliding_layers else 0
        sliding_tokens = _round_up(kept, BLOCK_TOKENS) + BLOCK_TOKENS if kept else 0
        return (full_tokens * (full * self.full_token_layer_bytes(tp, dtype_bytes)
                               + self.indexer_token_bytes(dtype_bytes))
                + sliding * sliding_tokens * per_layer + self.state_bytes(tp, padded)
                + self.compressed_request_bytes(context, dtype_bytes))

    def longest_context(self, capacity_bytes: int, concurrency: int, tp: int, dtype_bytes: int,
                        batched_tokens: int, limit: int, padded: bool = True) -> int:
        """The longest context (a multiple of the block, at most ``limit``) that ``concurrency``
        requests can each hold in ``capacity_bytes``: closed form for the full layers, the
        sliding layers at their cap (exact once the context passes the window)."""
        per_request = capacity_bytes // max(concurrency, 1)
        if self.request_bytes(BLOCK_TOKENS, tp, dtype_bytes, batched_tokens, padded) > per_request:
            return 0
        if self.request_bytes(limit, tp, dtype_bytes, batched_tokens, padded) <= per_request:
            return limit
        full, sliding, _ = self.grouped_layers(padded)
        per_layer = self.token_layer_bytes(tp, dtype_bytes)
        fixed = self.state_bytes(tp, padded) + self.compressed_request_bytes(0, dtype_bytes)
        if sliding:
            cap = _round_up(self.window - 1 + batched_tokens, BLOCK_TOKENS) + BLOCK_TOKENS
            fixed += sliding * cap * per_layer
        full_cost = (full * self.full_token_layer_bytes(tp, dtype_bytes)
                     + self.compressed_token_bytes(dtype_bytes)
                     + self.indexer_token_bytes(dtype_bytes))
        if full_cost == 0:
            return limit
        tokens = (per_request - fixed) // full_cost // BLOCK_TOKENS * BLOCK_TOKENS
        return max(0, min(tokens, limit))


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


class KvLayoutError(EngineError):
    """A config field the KV reader cannot use; ``field`` names it."""


def kv_layout(config: Mapping[str, object], shape: ModelShape | None = None) -> KvLayout:
    """The KV layout of a Hugging Face ``config.json``: full, sliding and linear layers. A
    multimodal checkpoint's language model is read from its ``text_config``. With the model's
    ``shape`` (:mod:`app.engine.shapes`, whose builders know each family's defaults), layers,
    key/value heads and head width come from it; the layout fields from the config."""
    if not isinstance(config, Mapping):
        raise KvLayoutError("config", "config_not_object")
    nested = config.get("text_config")
    if isinstance(nested, Mapping):
        config = {**config, **{k: v for k, v in nested.items() if v is not None}}
    if config.get("model_type") == "longcat_flash":
        config = _longcat_sublayers(config)
    if config.get("model_type") in STEP3P7_TYPES:
        config = serving_layer_types(config, shape.num_layers if shape else None)
    cfg = _Reader(config)
    if config.get("model_type") in GEMMA4_MODEL_TYPES:
        return _gemma4_layout(cfg)
    if config.get("model_type") == "mimo_v2_flash":
        return _mimo_layout(cfg)
    if config.get("model_type") == "deepseek_v4":
        return _deepseek_v4_layout(cfg)
    if config.get("model_type") == "granitemoehybrid":
        return _granite_hybrid_layout(config)
    if config.get("model_type") == "falcon_h1":
        return _falcon_h1_layout(config)
    if config.get("model_type") in ("exaone_moe", "afmoe"):  # the config class's sliding layout
        defaults = EXAONE_MOE_LAYOUT if config.get("model_type") == "exaone_moe" else {
            **AFMOE_LAYOUT,
            "sliding_window_pattern": config.get("global_attn_every_n_layers")
            or AFMOE_LAYOUT["sliding_window_pattern"]}
        config = {**defaults, **config}
        cfg = _Reader(config)
    if shape is not None:
        layers, kv_heads, head_dim = shape.num_layers, shape.num_kv_heads, shape.head_dim
    else:
        layers = cfg.integer("num_hidden_layers", "n_layer")
        heads = cfg.integer("num_attention_heads", "n_head")
        kv_heads = cfg.optional("num_key_value_heads") or heads
        head_dim = cfg.optional("head_dim") or cfg.integer("hidden_size", "n_embd") // heads
    latent = 0
    if cfg.optional("kv_lora_rank") is not None:
        latent = cfg.integer("kv_lora_rank") + cfg.integer("qk_rope_head_dim")
    kinds = _layer_kinds(cfg, layers)
    full, sliding = kinds.get(FULL, 0), kinds.get(SLIDING, 0)
    window = 0
    if sliding:
        window = cfg.optional("sliding_window") or cfg.optional("attention_chunk_size") or 0
        if not window:  # sliding layers without a window hold every token
            full, sliding = full + sliding, 0
    linear = kinds.get(LINEAR, 0) + kinds.get(MAMBA, 0) + kinds.get(CONV, 0)
    state = _state_elements(cfg, kinds) if linear else 0
    layout = KvLayout(
        full_layers=full, sliding_layers=sliding, window=window, linear_layers=linear,
        kv_heads=kv_heads, head_dim=head_dim, mla_latent=latent, state_elements=state,
    )
    if config.get("model_type") in MINIMAX_M3_TYPES:
        indexed, width = indexer_cache(Config(config))
        layout = replace(layout, indexer_layers=indexed, indexer_dim=width)
    return layout


def _longcat_sublayers(config: Mapping[str, object]) -> Mapping[str, object]:
    """LongCat-Flash caches one MLA latent per attention sublayer, two in each of its
    ``num_layers`` decoder layers (``architectures.longcat``); its release names no
    ``num_hidden_layers``."""
    if config.get("num_hidden_layers") is not None:
        return config
    pairs = _Reader(config).optional("num_layers") or LONGCAT_DEFAULTS["num_layers"]
    return {**config, "num_hidden_layers": SUBLAYERS_PER_LAYER * pairs}


def _gemma4_layout(cfg: _Reader) -> KvLayout:
    """Gemma 4: only the layers with their own keys and values hold a cache, the full ones
    at their own heads and width (:func:`app.engine.architectures.gemma4.cache_layers`); a window of
    ``Gemma4TextConfig``'s default 512 where the config names none."""
    layers = cache_layers(cfg.raw)
    window = cfg.optional("sliding_window") or GEMMA4_WINDOW
    return KvLayout(
        full_layers=layers.full, sliding_layers=layers.sliding, window=window, linear_layers=0,
        kv_heads=layers.kv_heads, head_dim=layers.head_dim, full_kv_heads=layers.full_kv_heads,
        full_head_dim=layers.full_head_dim,
    )


def _mimo_layout(cfg: _Reader) -> KvLayout:
    """MiMo-V2-Flash: full layers of ``num_key_value_heads``, sliding layers of twice as many,
    keys of ``head_dim`` and values of ``v_head_dim`` (``MiMoV2FlashAttention``, which reads no
    ``swa_*`` field: the release's ``swa_num_key_value_heads`` 8 is the doubled 4)."""
    layers = cfg.integer("num_hidden_layers")
    kv_heads = cfg.integer("num_key_value_heads")
    if cfg.raw.get("layer_types") is not None:
        kinds = _layer_kinds(cfg, layers)
        full, sliding = kinds.get(FULL, 0), kinds.get(SLIDING, 0)
    else:
        pattern = cfg.raw.get("hybrid_layer_pattern")
        if pattern is None:
            pattern = [0 if i == 0 or not (i + 1) % MIMO_FULL_EVERY else 1 for i in range(layers)]
        if not isinstance(pattern, list) or len(pattern) != layers \
                or not set(pattern) <= {0, 1}:
            raise KvLayoutError("hybrid_layer_pattern", "layer_types_length", layers=layers)
        sliding = sum(pattern)
        full = layers - sliding
    head_dim = cfg.optional("head_dim") or cfg.integer("hidden_size") // cfg.integer(
        "num_attention_heads")
    return KvLayout(
        full_layers=full, sliding_layers=sliding, window=cfg.integer("sliding_window"),
        linear_layers=0, kv_heads=MIMO_SWA_HEADS_FACTOR * kv_heads, head_dim=head_dim,
        full_kv_heads=kv_heads, value_head_dim=cfg.optional("v_head_dim") or head_dim)


def _deepseek_v4_layout(cfg: _Reader) -> KvLayout:
    """DeepSeek-V4: a sliding window in every layer over one shared key/value head, and the
    CSA and HCA layers' compressed entries (:func:`app.engine.architectures.deepseek.v4_cache`)
    with their fixed buffers: a CSA layer holds up to ``rate - 1`` tokens' kv and gate
    projections (2 x head_dim each, and 2 x index_head_dim each for its indexer) and the
    previous window's overlap (head_dim and index_head_dim, kv and gate); an HCA layer up to
    ``rate - 1`` tokens' kv and gate (head_dim each)."""
    layers = cfg.integer("num_hidden_layers")
    cache = v4_cache(cfg.raw)
    csa_width = cache.head_dim + cache.index_dim
    return KvLayout(
        full_layers=0, sliding_layers=layers, window=cfg.optional("sliding_window") or V4_WINDOW,
        linear_layers=0, kv_heads=1, head_dim=cache.head_dim, shared_kv=True,
        compressed=(
            CompressedCache(cache.csa_layers, cache.csa_rate, csa_width,
                            (cache.csa_rate - 1) * 4 * csa_width + 2 * csa_width),
            CompressedCache(cache.hca_layers, cache.hca_rate, cache.head_dim,
                            (cache.hca_rate - 1) * 2 * cache.head_dim),
        ))


def _granite_hybrid_layout(config: Mapping[str, object]) -> KvLayout:
    """Granite 4.0 H: its attention layers cache keys and values, its Mamba-2 layers (all of
    them where ``layer_types`` is absent, the config class's default) hold one state per
    request: heads x head width x state size, and a convolution over x, B and C of
    ``mamba_d_conv`` - 1 tokens (vLLM ``MambaStateShapeCalculator``), sizes and defaults as
    :mod:`app.engine.architectures.granite_hybrid` reads them."""
    cfg = Config(config)
    layers = cfg.integer("num_hidden_layers")
    hidden = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    mamba, attention = granite_layer_kinds(config.get("layer_types"), layers)
    m_heads, m_head_dim, inner, state, groups, kernel = granite_mamba_dims(cfg, hidden)
    return KvLayout(
        full_layers=attention, sliding_layers=0, window=0, linear_layers=mamba,
        kv_heads=cfg.integer("num_key_value_heads", default=heads),
        head_dim=cfg.optional_int("head_dim") or hidden // heads,
        state_elements=m_heads * m_head_dim * state + (kernel - 1) * (inner + 2 * groups * state)
        if mamba else 0,
    )


def _falcon_h1_layout(config: Mapping[str, object]) -> KvLayout:
    """Falcon-H1: attention and a Mamba-2 mixer in every layer, so every layer caches keys
    and values and holds a Mamba state per request (heads x head width x state size, and
    ``mamba_d_conv`` - 1 tokens of the convolution over x, B and C), the widths and defaults
    as :mod:`app.engine.architectures.falcon_h1` reads them."""
    cfg = Config(config)
    att = attention_dims(cfg)
    heads, head_dim, inner, state, groups, kernel = granite_mamba_dims(
        cfg, att.hidden, falcon_h1_inner(cfg))
    layers = cfg.integer("num_hidden_layers")
    return KvLayout(
        full_layers=layers, sliding_layers=0, window=0, linear_layers=layers,
        kv_heads=att.kv_heads, head_dim=att.head_dim,
        state_elements=heads * head_dim * state + (kernel - 1) * (inner + 2 * groups * state),
    )


def _layer_kinds(cfg: _Reader, layers: int) -> dict[str, int]:
    """How many layers of each kind: from ``layer_types`` when the config lists them, else
    from the family's pattern (Gemma 2 alternates, Gemma 3 ``sliding_window_pattern``,
    Qwen3-Next ``full_attention_interval``, Nemotron-H ``hybrid_override_pattern``, a model-wide
    ``sliding_window`` such as Mistral 7B v0.1's)."""
    listed = cfg.raw.get("layer_types")
    if listed is not None:
        if not isinstance(listed, list) or len(listed) != layers:
            raise KvLayoutError("layer_types", "layer_types_length", layers=layers)
        counts: dict[str, int] = {}
        for value in listed:
            kind = _ALIASES.get(value) if isinstance(value, str) else None
            if kind is None:
                raise KvLayoutError("layer_types", "layer_type_unknown", value=repr(value),
                                    kinds=", ".join(LAYER_KINDS))
            counts[kind] = counts.get(kind, 0) + 1
        return counts
    attention_layers = cfg.raw.get("full_attn_idxs")
    if cfg.raw.get("model_type") == "lfm2" and isinstance(attention_layers, list):
        # LFM2 (Lfm2Config): these layers attend, the others are short convolutions, each with
        # a fixed state per request (:func:`_state_elements`)
        full = sum(1 for i in set(attention_layers) if isinstance(i, int) and 0 <= i < layers)
        return {FULL: full, CONV: layers - full}
    pattern = cfg.raw.get("hybrid_override_pattern")
    if pattern is not None:
        if not isinstance(pattern, str) or len(pattern) != layers:
            raise KvLayoutError("hybrid_override_pattern", "layer_types_length", layers=layers)
        # Nemotron-H: "*" attention, "M" Mamba-2, "-" MLP-only and "E" MoE layers hold no cache
        return {FULL: pattern.count("*"), MAMBA: pattern.count("M")}
    model_type = cfg.raw.get("model_type")
    if model_type == "laguna":  # LagunaConfig: every layer full unless layer_types says
        return {FULL: layers}
    if model_type == "olmo3":  # Olmo3Config: every fourth layer full, the others slide
        full = layers // OLMO3_FULL_EVERY
        return {FULL: full, SLIDING: layers - full}
    interval = cfg.optional("full_attention_interval")
    if interval is not None:
        full = layers // interval
        return {FULL: full, LINEAR: layers - full}
    window = cfg.optional("sliding_window")
    if window is None or cfg.raw.get("use_sliding_window") is False:
        return {FULL: layers}
    if model_type == "gemma2":  # Gemma2DecoderLayer: even layers slide (is_sliding = not i % 2)
        return {SLIDING: (layers + 1) // 2, FULL: layers // 2}
    step = cfg.optional("sliding_window_pattern")
    if step is None and model_type in ("gemma3", "gemma3_text"):
        step = GEMMA3_SLIDING_PATTERN
    if step is not None:  # Gemma 3: every step-th layer is global
        return {FULL: layers // step, SLIDING: layers - layers // step}
    return {SLIDING: layers}


def _state_elements(cfg: _Reader, kinds: Mapping[str, int]) -> int:
    """One request's fixed state in one layer: gated DeltaNet's recurrent state
    (value heads x key dim x value dim) and its convolution over q, k and v; or Mamba2's SSM
    state (heads x head dim x state) and its convolution over x, B and C (vLLM
    ``mamba_utils.MambaStateShapeCalculator``); or a short convolution's
    ``(conv_L_cache - 1) x conv_dim`` (LFM2: ``short_conv_state_shape``)."""
    if kinds.get(CONV):
        width = cfg.optional("conv_dim") or cfg.integer("hidden_size")
        return (cfg.integer("conv_L_cache") - 1) * width
    if kinds.get(LINEAR):
        key_heads = cfg.integer("linear_num_key_heads")
        value_heads = cfg.integer("linear_num_value_heads")
        key_dim = cfg.integer("linear_key_head_dim")
        value_dim = cfg.integer("linear_value_head_dim")
        kernel = cfg.integer("linear_conv_kernel_dim")
        conv_width = 2 * key_heads * key_dim + value_heads * value_dim
        return value_heads * key_dim * value_dim + (kernel - 1) * conv_width
    heads = cfg.integer("mamba_num_heads")
    head_dim = cfg.integer("mamba_head_dim")
    state = cfg.integer("ssm_state_size", "mamba_d_state")
    groups = cfg.optional("n_groups") or cfg.optional("mamba_n_groups") or 1
    kernel = cfg.optional("conv_kernel") or cfg.optional("mamba_d_conv") or 4
    conv_width = heads * head_dim + 2 * groups * state
    return heads * head_dim * state + (kernel - 1) * conv_width


class _Reader:
    """Bounded integers from a config, errors naming the field."""

    def __init__(self, raw: Mapping[str, object]) -> None:
        if not isinstance(raw, Mapping):
            raise KvLayoutError("config", "config_not_object")
        self.raw = raw

    def integer(self, *names: str) -> int:
        for name in names:
            value = self.optional(name)
            if value is not None:
                return value
        raise KvLayoutError(names[0], "config_missing")

    def optional(self, name: str) -> int | None:
        value = self.raw.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise KvLayoutError(name, "positive_integer", value=repr(value))
        bound = KV_FIELD_BOUNDS[name]
        if value > bound:
            raise KvLayoutError(name, "above_bound", bound=bound, value=value)
        return value
