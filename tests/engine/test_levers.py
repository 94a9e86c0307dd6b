"""Levers are advice a buyer can act on (issue 18, point 6).

For Llama 3.1 8B, full fine-tuning at micro-batch 4, the RTX PRO 5000 72GB row used to say
"spread over 40 cards with ZeRO-3 (then 0.0 GB free)": the shop sells no system of 40 cards,
and 0 GB free is no fit. A lever now spreads a job over at most ``LEVER_MAX_CARDS`` cards,
leaves at least ``headroom_bytes`` free, and where no single change is enough, pairs of
changes are tried.
"""

from __future__ import annotations

from app.catalog.seed import load_seed_catalog
from app.engine.estimate import estimate
from app.engine.job import Job, headroom_bytes
from app.engine.levers import LEVER_MAX_CARDS
from app.estimates.service import gpu_spec
from tests.engine.reference import reference_shape

CARDS = {gpu.slug: gpu_spec(gpu) for gpu in load_seed_catalog().gpus}
FULL_8B_BATCH_4 = Job(method="full", batch_size=4)


def levers_for(job: Job, slug: str) -> list[object]:
    result = estimate(reference_shape("llama-3.1-8b"), job, [CARDS[slug]])
    return list(result.levers)


def test_no_lever_spreads_a_job_over_more_cards_than_a_system_holds() -> None:
    for slug in CARDS:
        for lever in estimate(reference_shape("llama-3.1-8b"), FULL_8B_BATCH_4,
                              [CARDS[slug]]).levers:
            assert int(str(lever.change.get("gpus", 1))) <= LEVER_MAX_CARDS, (slug, lever)


def test_every_lever_leaves_the_headroom_free() -> None:
    found = 0
    for slug, card in CARDS.items():
        for lever in estimate(reference_shape("llama-3.1-8b"), FULL_8B_BATCH_4, [card]).levers:
            found += 1
            assert lever.free_bytes >= headroom_bytes(card.usable_bytes), (slug, lever)
    assert found > 0


def test_a_card_no_single_change_rescues_gets_a_pair_of_changes() -> None:
    levers = levers_for(FULL_8B_BATCH_4, "rtx-pro-5000-48gb")
    assert levers, "the 48 GB card gets advice"
    singles = [lever for lever in levers if "+" not in lever.lever]  # type: ignore[attr-defined]
    pairs = [lever for lever in levers if "+" in lever.lever]  # type: ignore[attr-defined]
    assert singles == [] and pairs
    first = pairs[0]
    assert set(first.lever.split("+")) <= {  # type: ignore[attr-defined]
        "chunked_loss", "adamw_8bit", "gradient_checkpointing", "accumulate", "lora",
        "offload_optimizer", "shard_zero3"}


def test_a_card_that_fits_has_no_levers_and_headroom_is_five_percent_or_one_gb() -> None:
    assert levers_for(Job(method="lora"), "h200-nvl") == []
    assert headroom_bytes(151 * 10**9) == 7_550_000_000
    assert headroom_bytes(16 * 10**9) == 10**9
