"""How long one serving estimate against the whole seed catalog takes (run: `make bench`).

Target: under 1 ms median (issue 17). Reported in docs/performance.md, never asserted:
wall-clock limits in tests are flaky.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.catalog.seed import load_seed_catalog
from app.engine.serving import ServingJob, serving_estimate
from app.estimates.serving import ServingRequest, resolve_model, serving_gpu

CATALOG = load_seed_catalog()
GPUS = [serving_gpu(g) for g in CATALOG.gpus]

JOBS = {
    "llama-8b-32k-x16": ("llama-3.1-8b", ServingJob(context=32768, concurrency=16)),
    "qwen3-235b-nvfp4-tp4": ("qwen3-235b-a22b", ServingJob(weights="nvfp4", gpus=4)),
    "gemma2-9b-sliding-awq": ("gemma-2-9b", ServingJob(weights="awq", concurrency=8)),
    "llama-70b-fp8-kv": ("llama-3.3-70b", ServingJob(kv_cache="fp8", concurrency=4)),
}


@pytest.mark.parametrize("name", list(JOBS))
@pytest.mark.parametrize("levers", [False, True], ids=["fits", "with-levers"])
def test_one_serving_estimate_against_the_catalog(benchmark: Any, name: str,
                                                  levers: bool) -> None:
    slug, asked = JOBS[name]
    shape, layout, job = resolve_model(CATALOG, ServingRequest(job=asked, model_slug=slug))
    result = benchmark(serving_estimate, shape, layout, job, GPUS, with_levers=levers)
    assert len(result.fits) == len(GPUS)
