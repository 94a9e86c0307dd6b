"""Which ``model_type`` each builder counts, and the one entry point from a config to a shape.

Why a module of its own: the builders of the newer families live in ``arch_dense``,
``arch_hybrid``, ``arch_multimodal`` and ``arch_moe``, and each of them imports the shared
pieces of :mod:`app.engine.shapes`; keeping the registry here, above all of them, leaves the
engine's imports a tree (``tests/test_process_state.py`` refuses import cycles).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from app.engine import (
    arch_deepseek_v4,
    arch_dense,
    arch_gemma4,
    arch_hybrid,
    arch_moe,
    arch_multimodal,
)
from app.engine.shapes import (
    ModelShape,
    ShapeError,
    _Config,
    _dense_swiglu,
    _gemma,
    _gpt2,
    _llama_biases,
    _mixtral,
    _no_biases,
    _phi3,
    _qwen2_biases,
    _qwen3_biases,
    _qwen3_moe,
)

SUPPORTED_MODEL_TYPES: tuple[str, ...] = (
    "llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "gemma2", "gemma3_text", "phi3",
    "mixtral", "gpt2",
    # arch_dense.py, arch_hybrid.py, arch_multimodal.py
    "olmo2", "gemma", "phi", "falcon", "gpt_neox", "qwen3_next", "qwen3_5", "qwen3_5_moe",
    "nemotron_h", "gemma3", "mistral3", "qwen3_5_text", "qwen3_5_moe_text", "ministral3",
    # arch_gemma4.py
    "gemma4", "gemma4_text",
    # issue 29: arch_dense.py, arch_multimodal.py
    "smollm3", "qwen3_vl", "qwen3_vl_moe", "deepseek_v4", "lfm2",
)
# Mixture-of-experts and MLA families (app/engine/arch_moe.py).
MOE_MODEL_TYPES: tuple[str, ...] = (
    "deepseek_v3", "kimi_k2", "kimi_k25", "deepseek_v32", "glm4_moe", "glm4_moe_lite",
    "glm_moe_dsa", "minimax_m2", "gpt_oss", "llama4", "llama4_text", "mimo_v2_flash",
)
SUPPORTED_MODEL_TYPES += MOE_MODEL_TYPES


def parse_config(config: Mapping[str, object]) -> ModelShape:
    """Turn a Hugging Face ``config.json`` (as a dict) into a :class:`ModelShape`.

    Raises :class:`ShapeError` naming ``model_type`` when it is unknown and the field when one
    is missing or not a positive integer.
    """
    if not isinstance(config, Mapping):
        raise ShapeError("config", "config_not_object")
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise ShapeError("model_type", "config_missing")
    builder = _BUILDERS.get(model_type)
    if builder is None:
        raise ShapeError("model_type", "model_type_unsupported", value=f"'{model_type}'",
                         supported=", ".join(SUPPORTED_MODEL_TYPES))
    return builder(_Config(config))


_BUILDERS: dict[str, Callable[[_Config], ModelShape]] = {
    "llama": lambda cfg: _dense_swiglu(cfg, "llama", biases=_llama_biases),
    "mistral": lambda cfg: _dense_swiglu(cfg, "mistral", biases=_llama_biases),
    "qwen2": lambda cfg: _dense_swiglu(cfg, "qwen2", biases=_qwen2_biases),
    "qwen3": lambda cfg: _dense_swiglu(cfg, "qwen3", biases=_qwen3_biases, qk_norm=True),
    "qwen3_moe": _qwen3_moe,
    "gemma2": lambda cfg: _gemma(cfg, "gemma2", qk_norm=False),
    "gemma3_text": lambda cfg: _gemma(cfg, "gemma3_text", qk_norm=True),
    "phi3": _phi3,
    "mixtral": _mixtral,
    "gpt2": _gpt2,
    **{model_type: arch_moe.BUILDERS[model_type] for model_type in MOE_MODEL_TYPES},
    "olmo2": arch_dense.olmo2, "gemma": arch_dense.gemma, "phi": arch_dense.phi,
    "falcon": arch_dense.falcon, "gpt_neox": arch_dense.gpt_neox,
    "qwen3_next": arch_hybrid.qwen3_next, "nemotron_h": arch_hybrid.nemotron_h,
    "qwen3_5": arch_multimodal.qwen3_5, "qwen3_5_moe": arch_multimodal.qwen3_5_moe,
    "gemma3": arch_multimodal.gemma3, "mistral3": arch_multimodal.mistral3,
    "qwen3_5_text": arch_hybrid.qwen3_5_text, "qwen3_5_moe_text": arch_hybrid.qwen3_5_moe_text,
    "ministral3": lambda cfg: _dense_swiglu(cfg, "ministral3", biases=_no_biases),
    "gemma4": arch_gemma4.gemma4, "gemma4_text": arch_gemma4.gemma4_text,
    "smollm3": arch_dense.smollm3, "lfm2": arch_dense.lfm2,
    "deepseek_v4": arch_deepseek_v4.deepseek_v4,
    "qwen3_vl": arch_multimodal.qwen3_vl, "qwen3_vl_moe": arch_multimodal.qwen3_vl_moe,
}
