"""MiniMax-M3 (``minimax_m3_vl``: the checkpoint, vision tower included; ``minimax_m3_vl_text``:
the language model alone; ``minimax_m3``: the flat text config MiniMaxAI/MiniMax-M3 names,
a type transformers 5.24 does not register, built as the language model its
``MiniMaxM3VLTextConfig`` makes of the same keys: 426,174,565,632 parameters, as from the
multimodal export's ``text_config``).

Mirrors transformers 5's ``modeling_minimax_m3_vl`` (transformers 5.24.0, counted on the meta
device by ``tools/model_counts.py`` and ``tools/moe_counts.py``):

* attention without biases, an RMSNorm over each query and key head; on the layers
  ``layer_types`` marks ``minimax_m3_sparse`` (a release names them in
  ``sparse_attention_config.sparse_attention_freq``) a lightning indexer beside it: ``q_proj``
  (hidden -> ``index_n_heads`` x ``index_head_dim``), ``k_proj`` (hidden -> one head) and an
  RMSNorm over each;
* an MLP per layer as ``mlp_layer_types`` lists them (a release: ``moe_layer_freq``): a dense
  one, a fused ``gate_up_proj`` (hidden -> 2 x ``dense_intermediate_size``) and ``down_proj``;
  or a sparse one, a router (``num_local_experts`` x hidden, a parameter; its score correction
  is a buffer), fused experts of ``intermediate_size`` (``num_experts_per_tok`` a token) and a
  shared expert shaped like the dense MLP, ``shared_intermediate_size`` wide;
* two RMSNorms a layer, one after the last; the multi-token-prediction module
  (``num_mtp_modules``) is not built.

LoRA ``all-linear`` (PEFT 0.21.2): its conversion table has no entry for this model type, so
PEFT adapts every ``nn.Linear`` of the language model (attention, indexer, dense and shared
MLPs) and neither the router nor the fused experts (adapted under the per-expert convention):
74,065,920 parameters at r16 on MiniMax-M3 (tests/fixtures/hf_configs/expected_hybrid.json).

The vision tower (``MiniMaxM3VLVisionModel``: a Conv3d patch embedding without bias, a
LayerNorm, CLIP encoder layers with biases) and its projector (``MiniMaxM3VLMultiModalProjector``:
``linear_1``/``linear_2`` per patch, ``merge_linear_1``/``merge_linear_2`` over
``spatial_merge_size``² patches, all with biases) are counted beside it
(:attr:`ModelShape.tower_params`), frozen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Final

from app.engine.architectures.kit import (
    Config,
    attention_dims,
    experts_per_token,
    fused_experts,
    separate_attention,
)
from app.engine.architectures.moe import Moe, moe_shape
from app.engine.architectures.multimodal import sub_config, with_defaults
from app.engine.shapes import LinearSpec, ModelShape, ShapeError

TEXT_DEFAULTS: Final[Mapping[str, object]] = {
    "vocab_size": 200_064, "hidden_size": 6144, "intermediate_size": 3072,
    "num_hidden_layers": 60, "num_attention_heads": 64, "num_key_value_heads": 4,
    "head_dim": 128, "max_position_embeddings": 524_288, "num_experts_per_tok": 4,
    "num_local_experts": 128, "dense_intermediate_size": 12_288,
    "shared_intermediate_size": 3072, "index_n_heads": 4, "index_head_dim": 128,
}
"""``MiniMaxM3VLTextConfig`` defaults (transformers 5.24) of the sizes a config may leave out."""

VISION_DEFAULTS: Final[Mapping[str, object]] = {
    "hidden_size": 1280, "intermediate_size": 5120, "num_hidden_layers": 32,
    "num_channels": 3, "patch_size": 14, "temporal_patch_size": 2, "spatial_merge_size": 2,
}
"""``MiniMaxM3VLVisionConfig`` defaults (transformers 5.24)."""

PROJECTOR_HIDDEN: Final = 6144
"""``MiniMaxM3VLConfig.projector_hidden_size`` default (transformers 5.24)."""

SPARSE_LAYER: Final = "minimax_m3_sparse"
"""The ``layer_types`` entry of a layer with the lightning indexer."""

LEGACY_INDEXER: Final[Mapping[str, str]] = {
    "index_n_heads": "sparse_num_index_heads", "index_head_dim": "sparse_index_dim",
}
"""``sparse_attention_config`` names ``MiniMaxM3VLTextConfig`` reads the indexer's sizes from."""


def _layers_with(cfg: Config, listed: str, legacy: tuple[str, object], kinds: tuple[str, str],
                 layers: int, default: int) -> int:
    """How many layers are ``kinds[1]``: from the per-layer list the config class reads
    (``listed``), else from the release's 0/1 list (``legacy``: its name and value), else
    ``default`` (``MiniMaxM3VLTextConfig``: every MLP sparse, no indexer). Counted with
    ``list.count``: no Python step per layer (tests/engine/test_config_bounds.py)."""
    names: tuple[object, object] = kinds
    field, values = listed, cfg.raw.get(listed)
    if values is None and legacy[1] is not None:
        (field, values), names = legacy, (0, 1)
    if values is None:
        return default
    if (not isinstance(values, list) or len(values) != layers
            or values.count(names[0]) + values.count(names[1]) != layers):
        raise ShapeError(field, "layer_kinds", layers=layers, kinds=", ".join(map(str, names)))
    return values.count(names[1])


def _text_config(cfg: Config) -> Config:
    """The language model's config with ``MiniMaxM3VLTextConfig``'s defaults and the release's
    indexer sizes (:data:`LEGACY_INDEXER`)."""
    sparse_cfg = sub_config(cfg.raw, "sparse_attention_config")
    return with_defaults(cfg.raw, {**TEXT_DEFAULTS, **{
        name: sparse_cfg[legacy] for name, legacy in LEGACY_INDEXER.items()
        if legacy in sparse_cfg and name not in cfg.raw}})


def _indexed_layers(text: Config, layers: int) -> int:
    """How many layers carry the lightning indexer (``layer_types``, else the release's
    ``sparse_attention_freq``, else none)."""
    sparse_cfg = sub_config(text.raw, "sparse_attention_config")
    return _layers_with(text, "layer_types", ("sparse_attention_freq",
                                              sparse_cfg.get("sparse_attention_freq")),
                        ("full_attention", SPARSE_LAYER), layers, 0)


def indexer_cache(cfg: Config) -> tuple[int, int]:
    """The lightning indexer's cache: how many layers keep it and how wide its key is. Each
    such layer keeps one key of ``index_head_dim`` values per token beside the attention's keys
    and values (transformers 5.24 ``MiniMaxM3VLSparseCacheLayer.update_index``: ``idx_k``,
    one head, ``[batch, 1, tokens, index_head_dim]``, in the model's dtype: ``k_proj`` of the
    hidden states through an RMSNorm that returns its input's dtype)."""
    text = _text_config(cfg)
    return (_indexed_layers(text, text.integer("num_hidden_layers")),
            text.integer("index_head_dim"))


def minimax_m3_text(cfg: Config, model_type: str = "minimax_m3_vl_text") -> ModelShape:
    """The language model (module docstring)."""
    text = _text_config(cfg)
    att = attention_dims(text)
    layers = text.integer("num_hidden_layers")
    sparse = _layers_with(text, "mlp_layer_types",
                          ("moe_layer_freq", text.raw.get("moe_layer_freq")),
                          ("dense", "sparse"), layers, layers)
    indexed = _indexed_layers(text, layers)
    experts = text.integer("num_local_experts")
    moe = Moe(experts, experts_per_token(text, experts, "num_local_experts"),
              text.integer("intermediate_size"), sparse)
    dense_width = text.integer("dense_intermediate_size")
    shared_width = text.integer("shared_intermediate_size")
    index_heads, index_dim = text.integer("index_n_heads"), text.integer("index_head_dim")
    linears = separate_attention(att, layers, qkv_bias=False, o_bias=False)
    if indexed:
        linears += [LinearSpec("q_proj", "qkv", att.hidden, index_heads * index_dim, indexed),
                    LinearSpec("k_proj", "qkv", att.hidden, index_dim, indexed)]
    linears += fused_experts(att.hidden, moe.width, sparse, experts, moe.active,
                             peft_fused=False, router_target=False)
    for width, count in ((shared_width, sparse), (dense_width, layers - sparse)):
        if count:
            linears += [LinearSpec("gate_up_proj", "gate_up", att.hidden, 2 * width, count),
                        LinearSpec("down_proj", "down", width, att.hidden, count)]
    norm = (2 * layers + 1) * att.hidden + 2 * layers * att.head_dim + 2 * indexed * index_dim
    return moe_shape(text, model_type=model_type, att=att, layers=layers,
                     intermediate=dense_width, linears=linears, norm=norm, other=0, moe=moe,
                     qk_norm=True)


def minimax_m3_vision_params(cfg: Config, text_hidden: int) -> int:
    """The vision tower and projector (module docstring)."""
    vision = with_defaults(sub_config(cfg.raw, "vision_config"), VISION_DEFAULTS)
    width, inner = vision.integer("hidden_size"), vision.integer("intermediate_size")
    patch = vision.integer("patch_size")
    embedding = (vision.integer("num_channels") * vision.integer("temporal_patch_size")
                 * patch * patch * width)
    layer = 4 * (width * width + width) + 2 * (width * inner) + inner + width + 2 * 2 * width
    projector = cfg.integer("projector_hidden_size", default=PROJECTOR_HIDDEN)
    merged = text_hidden * vision.integer("spatial_merge_size") ** 2
    projection = (width * projector + projector + 2 * (projector * text_hidden + text_hidden)
                  + merged * projector + projector)
    return embedding + 2 * width + vision.integer("num_hidden_layers") * layer + projection


def minimax_m3_vl(cfg: Config) -> ModelShape:
    """The checkpoint: the language model of ``text_config``, lm_head untied unless the
    checkpoint or its text model ties it (``MiniMaxM3VLConfig``), the tower beside it."""
    text = Config(sub_config(cfg.raw, "text_config"))
    shape = minimax_m3_text(text, "minimax_m3_vl")
    tied = cfg.flag("tie_word_embeddings", False) or text.flag("tie_word_embeddings", False)
    head = 0 if tied else shape.vocab_size * shape.hidden_size
    return replace(shape, tied_embeddings=tied, split=replace(shape.split, lm_head=head),
                   tower_params=minimax_m3_vision_params(cfg, shape.hidden_size))
