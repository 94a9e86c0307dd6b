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
from app.engine.fit import ReserveTerms
from app.engine.job import GpuSpec
from tests.engine.reference import reference_shape as load_shape
from tools.calibrate import h200
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


# The second step's loss head (overhead.py): the first step's gradients and optimizer states
# take the cached blocks best fit, and the loss head's blocks they fill are new segments in the
# second step.
GB = 10**9


def test_a_second_loss_head_adds_little_where_the_first_step_kept_little() -> None:
    # One token: the blocks are 2, 4, 4 and 4 bytes; the first step keeps 1 byte after its
    # loss head: at most that and the one block it reaches into come on top of r1.
    terms = ReserveTerms(floor_static=20 * GB, first_step_created=1,
                         head_blocks=(2, 4, 4, 4))
    stranding = 20 * GB
    assert terms.second_step(stranding, 1, 1) == stranding + 1 + 1


def test_a_second_loss_head_needs_new_segments_for_the_blocks_the_states_filled() -> None:
    # One token whose loss-head blocks are 2, 4, 4 and 4 GB; the first step reserves 20 (its
    # strandings of 26 less the optimizer's 6), weights 5 and 9 kept after its loss head.
    unit = GB
    terms = ReserveTerms(
        floor_static=5 * unit + 9 * unit, first_step_absent=6 * unit, first_step_created=9 * unit,
        head_blocks=(2 * unit, 4 * unit, 4 * unit, 4 * unit))
    stranding = 26 * unit
    # r1 + the whole head 34, the states + the head + the largest block 32, r1 + 9 kept + 4: 33.
    assert terms.second_step(stranding, 1, 1) == 32 * unit
    assert terms.reserved(20 * unit, stranding, 0, 1, 1) == 32 * unit
    # Nothing kept: the first step's reserve.
    spare = dataclasses.replace(terms, first_step_created=0, floor_static=5 * unit)
    assert spare.second_step(stranding, 1, 1) == 20 * unit


def test_the_second_step_grows_with_the_tokens() -> None:
    terms = ReserveTerms(floor_static=14 * GB, first_step_absent=6 * GB,
                         first_step_created=9 * GB, head_blocks=(256_512, 513_024, 513_024))
    values = [terms.second_step(20 * GB + 300_000 * t, t, 1) for t in range(1, 40_000, 997)]
    assert values == sorted(values)


def test_no_second_step_term_without_a_whole_loss_head() -> None:
    assert ReserveTerms(floor_static=GB).second_step(2 * GB, 4, 2048) == 0


def test_the_second_step_rise_of_the_h200_full_fine_tunes_with_checkpointing() -> None:
    """Measured: reserved rose from the first step to the second by whole loss-head blocks
    (bytes per token per vocabulary entry: 4, 12, 12, 12, 14, 4, 4). The engine's new segments
    are never fewer (a bound on the blocks, not their count)."""
    found = {}
    for path in (h200.STEPS_PATH, h200.HELDOUT_PATH):
        for step in h200.ran(h200.load_steps(path))["cases"]:
            if step["method"] == "full" and step["ckpt"] and step.get("opt", "adamw") == "adamw":
                engine, rise = h200.second_step_rise(step)
                found[step["id"]] = (round(engine, 2), round(rise, 2))
    assert len(found) == 7
    for step_id, (engine, rise) in found.items():
        assert engine >= rise - 0.05, (step_id, engine, rise)
