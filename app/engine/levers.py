"""Levers: the single changes (and pairs of them, and ZeRO-3 over a few cards) that make a job
fit a card it does not fit as set, each with its price in speed."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.engine.job import GpuSpec, Job, headroom_bytes, with_changes
from app.engine.step_model import StepModels

LEVER_MAX_CARDS = 8
"""The most cards a lever spreads a job over: one HGX/DGX-class board holds 8 GPUs, the largest
system a GPU shop sells as one machine ("spread over 40 cards" is no
advice)."""

# Price in speed of each lever, as the article's sources state it.
CHECKPOINTING_SPEED = (
    "about 20-33 % slower: layers are recomputed in the backward pass "
    "(Hugging Face: about 20 %; ZeRO paper: 33 % recompute overhead)"
)
ADAM_8BIT_SPEED = "about the same speed (bitsandbytes 8-bit Adam; 2 bytes of state per param)"
LORA_SPEED = "faster per step; trains an adapter instead of every weight (quality may differ)"
QLORA_SPEED = "slower per step: 4-bit weights are dequantised for every matmul"
ACCUMULATION_SPEED = "same effective batch through gradient accumulation; lower GPU utilisation"
CHUNKED_LOSS_SPEED = (
    "about the same speed; needs a chunked or fused cross-entropy (Liger Kernel, torchtune)"
)
SHARDING_SPEED = "more cards; ZeRO-3/FSDP moves 1.5x the traffic of plain data parallelism"
OFFLOAD_SPEED = "much slower optimizer step: states live in CPU memory (ZeRO-Offload)"


@dataclass(frozen=True, slots=True)
class Lever:
    gpu: str
    lever: str
    change: dict[str, object]
    total_bytes: int
    free_bytes: int
    speed: str


def fewest_cards_zero3(models: StepModels, job: Job, usable_bytes: int,
                       limit: int = 64) -> int | None:
    """The fewest cards of this size that hold the job under ZeRO-3 (None beyond ``limit``).

    Per-GPU bytes fall as cards are added, so the answer is the edge of a monotone question,
    found by :func:`first_fitting` inside the bracket that the counts already asked for this
    job (by the search for another card size) leave open."""
    def total(n: int) -> int:
        return models.sharded_total(job, n)

    if total(1) <= usable_bytes:
        return 1
    if total(limit) > usable_bytes:
        return None
    low, high = models.known_bracket(job, usable_bytes, 1, limit)
    return first_fitting(total, usable_bytes, low, high)


def first_fitting(total: Callable[[int], int], usable_bytes: int, low: int, high: int) -> int:
    """The fewest cards n in (``low``, ``high``] with ``total(n) <= usable_bytes``, given
    ``total(low)`` over it, ``total(high)`` within it and ``total`` falling as n grows.

    Each round guesses the edge by :func:`sharded_guess` from the bracket's two ends, asks
    the guess and its neighbour towards the bracket's other side (a right guess ends the search
    in those two questions), and keeps the smaller bracket; a round that does not halve the
    bracket is followed by a plain halving, so the questions stay O(log(high - low)) as a
    bisection's do, and the answer is the bisection's answer."""
    over, within = total(low), total(high)
    interpolate = True
    while high - low > 1:
        width = high - low
        if interpolate:
            guess = sharded_guess(low, over, high, within, usable_bytes)
        else:
            guess = (low + high) // 2
        for probe in (guess, guess - 1 if total(guess) <= usable_bytes else guess + 1):
            if low < probe < high:
                if total(probe) <= usable_bytes:
                    high, within = probe, total(probe)
                else:
                    low, over = probe, total(probe)
        interpolate = 2 * (high - low) <= width
    return high


def sharded_guess(low: int, over: int, high: int, within: int, usable_bytes: int) -> int:
    """The card count strictly between ``low`` and ``high`` where per-GPU bytes, ``over`` on
    ``low`` cards and ``within`` on ``high``, reach ``usable_bytes`` if they are a part every
    card holds plus a part split over the cards (ZeRO-3 shards the weights, gradients and
    optimizer states; Rajbhandari et al. 2020, section 5.1): linear in 1/n between the two ends,
    in whole numbers. A guess only: what else changes with the count is left to the questions
    that check it."""
    above = over - usable_bytes  # > 0
    drop = over - within  # >= above
    guess = -(-low * high * drop // (high * drop - above * (high - low)))
    return min(high - 1, max(low + 1, guess))


@dataclass(frozen=True, slots=True)
class _LeverOption:
    name: str
    change: dict[str, object]
    speed: str
    job: Job


def lever_options(job: Job) -> list[_LeverOption]:
    """The single changes worth trying, in order of their price in speed."""
    options: list[tuple[str, dict[str, object], str]] = []
    if job.loss_head == "standard":
        options.append(("chunked_loss", {"loss_head": "chunked"}, CHUNKED_LOSS_SPEED))
    if job.optimizer in ("adamw", "paged_adamw_32bit"):
        options.append(("adamw_8bit", {"optimizer": "adamw_8bit"}, ADAM_8BIT_SPEED))
    if not job.gradient_checkpointing:
        options.append(
            ("gradient_checkpointing", {"gradient_checkpointing": True}, CHECKPOINTING_SPEED)
        )
    if job.batch_size > 1:
        options.append(("accumulate", {"gradient_accumulation": 2}, ACCUMULATION_SPEED))
    if job.method == "full":
        options.append(("lora", {"method": "lora"}, LORA_SPEED))
    if job.method == "lora":
        options.append(("qlora", {"method": "qlora"}, QLORA_SPEED))
    if job.offload == "none":
        options.append(("offload_optimizer", {"offload": "optimizer"}, OFFLOAD_SPEED))
    return [_LeverOption(name, change, speed, with_changes(job, **change))
            for name, change, speed in options]


def lever_pairs(job: Job, options: Sequence[_LeverOption]) -> list[_LeverOption]:
    """Every two of ``options`` that change different settings, in :func:`lever_options`'
    order: made once per job, then held against each card's memory."""
    pairs: list[_LeverOption] = []
    for first, second in itertools.combinations(options, 2):
        if first.change.keys() & second.change.keys():
            continue
        change = {**first.change, **second.change}
        pairs.append(_LeverOption(f"{first.name}+{second.name}", change,
                                  f"{first.speed}; {second.speed}",
                                  with_changes(job, **change)))
    return pairs


def levers_for(
    models: StepModels, job: Job, gpu: GpuSpec, options: Sequence[_LeverOption],
    pairs: Sequence[_LeverOption] | None = None,
) -> list[Lever]:
    """Changes that make the job fit this card with :func:`headroom_bytes` to spare: single
    changes cheapest in speed first, then pairs of them (``pairs``: :func:`lever_pairs` of
    ``options``, made here when not given), then ZeRO-3 over at most :data:`LEVER_MAX_CARDS`
    cards (alone, then with one change). A change that leaves less than the headroom free is
    no advice and is left out. A change's memory is the same on every card (it is asked of
    ``models`` once), except for a smaller micro-batch, which is the largest that fits."""
    usable = gpu.usable_bytes
    room = usable - headroom_bytes(usable)
    found: list[Lever] = []

    def attempt(name: str, change: dict[str, object], speed: str, variant: Job) -> None:
        if "gradient_accumulation" in change:
            model = models.get(variant)
            batch = model.max_batch_size(room, job.seq_len)
            if batch < 1:
                return
            change = {**change, "batch_size": batch,
                      "gradient_accumulation": math.ceil(job.batch_size / batch)}
            total = model.total_bytes(batch, job.seq_len)
        else:
            total = models.total_bytes(variant)
        if total <= room:
            found.append(Lever(gpu.slug, name, change, total, usable - total, speed))

    for option in [*options, *(lever_pairs(job, options) if pairs is None else pairs)]:
        attempt(option.name, option.change, option.speed, option.job)
    cards = fewest_cards_zero3(models, job, room, limit=LEVER_MAX_CARDS)
    if cards is not None and cards > 1:
        attempt("shard_zero3", {"gpus": cards, "sharding": "zero3"}, SHARDING_SPEED,
                models.sharded_job(job, cards))
    elif cards is None:
        for option in options:
            cards = fewest_cards_zero3(models, option.job, room, limit=LEVER_MAX_CARDS)
            if cards is not None and cards > 1:
                attempt(f"{option.name}+shard_zero3",
                        {**option.change, "gpus": cards, "sharding": "zero3"},
                        f"{option.speed}; {SHARDING_SPEED}",
                        models.sharded_job(option.job, cards))
                break
    return found
