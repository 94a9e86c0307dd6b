"""The peak of a training step as a function of micro-batch and sequence, and fitting it to cards.

A :class:`StepModel` holds, for each phase of the step, the bytes that do not depend on the
batch (weights, optimizer states, gradients, autocast copies, a gathered ZeRO-3 layer) and the
coefficients of those that do (activations, loss head). Evaluating a (batch, sequence) pair is
then a handful of multiplications, which is what lets one estimate answer the largest
micro-batch and the longest sequence for every card in the catalog in well under a
millisecond.

Total per GPU = max(model states, the largest phase's live bytes)
              + fragmentation margin on the per-step tensors + fixed context overhead.
Taking the model states as a floor keeps the article's accounting (e.g. the hf count's bf16
weight copy, which autocast frees before the optimizer step) from being undercut.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from app.engine.overhead import FRAGMENTATION_FRACTION

Phase = Literal["forward", "backward", "optimizer"]

# No model we know trains beyond this many positions; bounds the sequence search when a
# config does not state its maximum.
SEQUENCE_SEARCH_LIMIT = 1 << 22
# Reported when nothing in the step grows with the batch (a degenerate config).
BATCH_SEARCH_LIMIT = 1 << 20


@dataclass(frozen=True, slots=True)
class PhaseTerms:
    """One moment of the step: ``static + fixed + per_token * t + per_token_seq * t * s``.

    ``static`` is allocated once (weights, optimizer states); the rest is per step and carries
    the fragmentation margin.
    """

    name: str
    phase: Phase
    static: int
    fixed: int
    per_token: int
    per_token_seq: int

    def dynamic(self, batch: int, seq: int) -> int:
        tokens = batch * seq
        return self.fixed + tokens * (self.per_token + self.per_token_seq * seq)

    def live(self, batch: int, seq: int) -> int:
        return self.static + self.dynamic(batch, seq)


@dataclass(frozen=True, slots=True)
class StepTotals:
    total_bytes: int
    peak_live_bytes: int
    peak_moment: PhaseTerms
    fragmentation_bytes: int


@dataclass(frozen=True)
class StepModel:
    moments: tuple[PhaseTerms, ...]
    model_states_bytes: int
    fixed_overhead_bytes: int

    def totals(self, batch: int, seq: int) -> StepTotals:
        peak = max(self.moments, key=lambda m: m.live(batch, seq))
        dynamic = max(m.dynamic(batch, seq) for m in self.moments)
        fragmentation = math.ceil(dynamic * FRAGMENTATION_FRACTION)
        live = peak.live(batch, seq)
        total = max(live, self.model_states_bytes) + fragmentation + self.fixed_overhead_bytes
        return StepTotals(total, live, peak, fragmentation)

    def total_bytes(self, batch: int, seq: int) -> int:
        """Same as ``totals().total_bytes``, kept lean: it runs inside every search."""
        live = 0
        dynamic = 0
        tokens = batch * seq
        for m in self.moments:
            d = m.fixed + tokens * (m.per_token + m.per_token_seq * seq)
            if d > dynamic:
                dynamic = d
            if m.static + d > live:
                live = m.static + d
        return (
            max(live, self.model_states_bytes)
            + math.ceil(dynamic * FRAGMENTATION_FRACTION)
            + self.fixed_overhead_bytes
        )

    def fits(self, usable_bytes: int, batch: int, seq: int) -> bool:
        return self.total_bytes(batch, seq) <= usable_bytes

    @cached_property
    def _pair_terms(self) -> tuple[tuple[int, int, int], ...]:
        """Every (live moment, dynamic moment) pair as ``c + t*k + t*s*q <= budget``
        coefficients, with the model-state floor as one more live moment. The total fits when
        every pair's inequality holds (up to the rounding of the fragmentation margin), which
        gives the closed-form bounds below. Independent of the card, so computed once."""
        floor = PhaseTerms("floor", "optimizer", self.model_states_bytes, 0, 0, 0)
        frac = FRAGMENTATION_FRACTION
        return tuple(
            (
                int(live_m.static + live_m.fixed + frac * dyn_m.fixed),
                int(live_m.per_token + frac * dyn_m.per_token) + 1,
                int(live_m.per_token_seq + frac * dyn_m.per_token_seq)
                + (1 if live_m.per_token_seq or dyn_m.per_token_seq else 0),
            )
            for live_m in (*self.moments, floor)
            for dyn_m in self.moments
        )

    def _pairs(self, usable_bytes: int) -> list[tuple[int, int, int]]:
        budget = usable_bytes - self.fixed_overhead_bytes
        return [(c - budget, k, q) for c, k, q in self._pair_terms]

    def max_batch_size(self, usable_bytes: int, seq: int) -> int:
        """The largest micro-batch that fits at this sequence length (0 if none does).

        Each moment's total is linear in the batch, so a bound comes in closed form; the exact
        answer is then found by stepping from it with the same arithmetic as
        :meth:`total_bytes`.
        """
        if not self.fits(usable_bytes, 1, seq):
            return 0
        bound = BATCH_SEARCH_LIMIT
        for const, per_token, per_token_seq in self._pairs(usable_bytes):
            slope = seq * (per_token + per_token_seq * seq)
            if slope > 0:
                bound = min(bound, max(1, -const // slope))
        return self._step(lambda b: self.fits(usable_bytes, b, seq), bound, BATCH_SEARCH_LIMIT)

    def max_seq_len(self, usable_bytes: int, batch: int, limit: int | None) -> int:
        """The longest sequence that fits at this micro-batch, up to the model's maximum.

        Each moment is quadratic in the sequence (eager attention) or linear; the bound is the
        smallest positive root, then refined exactly as for the batch."""
        cap = limit or SEQUENCE_SEARCH_LIMIT
        if not self.fits(usable_bytes, batch, 1):
            return 0
        bound = cap
        for const, per_token, per_token_seq in self._pairs(usable_bytes):
            a = batch * per_token_seq
            b = batch * per_token
            if a > 0:
                root = (-b + math.sqrt(b * b - 4 * a * const)) / (2 * a)
            elif b > 0:
                root = -const / b
            else:
                continue
            bound = min(bound, max(1, int(root)))
        return self._step(lambda s: self.fits(usable_bytes, batch, s), bound, cap)

    @staticmethod
    def _step(fits: Callable[[int], bool], start: int, cap: int) -> int:
        """From a bound near the answer, the largest value in [1, cap] that fits (fits(1) holds).

        Steps one at a time near the bound and bisects if it was far off."""
        value = max(1, min(start, cap))
        if fits(value):
            if value == cap or not fits(value + 1):
                return value
            low, high = value + 1, cap + 1  # fits(low); high is past the cap
            if fits(cap):
                return cap
            high = cap
        else:
            if value == 1 or fits(value - 1):
                return value - 1 if value > 1 else 1
            low, high = 1, value - 1
        while high - low > 1:  # fits(low), not fits(high)
            mid = (low + high) // 2
            if fits(mid):
                low = mid
            else:
                high = mid
        return low
