"""Real config.json files of the hybrid, multimodal and older dense families are counted as
transformers and PEFT count them, to the parameter.

The expected figures were made by ``tools/model_counts.py`` (transformers 5 + PEFT 0.21 on the
meta device; versions in each entry) from ``tests/fixtures/hf_configs/<slug>.json``, whose
sources are listed in ``tests/fixtures/hf_configs/SOURCES.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine.errors import EngineError
from app.engine.model_types import parse_config
from app.engine.states import LoraSetup, lora_trainable_params

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
EXPECTED: dict[str, dict[str, Any]] = json.loads((CONFIGS / "expected_hybrid.json").read_text())


def _config(slug: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / f"{slug}.json").read_text())
    return config


def test_the_hybrid_families_have_at_least_fifteen_real_configs() -> None:
    assert len(EXPECTED) >= 15
    assert {entry["model_type"] for entry in EXPECTED.values()} >= {
        "qwen3_next", "qwen3_5_moe", "nemotron_h", "gemma3", "mistral3", "olmo2", "gemma",
        "phi", "falcon", "gpt_neox",
    }


@pytest.mark.parametrize("slug", sorted(EXPECTED))
def test_the_language_model_has_the_parameters_transformers_builds(slug: str) -> None:
    shape = parse_config(_config(slug))
    assert shape.total_params == EXPECTED[slug]["text_total"]


@pytest.mark.parametrize("slug", sorted(EXPECTED))
def test_a_vision_tower_is_counted_beside_the_language_model(slug: str) -> None:
    shape = parse_config(_config(slug))
    assert shape.tower_params == EXPECTED[slug]["tower"]
    assert shape.total_params + shape.tower_params == EXPECTED[slug]["total"]


@pytest.mark.parametrize("slug", sorted(EXPECTED))
def test_lora_r16_all_linear_trains_what_peft_builds_on_the_language_model(slug: str) -> None:
    shape = parse_config(_config(slug))
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == EXPECTED[slug]["lora_r16_text"]


@pytest.mark.parametrize("slug", sorted(EXPECTED))
def test_the_4bit_split_holds_the_decoder_linears_experts_and_routers(slug: str) -> None:
    """``split.linear`` is every block linear layer, the fused expert tensors and routers
    counted as linear as the engine's mixture-of-experts convention does."""
    shape = parse_config(_config(slug))
    entry = EXPECTED[slug]
    assert shape.split.linear == entry["linear"] + entry["expert_tensors"] + entry["routers"]


def test_a_layer_types_list_of_the_wrong_length_is_refused_naming_the_field() -> None:
    config = _config("qwen3-next-80b-a3b-instruct") | {"layer_types": ["full_attention"] * 3}
    with pytest.raises(EngineError) as caught:
        parse_config(config)
    assert caught.value.field == "layer_types"


def test_an_unknown_block_in_a_nemotron_pattern_is_refused_naming_it() -> None:
    config = _config("nvidia-nemotron-nano-9b-v2") | {"hybrid_override_pattern": "M*-X"}
    with pytest.raises(EngineError) as caught:
        parse_config(config)
    assert caught.value.field == "hybrid_override_pattern"
    assert "'X'" in caught.value.reason


def test_a_nemotron_without_out_proj_adapters_is_what_peft_allows() -> None:
    """PEFT refuses LoRA on a Mamba block's out_proj; the engine's all-linear leaves it out."""
    shape = parse_config(_config("nvidia-nemotron-nano-9b-v2"))
    adapted = {spec.name for spec in shape.linears if spec.lora_target}
    assert "out_proj" not in adapted
    assert {"in_proj", "q_proj", "up_proj", "down_proj"} <= adapted
