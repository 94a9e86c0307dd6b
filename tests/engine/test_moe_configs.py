"""Real config.json files of the mixture-of-experts and MLA families, counted as transformers
5 and PEFT 0.21 build them on the meta device (``tools/moe_counts.py`` writes
``tests/fixtures/hf_configs/expected_moe.json``; where each config comes from:
``tests/fixtures/hf_configs/SOURCES.md``).

The engine equals every figure to the parameter: total, embedding, lm_head, norms, active
parameters, and LoRA r16 ``all-linear`` under both conventions (``states.MOE_LORAS``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine import parse_config
from app.engine.states import LoraSetup, lora_trainable_params

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
EXPECTED: dict[str, dict[str, Any]] = json.loads(
    (CONFIGS / "expected_moe.json").read_text())["models"]


def _shape(slug: str) -> Any:
    return parse_config(json.loads((CONFIGS / f"{slug}.json").read_text()))


def test_at_least_fifteen_real_configs_of_these_families() -> None:
    assert len(EXPECTED) >= 15
    assert {e["model_type"] for e in EXPECTED.values()} >= {
        "deepseek_v3", "kimi_k2", "deepseek_v32", "glm4_moe", "glm4_moe_lite", "glm_moe_dsa",
        "minimax_m2", "gpt_oss", "llama4", "kimi_k25", "gemma4"}


@pytest.mark.parametrize("slug", sorted(EXPECTED))
def test_parameters_equal_transformers(slug: str) -> None:
    expected, shape = EXPECTED[slug], _shape(slug)
    assert shape.model_type == expected["model_type"]
    assert shape.total_params == expected["total"]
    assert shape.split.embedding == expected["embedding"]
    assert shape.split.lm_head == expected["lm_head"]
    assert shape.split.norm == expected["norm"]
    assert shape.active_params == expected["active"]
    assert shape.tower_params == expected.get("tower", 0)


@pytest.mark.parametrize("slug", sorted(EXPECTED))
def test_lora_r16_equals_peft_and_one_adapter_per_expert(slug: str) -> None:
    expected, shape = EXPECTED[slug], _shape(slug)
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == expected["lora_r16"]
    per_expert = LoraSetup(rank=16, moe_lora="per-expert")
    assert lora_trainable_params(shape, per_expert) == expected["lora_r16_per_expert"]


def test_the_fused_gate_up_tensor_takes_rank_2r_per_expert() -> None:
    """GLM-4.5-Air: fused minus per-expert is 2r x experts x width per sparse layer (the gate
    and up halves share one rank-2r adapter reading the hidden state once) less what PEFT no
    longer adapts: the dense layer's and the shared experts' gate/up/down projections."""
    shape = _shape("glm-4.5-air")
    fused = lora_trainable_params(shape, LoraSetup(rank=16))
    per_expert = lora_trainable_params(shape, LoraSetup(rank=16, moe_lora="per-expert"))
    sparse, experts, width, hidden = 45, 128, 1408, 4096
    skipped = 16 * 3 * (hidden + width) * sparse + 16 * 3 * (hidden + 10944)
    assert fused - per_expert == 2 * 16 * experts * width * sparse - skipped


def test_gpt_oss_fused_lora_adapts_attention_only() -> None:
    """PEFT 0.21 has no conversion for gpt_oss: its experts are 3-D parameters and its router
    is not an nn.Linear, so "all-linear" adapts q, k, v and o alone."""
    shape = _shape("gpt-oss-20b")
    attention = LoraSetup(rank=16, targets="attention")
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == lora_trainable_params(
        shape, attention)
