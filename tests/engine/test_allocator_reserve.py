"""Reserved, not only allocated (issue 15, point 4): the caching allocator's reserve.

``app/engine/overhead.py`` models what PyTorch's caching allocator reserves beyond the
live-tensor peak as a fraction of the step's own tensors, fitted on published runs that report
both counters for the same step (``tools/calibrate/external/reserved.json``). These tests hold
the constants to that fit, the fit to the runs, and the engine's counters to their definitions.
"""

from __future__ import annotations

import dataclasses
import json
import statistics

import pytest

from app.engine import Job, estimate, overhead
from app.engine.job import GpuSpec
from tests.engine.reference import reference_shape as load_shape
from tools.calibrate.external import reserved

PAIRS = reserved.pairs()
SINGLE = [p for p in PAIRS if not p.fsdp]
FSDP = [p for p in PAIRS if p.fsdp]


def test_the_fractions_are_the_medians_of_the_published_pairs() -> None:
    """Not tuned: each constant is the median fraction its pairs imply, to rounding."""
    assert len(SINGLE) >= 15 and len(FSDP) >= 15
    single = statistics.median(p.ratio for p in SINGLE)
    fsdp = statistics.median(p.ratio for p in FSDP)
    assert pytest.approx(single, abs=0.005) == overhead.ALLOCATOR_RESERVE_FRACTION
    assert pytest.approx(fsdp, abs=0.005) == overhead.FSDP_ALLOCATOR_RESERVE_FRACTION


def test_single_gpu_pairs_are_predicted_within_ten_percent() -> None:
    errors = [abs(p.error) for p in SINGLE]
    assert max(errors) <= 0.10, max(SINGLE, key=lambda p: abs(p.error)).id
    assert statistics.median(errors) <= 0.03


def test_every_pair_names_its_source_and_both_counters() -> None:
    data = json.loads(reserved.PAIRS.read_text(encoding="utf-8"))
    ids = [pair["id"] for pair in data["pairs"]]
    assert len(ids) == len(set(ids))
    for pair in data["pairs"]:
        assert pair["source_url"].startswith("https://"), pair["id"]
        assert pair["allocated"]["counter"] and pair["reserved"]["counter"], pair["id"]
        assert pair["allocated"]["bytes"] < pair["reserved"]["bytes"], pair["id"]
        assert "bytes" in pair["resident"] or "figure" in pair["resident"], pair["id"]


CARD = GpuSpec(slug="card", name="Card", usable_bytes=80 * 10**9, compute_capability="9.0")
JOBS = [
    Job(method="lora", batch_size=4, seq_len=2048),
    Job(method="qlora", batch_size=2, seq_len=4096, gradient_checkpointing=True),
    Job(method="full", batch_size=1, seq_len=1024, gpus=8, sharding="zero3",
        sharding_impl="fsdp"),
]


@pytest.mark.parametrize("job", JOBS, ids=["lora", "qlora", "full-fsdp-8"])
def test_allocated_reserved_and_the_card_are_nested(job: Job) -> None:
    """allocated <= reserved <= per-GPU total, total = reserved + context, and the verdict
    holds the total (what nvidia-smi shows) against the card."""
    result = estimate(load_shape("llama-3.1-8b"), job, [CARD], with_levers=False)
    fixed = overhead.fixed_overhead_bytes(job.gpus)
    assert result.allocated_bytes >= max(result.peak_live_bytes, 0)
    assert result.allocated_bytes < result.reserved_bytes
    assert result.per_gpu_bytes.total == result.reserved_bytes + fixed
    assert result.fits[0].total_bytes == result.per_gpu_bytes.total
    assert result.fits[0].fits == (result.per_gpu_bytes.total <= CARD.usable_bytes)


@pytest.mark.parametrize("job", JOBS, ids=["lora", "qlora", "full-fsdp-8"])
def test_expandable_segments_never_reserve_more(job: Job) -> None:
    shape = load_shape("llama-3.1-8b")
    off = estimate(shape, job, [], with_levers=False)
    on = estimate(shape, dataclasses.replace(job, expandable_segments=True), [],
                  with_levers=False)
    assert on.allocated_bytes == off.allocated_bytes
    assert on.reserved_bytes < off.reserved_bytes


def test_fsdp_reserves_more_than_deepspeed_for_the_same_shards() -> None:
    shape = load_shape("llama-3.1-8b")
    job = Job(method="full", gpus=8, sharding="zero3", sharding_impl="fsdp")
    fsdp = estimate(shape, job, [], with_levers=False)
    deepspeed = estimate(shape, dataclasses.replace(job, sharding_impl="deepspeed"), [],
                         with_levers=False)
    fsdp_reserve = fsdp.reserved_bytes - fsdp.allocated_bytes
    ds_reserve = deepspeed.reserved_bytes - deepspeed.allocated_bytes
    assert fsdp_reserve / (fsdp.allocated_bytes - fsdp.model_states_bytes) > (
        ds_reserve / (deepspeed.allocated_bytes - deepspeed.model_states_bytes))
