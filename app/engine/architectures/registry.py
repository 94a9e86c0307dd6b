"""Which ``model_type`` each builder counts, and the one entry point from a config to a shape.

Why a module of its own: the builders live one family to a module in this package, and each
of them imports the shared pieces of :mod:`app.engine.architectures.kit`; keeping the registry
here, above all of them, leaves the engine's imports a tree
(``tests/test_process_state.py`` refuses import cycles).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from app.engine.architectures import (
    afmoe,
    deepseek,
    ernie,
    exaone_moe,
    falcon_h1,
    gemma,
    gemma4,
    gpt,
    granite_hybrid,
    hunyuan,
    hybrid,
    laguna,
    lfm2,
    llama,
    longcat,
    minimax_m3,
    moe,
    multimodal,
    phi,
    step3p7,
)
from app.engine.architectures.gemma import gemma2_or_3
from app.engine.architectures.kit import Config
from app.engine.architectures.llama import dense_swiglu, llama_biases, no_biases
from app.engine.architectures.qwen import qwen2_biases, qwen3_biases, qwen3_moe
from app.engine.shapes import ModelShape, ShapeError

SUPPORTED_MODEL_TYPES: tuple[str, ...] = (
    "llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "gemma2", "gemma3_text", "phi3",
    "mixtral", "gpt2",
    # llama.py, gemma.py, phi.py, gpt.py, hybrid.py, multimodal.py
    "olmo2", "gemma", "phi", "falcon", "gpt_neox", "qwen3_next", "qwen3_5", "qwen3_5_moe",
    "nemotron_h", "gemma3", "mistral3", "qwen3_5_text", "qwen3_5_moe_text", "ministral3",
    # gemma4.py
    "gemma4", "gemma4_text",
    # llama.py, lfm2.py, multimodal.py, deepseek.py
    "smollm3", "qwen3_vl", "qwen3_vl_moe", "deepseek_v4", "lfm2", "olmo3",
    # granite_hybrid.py, ernie.py, falcon_h1.py, hunyuan.py, exaone_moe.py, afmoe.py
    "granitemoehybrid", "ernie4_5_moe", "falcon_h1", "hunyuan_v1_dense", "hunyuan_v1_moe",
    "exaone_moe", "afmoe",
    # longcat.py
    "longcat_flash",
    # minimax_m3.py, laguna.py, step3p7.py
    "minimax_m3_vl", "minimax_m3_vl_text", "minimax_m3", "laguna", "step3p7",
    *llama.NEWER_DENSE,
)
# Mixture-of-experts and MLA families (moe.py, deepseek.py).
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
    shape = builder(Config(config))
    if model_type in FP32_ROUTER_TYPES:
        shape = replace(shape, fp32_params=sum(
            spec.weight_params for spec in shape.linears if spec.role == "router"))
    return shape


FP32_ROUTER_TYPES: frozenset[str] = frozenset({
    "deepseek_v3", "kimi_k2", "kimi_k25", "deepseek_v32", "glm4_moe", "glm4_moe_lite",
    "glm_moe_dsa", "mimo_v2_flash", "nemotron_h", "ernie4_5_moe", "exaone_moe",
})
"""Model types whose router weight transformers 5.25 creates as ``float32`` and lists in
``_keep_in_fp32_modules_strict`` (``gate.weight``), so that it stays fp32 when the model is
loaded in bf16 or fp16 (``modeling_utils``: the strict list is upcast for either dtype; Kimi K2
and K2.5 load DeepSeek-V3's modules). Not here: LongCat-Flash (its ``classifier.weight`` is in the
non-strict list, upcast only for fp16), Hunyuan (``wg`` created float32 but in no keep list),
and DeepSeek-V4, whose strict list names its norms and hyper-connections but not its router."""


_BUILDERS: dict[str, Callable[[Config], ModelShape]] = {
    "llama": lambda cfg: dense_swiglu(cfg, "llama", biases=llama_biases),
    "mistral": lambda cfg: dense_swiglu(cfg, "mistral", biases=llama_biases),
    "qwen2": lambda cfg: dense_swiglu(cfg, "qwen2", biases=qwen2_biases),
    "qwen3": lambda cfg: dense_swiglu(cfg, "qwen3", biases=qwen3_biases, qk_norm=True),
    "qwen3_moe": qwen3_moe,
    "gemma2": lambda cfg: gemma2_or_3(cfg, "gemma2", qk_norm=False),
    "gemma3_text": lambda cfg: gemma2_or_3(cfg, "gemma3_text", qk_norm=True),
    "phi3": phi.phi3,
    "mixtral": moe.mixtral,
    "gpt2": gpt.gpt2,
    **{model_type: {**moe.BUILDERS, **deepseek.BUILDERS}[model_type]
       for model_type in MOE_MODEL_TYPES},
    "olmo2": llama.olmo2, "gemma": gemma.gemma, "phi": phi.phi,
    "falcon": gpt.falcon, "gpt_neox": gpt.gpt_neox,
    "qwen3_next": hybrid.qwen3_next, "nemotron_h": hybrid.nemotron_h,
    "qwen3_5": multimodal.qwen3_5, "qwen3_5_moe": multimodal.qwen3_5_moe,
    "gemma3": multimodal.gemma3, "mistral3": multimodal.mistral3,
    "qwen3_5_text": hybrid.qwen3_5_text, "qwen3_5_moe_text": hybrid.qwen3_5_moe_text,
    "ministral3": lambda cfg: dense_swiglu(cfg, "ministral3", biases=no_biases),
    "gemma4": gemma4.gemma4, "gemma4_text": gemma4.gemma4_text,
    "smollm3": llama.smollm3, "lfm2": lfm2.lfm2,
    "deepseek_v4": deepseek.deepseek_v4,
    "olmo3": lambda cfg: llama.olmo2(cfg, "olmo3"),
    **llama.NEWER_DENSE,
    "qwen3_vl": multimodal.qwen3_vl, "qwen3_vl_moe": multimodal.qwen3_vl_moe,
    "granitemoehybrid": granite_hybrid.granitemoehybrid, "ernie4_5_moe": ernie.ernie4_5_moe,
    "falcon_h1": falcon_h1.falcon_h1,
    "hunyuan_v1_dense": hunyuan.hunyuan_v1_dense, "hunyuan_v1_moe": hunyuan.hunyuan_v1_moe,
    "exaone_moe": exaone_moe.exaone_moe, "afmoe": afmoe.afmoe,
    "longcat_flash": longcat.longcat_flash,
    "minimax_m3_vl": minimax_m3.minimax_m3_vl,
    "minimax_m3_vl_text": lambda cfg: minimax_m3.minimax_m3_text(cfg),
    "minimax_m3": lambda cfg: minimax_m3.minimax_m3_text(cfg, "minimax_m3"),
    "laguna": laguna.laguna,
    "step3p7": step3p7.step3p7,
}
