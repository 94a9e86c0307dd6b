"""Multimodal checkpoints: the language model is sized, the vision tower counted beside it.

Gemma 3 (``gemma3``: SigLIP), Mistral Small 3.x (``mistral3``: Pixtral), Qwen3.5
(``qwen3_5``, ``qwen3_5_moe``: Qwen's ViT) and Qwen3-VL (``qwen3_vl``, ``qwen3_vl_moe``: the
same ViT with DeepStack mergers) put a text model (``text_config``) and a vision
encoder with a projector (``vision_config``) in one checkpoint. The text model is what a
fine-tune trains; the tower and projector are loaded with it, frozen and not adapted, and
counted in :attr:`ModelShape.tower_params` (bf16 weights, ``states.TOWER_WEIGHT_BYTES``).
Each tower's count mirrors transformers 5 (``modeling_siglip``, ``modeling_pixtral``,
``modeling_qwen3_5``; the projectors in ``modeling_gemma3``/``modeling_mistral3``), fields left
out taking the config classes' defaults; held to the meta-device count by
``tests/engine/test_hf_configs.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Final

from app.engine.architectures import hybrid
from app.engine.architectures.gemma import gemma2_or_3
from app.engine.architectures.kit import Config
from app.engine.architectures.llama import dense_swiglu, llama_biases
from app.engine.architectures.qwen import qwen3_biases, qwen3_moe
from app.engine.shapes import ModelShape, ShapeError

GEMMA3_TEXT_DEFAULTS: Final[Mapping[str, object]] = {
    "vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216,
    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "max_position_embeddings": 131_072,
}
"""``Gemma3TextConfig`` defaults: released gemma-3 multimodal configs omit most of these."""
SIGLIP_DEFAULTS: Final[Mapping[str, int]] = {
    "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
    "num_channels": 3, "image_size": 224, "patch_size": 16,
}
"""``SiglipVisionConfig`` defaults."""
PIXTRAL_DEFAULTS: Final[Mapping[str, int]] = {
    "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_channels": 3,
    "patch_size": 16,
}
"""``PixtralVisionConfig`` defaults."""
QWEN_VISION_DEFAULTS: Final[Mapping[str, int]] = {
    "depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "in_channels": 3,
    "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2,
    "out_hidden_size": 3584, "num_position_embeddings": 2304,
}
"""``Qwen3_5VisionConfig`` / ``Qwen3_5MoeVisionConfig`` defaults."""
QWEN3_VL_VISION_DEFAULTS: Final[Mapping[str, object]] = {
    **QWEN_VISION_DEFAULTS, "deepstack_visual_indexes": [8, 16, 24],
}
"""``Qwen3VLVisionConfig`` / ``Qwen3VLMoeVisionConfig`` defaults (transformers 5.25): Qwen3.5's,
with the DeepStack layers whose features get a merger of their own."""
MISTRAL3_MERGE: Final = 2
"""``Mistral3Config.spatial_merge_size`` default."""


def sub_config(config: Mapping[str, object], name: str) -> Mapping[str, object]:
    value = config.get(name)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ShapeError(name, "config_not_object")
    return value


def with_defaults(sub: Mapping[str, object], defaults: Mapping[str, object]) -> Config:
    return Config({**defaults, **{k: v for k, v in sub.items() if v is not None}})


def _text(cfg: Config) -> Mapping[str, object]:
    text = sub_config(cfg.raw, "text_config")
    if not text:
        raise ShapeError("text_config", "config_missing")
    return text


def siglip_params(vision: Config, text_hidden: int) -> int:
    """SigLIP vision model (its pooling head only where ``vision_use_head``; Gemma 3 has none) and
    Gemma 3's projector (an hidden x text-hidden matrix and an RMSNorm)."""
    h = vision.integer("hidden_size")
    i = vision.integer("intermediate_size")
    layers = vision.integer("num_hidden_layers")
    patch = vision.integer("patch_size")
    patches = (vision.integer("image_size") // patch) ** 2
    embed = vision.integer("num_channels") * patch * patch * h + h + patches * h
    layer = 4 * (h * h + h) + (h * i + i) + (i * h + h) + 2 * 2 * h
    # The attention-pooling head (probe, multi-head attention, LayerNorm, MLP) when built.
    head = h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * i + i) + (i * h + h) \
        if vision.flag("vision_use_head", True) else 0
    return embed + layers * layer + 2 * h + head + (h * text_hidden + h)


def pixtral_params(vision: Config, text_hidden: int, merge: int, projector_bias: bool) -> int:
    """Pixtral vision encoder (bias-free conv patches, RMSNorms, SwiGLU) and Mistral 3's
    projector (RMSNorm, patch merger, two linears)."""
    h = vision.integer("hidden_size")
    i = vision.integer("intermediate_size")
    layers = vision.integer("num_hidden_layers")
    patch = vision.integer("patch_size")
    embed = vision.integer("num_channels") * patch * patch * h + h
    layer = 4 * h * h + 3 * h * i + 2 * h
    bias = 2 * text_hidden if projector_bias else 0
    projector = h + merge * merge * h * h + h * text_hidden + text_hidden * text_hidden + bias
    return embed + layers * layer + projector


def qwen_vision_params(vision: Config) -> int:
    """Qwen3.5's ViT: 3-D conv patches with bias, learned positions, LayerNorm blocks with a
    GELU MLP, and the patch merger to ``out_hidden_size``."""
    h = vision.integer("hidden_size")
    i = vision.integer("intermediate_size")
    depth = vision.integer("depth")
    patch = vision.integer("patch_size")
    merged = h * vision.integer("spatial_merge_size") ** 2
    conv = vision.integer("in_channels") * vision.integer("temporal_patch_size") * patch * patch
    embed = conv * h + h + vision.integer("num_position_embeddings") * h
    block = 2 * 2 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * i + i) + (i * h + h)
    out = vision.integer("out_hidden_size")
    merger = 2 * h + (merged * merged + merged) + (merged * out + out)
    return embed + depth * block + merger


def qwen3_vl_vision_params(vision: Config) -> int:
    """Qwen3-VL's ViT (``modeling_qwen3_vl``, transformers 5.25): Qwen3.5's
    (:func:`qwen_vision_params`) and one more patch merger per ``deepstack_visual_indexes``
    entry, whose LayerNorm acts on the merged width (``use_postshuffle_norm``)."""
    h = vision.integer("hidden_size")
    merged = h * vision.integer("spatial_merge_size") ** 2
    out = vision.integer("out_hidden_size")
    deepstack = vision.raw.get("deepstack_visual_indexes")
    if not isinstance(deepstack, list) or len(deepstack) > vision.integer("depth"):
        raise ShapeError("vision_config.deepstack_visual_indexes", "layer_list_length",
                         layers=vision.integer("depth"))
    merger = 2 * merged + (merged * merged + merged) + (merged * out + out)
    return qwen_vision_params(vision) + len(deepstack) * merger


def _tied(shape: ModelShape, cfg: Config, default: bool) -> ModelShape:
    """The checkpoint's own ``tie_word_embeddings`` decides whether lm_head shares the
    embedding (transformers 5 reads the top-level flag: ``Gemma3Config`` and ``Mistral3Config``
    default to True, ``Qwen3_5Config`` to False), whatever ``text_config`` says."""
    tied = cfg.flag("tie_word_embeddings", default)
    head = 0 if tied else shape.vocab_size * shape.hidden_size
    return replace(shape, tied_embeddings=tied, split=replace(shape.split, lm_head=head))


def gemma3(cfg: Config) -> ModelShape:
    text = with_defaults(_text(cfg), GEMMA3_TEXT_DEFAULTS)
    shape = _tied(gemma2_or_3(text, "gemma3", qk_norm=True), cfg, True)
    vision = with_defaults(sub_config(cfg.raw, "vision_config"), SIGLIP_DEFAULTS)
    return replace(shape, tower_params=siglip_params(vision, shape.hidden_size))


def mistral3(cfg: Config) -> ModelShape:
    text = Config(_text(cfg))
    shape = _tied(dense_swiglu(text, "mistral3", biases=llama_biases), cfg, True)
    vision = with_defaults(sub_config(cfg.raw, "vision_config"), PIXTRAL_DEFAULTS)
    merge = cfg.integer("spatial_merge_size", default=MISTRAL3_MERGE)
    tower = pixtral_params(vision, shape.hidden_size, merge,
                           cfg.flag("multimodal_projector_bias", False))
    return replace(shape, tower_params=tower)


def _qwen3_5(text_builder: Callable[[Config], ModelShape]) -> Callable[[Config], ModelShape]:
    def build(cfg: Config) -> ModelShape:
        shape = _tied(text_builder(Config(_text(cfg))), cfg, False)
        if "vision_config" not in cfg.raw:
            return shape
        vision = with_defaults(sub_config(cfg.raw, "vision_config"), QWEN_VISION_DEFAULTS)
        return replace(shape, tower_params=qwen_vision_params(vision))
    return build


qwen3_5: Callable[[Config], ModelShape] = _qwen3_5(hybrid.qwen3_5_text)
qwen3_5_moe: Callable[[Config], ModelShape] = _qwen3_5(hybrid.qwen3_5_moe_text)


def _qwen3_vl(text_builder: Callable[[Config], ModelShape]) -> Callable[[Config], ModelShape]:
    """Qwen3-VL (``qwen3_vl``, ``qwen3_vl_moe``, transformers 5.25): a Qwen3 or Qwen3-MoE text
    model (``text_config``) and the ViT of :func:`qwen3_vl_vision_params`; the top-level
    ``tie_word_embeddings`` decides (``Qwen3VLConfig`` and ``Qwen3VLMoeConfig``: False)."""
    def build(cfg: Config) -> ModelShape:
        shape = _tied(text_builder(Config(_text(cfg))), cfg, False)
        vision = with_defaults(sub_config(cfg.raw, "vision_config"), QWEN3_VL_VISION_DEFAULTS)
        return replace(shape, tower_params=qwen3_vl_vision_params(vision))
    return build


qwen3_vl: Callable[[Config], ModelShape] = _qwen3_vl(
    lambda text: dense_swiglu(text, "qwen3_vl", biases=qwen3_biases, qk_norm=True))
qwen3_vl_moe: Callable[[Config], ModelShape] = _qwen3_vl(
    lambda text: qwen3_moe(text, "qwen3_vl_moe", peft_fused=False))
