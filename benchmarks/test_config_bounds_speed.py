"""The slowest estimate a config.json can ask for: every field at its bound (run: `make bench`).

Issue 13's denial of service was one config field (10^8 layers, 41 s per request). The fields
are now bounded and the engine's work does not grow with them (tests/engine/
test_config_bounds.py counts it); this times what is left, per model type, against the whole
seed catalog with levers, so the note can report the slowest case. Never asserted: wall-clock
limits in tests are flaky.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.catalog.seed import load_seed_catalog
from app.engine import Job, estimate, parse_config
from app.engine.architectures.registry import SUPPORTED_MODEL_TYPES
from app.estimates.service import gpu_spec
from tests.engine.bounded_configs import at_bounds

GPUS = [gpu_spec(g) for g in load_seed_catalog().gpus]


@pytest.mark.parametrize("model_type", SUPPORTED_MODEL_TYPES)
def test_parse_and_estimate_with_every_field_at_its_bound(benchmark: Any, model_type: str) -> None:
    config = at_bounds(model_type)
    job = Job(method="lora", batch_size=4, seq_len=4096)

    def run() -> object:
        return estimate(parse_config(config), job, GPUS, with_levers=True)

    result = benchmark(run)
    assert result is not None
