"""The format a checkpoint is published in, read from its config.json (issue 27, point 2)."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest

from app.config import SEED_DIR
from app.engine.serving_weights import WEIGHT_FORMATS, published_format, sixteen_bit_format
from app.estimates.serving import PUBLISHED, WeightChoice


def seed(slug: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((SEED_DIR / "models" / f"{slug}.json").read_text())
    return config


@pytest.mark.parametrize(("slug", "expected"), [
    ("gpt-oss-120b", "mxfp4"), ("gpt-oss-20b", "mxfp4"), ("deepseek-v3", "fp8"),
    ("deepseek-r1", "fp8"), ("kimi-k2-instruct", "fp8"), ("minimax-m2.5", "fp8"),
    ("llama-3.1-8b", None), ("qwen3-8b", None),
    # compressed-tensors int4 at group 32: none of the formats we size
    ("kimi-k2.5", None),
])
def test_the_seed_checkpoints_published_formats(slug: str, expected: str | None) -> None:
    assert published_format(seed(slug)) == expected


@pytest.mark.parametrize(("quantization", "expected"), [
    ({"quant_method": "awq", "bits": 4, "group_size": 128}, "awq"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "gptq"),
    ({"quant_method": "gptq", "bits": 8, "group_size": 128}, None),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4"),
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, "fp8"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {
        "weights": {"type": "float", "num_bits": 8}}}}, "fp8"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {
        "weights": {"type": "int", "num_bits": 8}, "input_activations": {"num_bits": 8}}}},
     "int8"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, None),
    # ModelOpt's hf_quant_config.json, which vLLM takes as the quantization_config
    ({"producer": {"name": "modelopt", "version": "0.29.0"},
      "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": None}}, "fp8"),
    ({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4"}}, "nvfp4"),
    ({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "W4A8_AWQ"}}, None),
    ({"producer": {"name": "other"}, "quantization": {"quant_algo": "FP8"}}, None),
])
def test_quantization_configs_as_vllm_reads_them(quantization: dict[str, Any],
                                                 expected: str | None) -> None:
    assert published_format({"quantization_config": quantization}) == expected
    assert published_format({"text_config": {"quantization_config": quantization}}) == expected


def test_sixteen_bit_follows_the_config_dtype() -> None:
    assert sixteen_bit_format({"torch_dtype": "float16"}) == "fp16"
    assert sixteen_bit_format({"dtype": "bfloat16"}) == "bf16"
    assert sixteen_bit_format({}) == "bf16"


def test_every_surface_takes_published_or_any_format() -> None:
    assert get_args(WeightChoice) == (PUBLISHED, *WEIGHT_FORMATS)
