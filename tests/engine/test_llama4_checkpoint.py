"""Llama 4's whole checkpoint (issue 29, point 4): the language model the engine counts plus the
vision tower and projector it loads beside it (frozen in training, 16-bit in serving) make the
parameters the Hub's safetensors metadata gives for meta-llama's releases
(``safetensors.parameters.BF16``): Scout 108,641,793,536, Maverick 401,583,781,376, both the
language model's count (transformers 5.24's ``Llama4ForCausalLM`` on the meta device,
``expected_moe.json``) plus the same 871,932,416 of the tower and projector.

The configs carry the release's ``vision_config`` (hidden 1408, 34 layers, 336 px, patch 14,
projector 4096); without it transformers' ``Llama4VisionConfig`` default (hidden 768) counted
455,178,240 and the catalog's checkpoints were 416,754,176 parameters short."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.config import SEED_DIR
from app.engine.architectures.registry import parse_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
EXPECTED: dict[str, dict[str, Any]] = json.loads(
    (FIXTURES / "expected_moe.json").read_text())["models"]
HUB_SAFETENSORS = {"llama-4-scout-17b-16e-instruct": 108_641_793_536,
                   "llama-4-maverick-17b-128e-instruct": 401_583_781_376}
"""``safetensors.parameters.BF16`` of meta-llama/Llama-4-Scout-17B-16E-Instruct and
meta-llama/Llama-4-Maverick-17B-128E-Instruct on the Hub."""


@pytest.mark.parametrize("slug", sorted(HUB_SAFETENSORS))
@pytest.mark.parametrize("where", [FIXTURES, SEED_DIR / "models"], ids=["fixture", "catalog"])
def test_language_model_and_tower_are_the_published_checkpoint(slug: str, where: Path) -> None:
    shape = parse_config(json.loads((where / f"{slug}.json").read_text()))
    assert shape.total_params == EXPECTED[slug]["total"]  # transformers' language model
    assert shape.tower_params == 871_932_416
    assert shape.total_params + shape.tower_params == HUB_SAFETENSORS[slug]


def test_the_catalog_says_the_checkpoint_s_size() -> None:
    models = {m["slug"]: m for m in json.loads((SEED_DIR / "models.json").read_text())["models"]}
    for slug, total in HUB_SAFETENSORS.items():
        assert models[slug]["tower_params"] + models[slug]["total_params"] == total
