"""How long one estimate against the whole seed catalog takes (run: `make bench`).

Reported in the issue note and docs/performance.md, never asserted: wall-clock limits in tests
are flaky.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.catalog.seed import load_seed_catalog
from app.engine import Job, estimate
from app.estimates.service import EstimateRequest, gpu_spec, resolve_shape

CATALOG = load_seed_catalog()
GPUS = [gpu_spec(g) for g in CATALOG.gpus]

JOBS = {
    "lora-8b-b4": ("llama-3.1-8b", Job(method="lora", batch_size=4)),
    "full-8b-b1": ("llama-3.1-8b", Job(method="full")),
    "qlora-70b-ckpt": ("llama-3.3-70b", Job(method="qlora", gradient_checkpointing=True)),
    "lora-mixtral-eager": ("mixtral-8x7b", Job(method="lora", attention="eager")),
}


@pytest.mark.parametrize("name", list(JOBS))
@pytest.mark.parametrize("levers", [False, True], ids=["fits-and-max-batch", "with-levers"])
def test_one_estimate_against_the_catalog(benchmark: Any, name: str, levers: bool) -> None:
    slug, job = JOBS[name]
    shape, _ = resolve_shape(CATALOG, EstimateRequest(job=job, model_slug=slug))
    result = benchmark(estimate, shape, job, GPUS, with_levers=levers)
    assert len(result.fits) == len(GPUS)
    assert all(fit.max_batch_size >= 0 for fit in result.fits)
