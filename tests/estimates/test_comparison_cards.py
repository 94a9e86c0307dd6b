"""Comparison cards (issue 26, point 3): cards the shop does not sell, named on purpose.

The seed catalog holds them (``comparison_only``): the H200 SXM and the reference's H100 SXM
and NVL, A100 80GB, L40S, RTX 5090 and RTX 6000 Ada. A job is held against them only when they
are named, they are marked as such in every answer, and they are never recommended or quoted.
"""

from __future__ import annotations

import pytest

from app.catalog.seed import load_seed_catalog
from app.engine import Job
from app.errors import InvalidInput
from app.estimates.recommendations import recommend
from app.estimates.service import EstimateCache, EstimateRequest, estimate, sizing
from app.quotes.service import sold_gpu

CATALOG = load_seed_catalog()
COMPARISON = {"h200-sxm", "h100-sxm", "h100-nvl", "a100-80gb", "l40s", "rtx-5090",
              "rtx-6000-ada"}


def request(*gpus: str) -> EstimateRequest:
    return EstimateRequest(job=Job(method="lora"), model_slug="llama-3.1-8b", gpu_slugs=gpus)


def test_the_catalog_marks_exactly_the_comparison_cards() -> None:
    assert {gpu.slug for gpu in CATALOG.gpus if gpu.comparison_only} == COMPARISON


def test_every_card_by_default_is_a_card_the_shop_sells() -> None:
    result = estimate(CATALOG, request(), cache=EstimateCache())
    slugs = {fit.gpu for fit in result.fits}
    assert slugs and not slugs & COMPARISON
    assert not any(fit.comparison_only for fit in result.fits)


def test_a_named_comparison_card_is_held_against_the_job_and_marked() -> None:
    result = estimate(CATALOG, request("a100-80gb", "h200-nvl"), cache=EstimateCache())
    by_slug = {fit.gpu: fit for fit in result.fits}
    assert by_slug["a100-80gb"].comparison_only and not by_slug["h200-nvl"].comparison_only
    a100, h200_nvl = by_slug["a100-80gb"].training, by_slug["h200-nvl"].training
    assert a100 is not None and h200_nvl is not None
    assert a100.hours > h200_nvl.hours  # 312 against 835.5 TFLOP/s dense BF16


def test_comparison_cards_are_never_recommended_nor_in_systems() -> None:
    found = recommend(CATALOG, request("a100-80gb", "rtx-pro-6000"), cache=EstimateCache())
    assert found.options and all(option.gpu not in COMPARISON for option in found.options)
    rows = sizing(CATALOG, request("h200-sxm"), cache=EstimateCache()).systems
    assert all(row.gpu.slug not in COMPARISON for row in rows)


def test_comparison_cards_are_never_quoted() -> None:
    assert sold_gpu(CATALOG, "rtx-pro-6000").slug == "rtx-pro-6000"
    with pytest.raises(InvalidInput) as refused:
        sold_gpu(CATALOG, "h200-sxm")
    assert refused.value.field == "item_slug"
