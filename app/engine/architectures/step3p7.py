"""StepFun's Step-3.7-Flash (``step3p7``: the checkpoint, its language model and vision tower).

Mirrors transformers 5's ``modeling_step3p7`` (transformers 5.24.0, counted on the meta device
by ``tools/newer_moe_counts.py`` with PEFT 0.21.2; ``Step3p7ForConditionalGeneration`` is the
only class that builds a language model with a head):

* the language model (``text_config``, ``Step3p7TextConfig``): attention with
  ``attention_bias`` on q/k/v/o, an RMSNorm over each query and key head, and ``g_proj``
  (hidden -> one sigmoid gate per head where ``gating`` is true or ``"per-head"``, else one
  per head channel; no bias); ``sliding_attention`` layers have their own query heads
  (``num_sliding_attention_heads``, a hub config's ``attention_other_setting``);
* an MLP per layer as ``mlp_layer_types`` lists them (a hub config: ``moe_layers_enum``, the
  sparse layers' indices; else the first three dense): a SwiGLU MLP of ``intermediate_size``
  with ``mlp_bias``, or a router (an ``nn.Parameter``, experts x hidden; its score correction
  is a buffer), fused experts of ``moe_intermediate_size`` (``n_routed_experts``,
  ``num_experts_per_tok`` a token) and a SwiGLU shared expert of ``share_expert_dim``;
* per-layer lists a hub config pads with its ``num_nextn_predict_layers`` MTP layers are cut
  to ``num_hidden_layers`` (the MTP layers are not built); two RMSNorms a layer, one after the
  last; ``lm_head`` untied unless the checkpoint's own ``tie_word_embeddings`` ties it.

LoRA ``all-linear`` (PEFT 0.21.2): its conversion table has no entry for this type, so it
adapts every ``nn.Linear`` of the language model (attention and its gate, the dense and
shared MLPs) and neither the router nor the fused experts (adapted under the per-expert
convention): 41,112,576 parameters at r16 with the class defaults. On the whole checkpoint
PEFT also adapts the tower's linears (25,190,400 more); the engine keeps the tower frozen
(tests/fixtures/hf_configs/expected_newer_moe.json).

The vision tower (``Step3p7VisionModel``: a Conv2d patch embedding without bias, learned
positions, a LayerNorm, encoder layers with biases and two layer scales, two stride-2 Conv2d
downsamplers doubling the width each) and its projector (``multi_modal_projector``: 4 x
width -> hidden, ``projector_bias``) are counted beside it (:attr:`ModelShape.tower_params`),
frozen: 1,981,014,784 with ``Step3p7VisionConfig``'s defaults.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Final

from app.engine.architectures.kit import (
    Attention,
    Config,
    attention_dims,
    experts_per_token,
    fused_experts,
    gated_mlp,
)
from app.engine.architectures.laguna import gated_attention
from app.engine.architectures.moe import Moe, layer_kinds, moe_shape
from app.engine.architectures.multimodal import sub_config, with_defaults
from app.engine.shapes import LinearSpec, ModelShape, ShapeError

TEXT_DEFAULTS: Final[Mapping[str, object]] = {
    "vocab_size": 128_815, "hidden_size": 4096, "intermediate_size": 11_264,
    "num_hidden_layers": 45, "num_attention_heads": 64, "num_key_value_heads": 8,
    "head_dim": 128, "max_position_embeddings": 128_000, "num_experts_per_tok": 8,
    "n_routed_experts": 288, "moe_intermediate_size": 1280, "share_expert_dim": 1280,
}
"""``Step3p7TextConfig`` defaults (transformers 5.24) of the sizes a config may leave out."""

FIRST_SPARSE: Final = 3
"""``Step3p7TextConfig``: without ``mlp_layer_types`` or ``moe_layers_enum``, layers from
index 3 on are sparse (Step-3.7-Flash's own split: 0-2 dense)."""

VISION_DEFAULTS: Final[Mapping[str, object]] = {
    "hidden_size": 1536, "num_hidden_layers": 47, "num_channels": 3, "image_size": 728,
    "patch_size": 14, "mlp_ratio": 8960 / 1536,
}
"""``Step3p7VisionConfig`` defaults (transformers 5.24); its MLP is ``int(hidden_size *
mlp_ratio)`` wide, whatever ``intermediate_size`` says."""

VISION_ALIASES: Final[Mapping[str, str]] = {"width": "hidden_size", "layers": "num_hidden_layers"}
"""A hub config's vision keys ``Step3p7VisionConfig`` reads first."""

DOWNSAMPLE_KERNEL: Final = 3
"""``Step3p7VisionModel.downsampler1``/``2``: 3 x 3 convolutions with bias."""

SLIDING: Final = "sliding_attention"
"""The ``layer_types`` entry whose layers take ``num_sliding_attention_heads``."""


def _per_layer(cfg: Config, name: str, layers: int) -> list[object] | None:
    """A per-layer list, cut to ``layers`` where a hub config pads it with the MTP layers."""
    listed = cfg.raw.get(name)
    if listed is None:
        return None
    padded = layers + cfg.integer("num_nextn_predict_layers", default=0)
    if not isinstance(listed, list) or len(listed) not in (layers, padded):
        raise ShapeError(name, "layer_types_length", layers=layers)
    return listed[:layers]


def _sparse_layers(cfg: Config, layers: int) -> int:
    """Layers whose MLP is sparse: ``mlp_layer_types``, else ``moe_layers_enum``, else all
    from :data:`FIRST_SPARSE` on."""
    kinds = _per_layer(cfg, "mlp_layer_types", layers)
    if kinds is not None:
        return layer_kinds("mlp_layer_types", kinds, layers, ("dense", "sparse"))
    listed = cfg.raw.get("moe_layers_enum")
    if listed is None:
        return max(layers - FIRST_SPARSE, 0)
    items = listed.split(",") if isinstance(listed, str) else listed
    padded = layers + cfg.integer("num_nextn_predict_layers", default=0)
    if (not isinstance(items, list) or len(items) > padded
            or not all(_LAYER_INDEX.fullmatch(str(i).strip()) for i in items if str(i).strip())):
        raise ShapeError("moe_layers_enum", "layer_kinds", layers=layers, kinds="indices")
    return len({int(i) for i in items if str(i).strip()} & set(range(layers)))


_LAYER_INDEX: Final = re.compile(r"[0-9]{1,7}")
"""One entry of ``moe_layers_enum``: ASCII digits of a layer index (no more entries than
layers, so the check is bounded by the layer bound; Unicode digits that ``int`` refuses and
digit runs past its limit are refused here, as a field error)."""


def _sliding_heads(cfg: Config, att: Attention) -> int:
    """``num_sliding_attention_heads``, else ``attention_other_setting``'s, else the model's."""
    heads = cfg.optional_int("num_sliding_attention_heads")
    if heads is not None:
        return heads
    other = Config(sub_config(cfg.raw, "attention_other_setting"))
    return other.integer("num_attention_heads", default=att.heads)


def _attention(cfg: Config, att: Attention, layers: int) -> list[LinearSpec]:
    """q/k/v/o and the output gate, full and sliding layers apart."""
    gating = cfg.raw.get("gating", True)
    sliding = (_per_layer(cfg, "layer_types", layers) or []).count(SLIDING)
    heads = Counter({att.heads: layers - sliding})
    heads[_sliding_heads(cfg, att)] += sliding
    return gated_attention(att, layers, +heads, bias=cfg.flag("attention_bias", False),
                           per_element=not (gating is True or gating == "per-head"))


def step3p7_text(cfg: Config, tied: bool) -> ModelShape:
    """The language model (module docstring)."""
    text = with_defaults(cfg.raw, TEXT_DEFAULTS)
    att = attention_dims(text)
    layers = text.integer("num_hidden_layers")
    sparse = _sparse_layers(text, layers)
    experts = text.integer("n_routed_experts")
    moe = Moe(experts, experts_per_token(text, experts, "n_routed_experts"),
              text.integer("moe_intermediate_size"), sparse) if sparse else Moe(0, 0, 0, 0)
    intermediate = text.integer("intermediate_size")
    bias = text.flag("mlp_bias", False)
    linears = _attention(text, att, layers)
    linears += fused_experts(att.hidden, moe.width, sparse, experts, moe.active,
                             peft_fused=False, router_target=False)
    if sparse:
        linears += gated_mlp(att.hidden, text.integer("share_expert_dim"), sparse, bias=bias)
    if layers - sparse:
        linears += gated_mlp(att.hidden, intermediate, layers - sparse, bias=bias)
    norm = (2 * layers + 1) * att.hidden + 2 * layers * att.head_dim
    return moe_shape(text, model_type="step3p7", att=att, layers=layers,
                     intermediate=intermediate, linears=linears, norm=norm, other=0, moe=moe,
                     qk_norm=True, tied=tied)


def step3p7_vision_params(cfg: Config, text_hidden: int) -> int:
    """The vision tower and projector (module docstring)."""
    raw = sub_config(cfg.raw, "vision_config")
    vision = with_defaults({**raw, **{name: raw[alias] for alias, name in VISION_ALIASES.items()
                                      if raw.get(alias) is not None}}, VISION_DEFAULTS)
    width, patch = vision.integer("hidden_size"), vision.integer("patch_size")
    ratio = vision.raw["mlp_ratio"]
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 < ratio <= 64:
        raise ShapeError("mlp_ratio", "positive_or_null", value=repr(ratio))
    inner = int(width * ratio)
    positions = (vision.integer("image_size") // patch) ** 2
    embedding = vision.integer("num_channels") * patch * patch * width + positions * width
    layer = 4 * (width * width + width) + 2 * width * inner + inner + width + 6 * width
    kernel = DOWNSAMPLE_KERNEL * DOWNSAMPLE_KERNEL
    downsample = (2 * width * width * kernel + 2 * width
                  + 4 * width * 2 * width * kernel + 4 * width)
    projector = 4 * width * text_hidden + (text_hidden if cfg.flag("projector_bias", False)
                                           else 0)
    return (embedding + 2 * width + vision.integer("num_hidden_layers") * layer + downsample
            + projector)


def serving_layer_types(config: Mapping[str, object],
                        layers: int | None) -> Mapping[str, object]:
    """The language model's config as the serving layout reads it: ``layer_types`` cut to
    ``layers`` (the shape's, else the config's) where a hub config pads it with the MTP layers,
    else every layer full (``Step3p7TextConfig``'s default, whatever ``sliding_window`` says)."""
    text = with_defaults(config, TEXT_DEFAULTS)
    layers = text.integer("num_hidden_layers") if layers is None else layers
    listed = _per_layer(text, "layer_types", layers)
    return {**config, "layer_types": listed or ["full_attention"] * layers}


def step3p7(cfg: Config) -> ModelShape:
    """The checkpoint: the language model of ``text_config``, tied only where the checkpoint's
    own ``tie_word_embeddings`` says so (``Step3p7Config``: False), the tower beside it."""
    tied = cfg.flag("tie_word_embeddings", False)
    shape = step3p7_text(Config(sub_config(cfg.raw, "text_config")), tied)
    return replace(shape, tower_params=step3p7_vision_params(cfg, shape.hidden_size))
