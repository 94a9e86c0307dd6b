"""Readers for the reference data the engine is held to (no fixtures: plain functions).

``tests/fixtures/reference/`` is a copy of the shop's ``shared/reference`` folder (the article's
figures, real model configs with transformers' exact counts); ``test_reference_copy`` keeps the
copy equal to the original wherever the original is present.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from app.engine import ModelShape, parse_config

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "tests" / "fixtures" / "reference"
SHARED_REFERENCE = ROOT.parent / "shared" / "reference"
SEED_MODELS = ROOT / "app" / "catalog" / "seed"
GB = 10**9


@cache
def seed_figures() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REFERENCE / "seed-figures.json").read_text())
    return data


@cache
def reference_shape(slug: str) -> ModelShape:
    return parse_config(json.loads((REFERENCE / "models" / f"{slug}.json").read_text()))


@cache
def seed_model_index() -> list[dict[str, Any]]:
    models: list[dict[str, Any]] = json.loads((SEED_MODELS / "models.json").read_text())["models"]
    return models


def seed_model_config(entry: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((SEED_MODELS / "models" / entry["config"]).read_text())
    return config
