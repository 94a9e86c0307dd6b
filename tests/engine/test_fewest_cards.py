"""The fewest ZeRO-3 cards that hold a job (``fewest_cards_zero3``) are found by guessing the
edge from the bytes at the bracket's ends and checking the guess: the answer is the one a
plain scan over every card count gives, for every job and every card size in the catalog."""

from __future__ import annotations

import itertools

import pytest

from app.catalog.seed import load_seed_catalog
from app.engine import framework_unsloth as unsloth
from app.engine import precision, states
from app.engine.job import Job, headroom_bytes
from app.engine.levers import LEVER_MAX_CARDS, fewest_cards_zero3, first_fitting
from app.engine.step_model import StepModels
from app.estimates.service import gpu_spec
from tests.engine.reference import reference_shape

USABLE = sorted({gpu_spec(gpu).usable_bytes for gpu in load_seed_catalog().gpus})
"""Every card size in the seed catalog."""

ROOMS = sorted({*USABLE, *(usable - headroom_bytes(usable) for usable in USABLE)})
"""Those sizes and what a lever may fill of them (the size less its headroom)."""

JOBS = [
    Job(method=method, precision=precision, seq_len=seq_len, batch_size=batch,
        gradient_checkpointing=checkpointing)
    for method, precision, seq_len, batch, checkpointing in itertools.product(
        states.METHODS, (None, *precision.PRECISIONS), (512, 4096, 32768), (1, 8), (False, True))
]


def scanned(models: StepModels, job: Job, usable: int, limit: int) -> int | None:
    """The reference: every card count in turn, from one up."""
    for gpus in range(1, limit + 1):
        if models.total_bytes(models.sharded_job(job, gpus)) <= usable:
            return gpus
    return None


@pytest.mark.parametrize("slug", ["llama-3.1-8b", "llama-3.3-70b", "mixtral-8x7b"])
def test_the_fewest_cards_are_what_a_scan_over_every_count_finds(slug: str) -> None:
    shape = reference_shape(slug)
    models = StepModels(shape)
    spread = set()
    for job in JOBS:
        job = unsloth.as_run(job)
        for usable, limit in itertools.product(ROOMS, (64, LEVER_MAX_CARDS)):
            fewest = fewest_cards_zero3(models, job, usable, limit)
            assert fewest == scanned(models, job, usable, limit), (job, usable, limit)
            spread.add(fewest)
    assert len(spread - {None, 1}) >= 3  # the jobs ask for sharding over several counts


@pytest.mark.parametrize("edge", range(2, 65))
@pytest.mark.parametrize("curve", ["split", "kinked", "steps"])
def test_any_falling_curve_gives_the_first_count_within_the_limit(edge: int, curve: str) -> None:
    """Per-GPU bytes that are not a part plus a part split over the cards (a kink, whole
    steps) still give the first count within, however wrong the guesses are."""
    def total(gpus: int) -> int:
        if curve == "split":
            return 1_000 + 64_000 // gpus
        if curve == "kinked":
            return max(10_000 - 100 * gpus, 64_000 // gpus)
        return 1_000 * (70 - gpus)
    usable = total(edge)
    expected = min(n for n in range(1, 65) if total(n) <= usable)
    if expected > 1:
        assert first_fitting(total, usable, 1, 64) == expected


@pytest.mark.parametrize("slug", ["llama-3.1-8b", "llama-3.3-70b"])
def test_searches_for_other_card_sizes_change_no_answer(slug: str) -> None:
    """One sizing's step models remember the card counts asked for a job, and a search for
    the next card size starts inside the bracket they leave: smallest size first or largest
    first, every answer is the one a search on fresh step models gives."""
    shape = reference_shape(slug)
    for job in JOBS[::5]:
        job = unsloth.as_run(job)
        alone = {usable: fewest_cards_zero3(StepModels(shape), job, usable) for usable in ROOMS}
        for order in (ROOMS, ROOMS[::-1]):
            models = StepModels(shape)
            assert {usable: fewest_cards_zero3(models, job, usable) for usable in order} \
                == alone, job


def test_the_known_bracket_is_the_narrowest_the_asked_counts_settle() -> None:
    models = StepModels(reference_shape("llama-3.3-70b"))
    job = unsloth.as_run(Job(method="full", seq_len=4096, gradient_checkpointing=True))
    asked = {gpus: models.sharded_total(job, gpus) for gpus in (1, 5, 9, 17, 33, 64)}
    for usable in ROOMS:
        low, high = models.known_bracket(job, usable, 1, 64)
        assert asked[low] > usable or low == 1
        assert asked[high] <= usable or high == 64
        between = [gpus for gpus in asked if low < gpus < high]
        assert between == [], (usable, low, high)
    assert models.known_bracket(job, 0, 5, 9) == (5, 9)  # nothing asked strictly between
    other = unsloth.as_run(Job(method="lora", seq_len=4096))
    assert models.known_bracket(other, 0, 1, 64) == (1, 64)  # another job's counts: none
