"""MoE routers transformers keeps in fp32 in a bf16 model (issue 29): the router weight is
created ``float32`` and named in ``_keep_in_fp32_modules_strict`` (``gate.weight``), which
``modeling_utils`` upcasts for bf16 and fp16 loads alike (transformers 5.25; a tiny DeepSeek-V3
built with ``dtype=torch.bfloat16`` holds ``gate.weight`` in float32 and nothing else). A
frozen base holds them at 4 bytes, not the base's 2."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from app.engine import parse_config
from app.engine.shapes import ModelShape
from app.engine.states import base_weight_bytes

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"


def _shape(slug: str) -> ModelShape:
    return parse_config(json.loads((CONFIGS / f"{slug}.json").read_text()))


def test_deepseek_v3s_routers_add_two_bytes_each_to_a_bf16_base() -> None:
    """58 sparse layers of 256 experts over 7,168: 106,430,464 router weights, 212,860,928
    bytes beyond the base's bf16 under LoRA and under QLoRA (routers are never packed)."""
    shape = _shape("deepseek-v3")
    routers = 58 * 256 * 7168
    assert shape.fp32_params == routers == 106_430_464
    assert base_weight_bytes(shape, "lora") == 2 * shape.total_params + 2 * routers
    bf16_routers = replace(shape, fp32_params=0)
    assert (base_weight_bytes(shape, "qlora", base_bytes=2)
            - base_weight_bytes(bf16_routers, "qlora", base_bytes=2)) == 2 * routers
    # After prepare_model_for_kbit_training every unpacked parameter is fp32 anyway.
    assert base_weight_bytes(shape, "qlora", base_bytes=4) == base_weight_bytes(
        bf16_routers, "qlora", base_bytes=4)


@pytest.mark.parametrize("slug", ["kimi-k2.5", "glm-4.5-air", "glm-5", "mimo-v2-flash",
                                  "nvidia-nemotron-3-nano-30b-a3b", "deepseek-v3.2"])
def test_the_routers_of_these_families_are_fp32(slug: str) -> None:
    shape = _shape(slug)
    routers = sum(s.weight_params for s in shape.linears if s.role == "router")
    assert shape.fp32_params == routers > 0
    assert base_weight_bytes(shape, "lora") - 2 * shape.total_params == 2 * routers


@pytest.mark.parametrize("slug", ["longcat-flash-chat", "gpt-oss-20b",
                                  "qwen3-next-80b-a3b-instruct", "deepseek-v4-flash",
                                  "llama-4-scout-17b-16e-instruct"])
def test_routers_transformers_loads_in_the_models_dtype_stay_16_bit(slug: str) -> None:
    """LongCat-Flash names its router only in the non-strict list (fp16 loads alone); the
    others keep no router in fp32."""
    shape = _shape(slug)
    assert shape.fp32_params == 0
    assert base_weight_bytes(shape, "lora") == 2 * shape.total_params


def test_a_base_loaded_in_fp32_holds_them_at_4_bytes_like_everything_else() -> None:
    shape = _shape("deepseek-v3")
    assert base_weight_bytes(shape, "lora", base_bytes=4) == 4 * shape.total_params
