"""Dense decoders of 2025 releases the engine did not count (issue 29, point 4): Seed-OSS
(``seed_oss``), ERNIE 4.5 dense (``ernie4_5``), EXAONE 4.0 (``exaone4``), Granite (``granite``),
Helium (``helium``) and OLMo 3 (``olmo3``) went the approximate path as unknown types.

The truth is transformers and PEFT (``expected_transformers_defaults.json``, its ``versions``:
transformers 5.24.0, PEFT 0.21.2, torch 2.13.0 on the meta device): each config class's
defaults (what transformers calls the family's reference configuration), and a variant with
the bias flags set where the class reads any, built with ``AutoModelForCausalLM.from_config``
and counted, then wrapped with ``LoraConfig(r=16, target_modules="all-linear")``. No release's
config.json could be copied here, so these are transformers' own configurations, not
checkpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine.architectures.approximate import shape_of
from app.engine.states import LoraSetup, lora_trainable_params

EXPECTED: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
     / "expected_transformers_defaults.json").read_text())


def test_the_counts_are_transformers_5_24_s() -> None:
    assert EXPECTED["versions"]["transformers"] == "5.24.0"
    assert EXPECTED["versions"]["peft"] == "0.21.2"


@pytest.mark.parametrize("name", sorted(EXPECTED["models"]))
def test_counted_exactly_as_transformers_builds_it(name: str) -> None:
    case = EXPECTED["models"][name]
    shape = shape_of(case["config"])
    assert shape.approximation is None, name  # an unknown type was approximate
    assert shape.total_params == case["total"], name
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == case["lora_r16"], name
