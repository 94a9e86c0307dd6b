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


def test_a_second_loss_head_reuses_the_blocks_nothing_was_created_in() -> None:
    # One token: the blocks are 2, 4, 4 and 4 bytes; the first step's strandings leave 10 GB of
    # other cached blocks, which hold the 1 GB it creates.
    terms = ReserveTerms(floor_static=11 * GB, first_step_created=GB,
                         head_blocks=(2, 4, 4, 4))
    stranding = 10 * GB + 10 * GB + 14
    assert terms.second_step(stranding, 1, 1) == 0
    assert terms.reserved(15 * GB, stranding, 0, 1, 1) == stranding


def test_a_second_loss_head_needs_new_segments_for_the_blocks_the_states_filled() -> None:
    # One token whose loss-head blocks are 2, 4, 4 and 4 GB.
    unit = GB
    terms = ReserveTerms(
        floor_static=5 * unit + 9 * unit, first_step_absent=6 * unit, first_step_created=9 * unit,
        head_blocks=(2 * unit, 4 * unit, 4 * unit, 4 * unit))
    # step 1: weights 5, its loss head 14 and 1 of other blocks: 20 (the optimizer's 6 absent).
    stranding = 20 * unit + 6 * unit
    # 9 created: 1 in the other blocks, 8 spill into the 2 and 4 blocks and 2 of a 4.
    # Step 2: its 2 block fits that remainder (2), a 4 the untouched 4, the last two are new.
    assert terms.second_step(stranding, 1, 1) == 20 * unit + 8 * unit
    assert terms.reserved(20 * unit, stranding, 0, 1, 1) == 28 * unit
    # Nothing to add where the other terms already hold more.
    assert terms.second_step(stranding, 1, 1, at_least=34 * unit) == 0
    # With nothing spilled the second loss head needs no new segment.
    spare = dataclasses.replace(terms, first_step_created=unit, floor_static=6 * unit)
    assert spare.second_step(stranding, 1, 1) == 0


def test_no_second_step_term_without_a_whole_loss_head() -> None:
    assert ReserveTerms(floor_static=GB).second_step(2 * GB, 4, 2048) == 0


def test_the_second_step_rise_of_the_h200_full_fine_tunes_with_checkpointing() -> None:
    """Measured: reserved rose from the first step to the second by whole loss-head blocks
    (bytes per token per vocabulary entry: 4, 12, 12, 12, 14, 4, 4). The engine's new segments
    are those rises on four steps and never fewer (the freed gradients' blocks, which can hold
    a block of the second loss head, are not modelled: on Llama 3.1 8B it gives 14 for 4)."""
    found = {}
    for path in (h200.STEPS_PATH, h200.HELDOUT_PATH):
        for step in h200.ran(h200.load_steps(path))["cases"]:
            if step["method"] == "full" and step["ckpt"] and step.get("opt", "adamw") == "adamw":
                engine, rise = h200.second_step_rise(step)
                found[step["id"]] = (round(engine, 2), round(rise, 2))
    assert len(found) == 7
    for step_id, (engine, rise) in found.items():
        assert engine >= rise - 0.05, (step_id, engine, rise)
    exact = {"full-amp-l1b-b1s8192-ck", "full-bf16-l3b-b4s2048-ck",
             "full-bf16-l3b-b8s4096-ck", "full-amp-l1b-b16s2048-ck"}
    for step_id in exact:
        engine, rise = found[step_id]
        assert abs(engine - rise) < 0.05, (step_id, engine, rise)
