"""The peak of a training step as a function of micro-batch and sequence, and fitting it to cards.

A :class:`StepModel` holds, for each phase of the step, the bytes that do not depend on the
batch (weights, optimizer states, gradients, autocast copies, a gathered ZeRO-3 layer) and the
coefficients of those that do (activations, loss head). Evaluating a (batch, sequence) pair is
then a handful of multiplications, which is what lets one estimate answer the largest
micro-batch and the longest sequence for every card in the catalog in well under a
millisecond.

Allocated per GPU = max(model states, the largest phase's live bytes);
reserved = allocated + the blocks the caching allocator keeps that the peak cannot reuse, and
never less than the states plus a loss head in segments of its own (overhead.py,
:class:`ReserveTerms`); total per GPU = reserved + fixed context overhead (what nvidia-smi
shows; held against the card).
Taking the model states as a floor keeps the article's accounting (e.g. the hf count's bf16
weight copy, which autocast frees before the optimizer step) from being undercut.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

Phase = Literal["forward", "backward", "optimizer"]

# No model we know trains beyond this many positions; bounds the sequence search when a
# config does not state its maximum.
SEQUENCE_SEARCH_LIMIT = 1 << 22
# Reported when nothing in the step grows with the batch (a degenerate config).
BATCH_SEARCH_LIMIT = 1 << 20


class PhaseTerms(NamedTuple):
    """One moment of the step: ``static + fixed + per_token * t + per_token_seq * t * s``.

    ``static`` is allocated once (weights, optimizer states); the rest is per step and carries
    the allocator's reserve. ``strands``: the moment's requests are the loss head's and a
    layer's forward, which cannot reuse the blocks freed before them (:class:`ReserveTerms`);
    the backward's layers and the optimizer step split cached blocks and strand none.

    A named tuple, not a frozen dataclass: one sizing builds a few hundred of them (five or
    six per step model), and a tuple is built at a fraction of the cost.
    """

    name: str
    phase: Phase
    static: int
    fixed: int
    per_token: int
    per_token_seq: int
    strands: bool = True

    def dynamic(self, batch: int, seq: int) -> int:
        tokens = batch * seq
        return self.fixed + tokens * (self.per_token + self.per_token_seq * seq)

    def live(self, batch: int, seq: int) -> int:
        return self.static + self.dynamic(batch, seq)


@dataclass(frozen=True, slots=True)
class ReserveTerms:
    """What the caching allocator reserves beyond the live-tensor peak (overhead.py).

    ``stranded``: cached blocks freed before a moment that its requests cannot reuse,
    ``per_token * t + per_token_seq * t * s``, at each moment that ``strands``; plus
    ``fraction`` of the peak's per-step bytes (FSDP's per-stream pools only). ``floor``:
    reserved is never less than ``floor_static + floor_per_token * t``, the states alive between
    steps plus a loss head in segments of its own, when the first step's gradients and
    optimizer states took the blocks its loss head freed.
    """

    per_token: int = 0
    per_token_seq: int = 0
    fraction: float = 0.0
    floor_static: int = 0
    floor_per_token: int = 0
    first_step_absent: int = 0
    """States the first step's loss head runs without (the optimizer's, created by its step)."""
    first_step_created: int = 0
    """What the first step creates after its loss head and keeps (gradients, optimizer states)."""
    head_blocks: tuple[int, ...] = ()
    """The loss head's segments per token, in the order it asks for them (second step)."""

    def second_step(self, stranding: int, batch: int, seq: int) -> int:
        """Reserved at the second step when the first one's loss head ran before the gradients
        and optimizer states existed (overhead.py, "the second step's loss head"); 0 without a
        whole loss head.

        The first step reserves ``r1``: its strandings without the optimizer states, and at
        least the states. The second step's loss head needs new segments for the blocks the
        first step's kept tensors took: never more than the whole head, than what the states
        and a whole head leave beyond ``r1`` plus the one block the kept tensors reach into,
        or than the kept tensors themselves plus that block. Each bound grows with the tokens,
        so the total does too (the searches rely on it)."""
        if not self.head_blocks:
            return 0
        tokens = batch * seq
        r1 = max(stranding - self.first_step_absent, self.floor_static)
        head = tokens * sum(self.head_blocks)
        largest = tokens * max(self.head_blocks)
        created = self.first_step_created
        return max(r1, min(r1 + head, self.floor_static + head + largest,
                           r1 + created + min(created, largest)))

    def stranded(self, batch: int, seq: int) -> int:
        tokens = batch * seq
        return tokens * (self.per_token + self.per_token_seq * seq)

    def reserved(self, allocated: int, stranding: int, dynamic: int, batch: int,
                 seq: int) -> int:
        """``max_memory_reserved`` for a step whose allocated peak is ``allocated`` and whose
        largest live bytes plus stranded blocks, over the moments that strand, ``stranding``."""
        return max(allocated + math.ceil(dynamic * self.fraction), stranding,
                   self.floor_static + batch * seq * self.floor_per_token,
                   self.second_step(stranding, batch, seq))


@dataclass(frozen=True, slots=True)
class StepTotals:
    total_bytes: int
    peak_live_bytes: int
    peak_moment: PhaseTerms
    reserve_bytes: int
    fixed_overhead_bytes: int

    @property
    def allocated_bytes(self) -> int:
        """The live-tensor peak with the model states as its floor (``max_memory_allocated``)."""
        return self.reserved_bytes - self.reserve_bytes

    @property
    def reserved_bytes(self) -> int:
        """Allocated plus the allocator's reserve (``max_memory_reserved``)."""
        return self.total_bytes - self.fixed_overhead_bytes


@dataclass(frozen=True, slots=True)
class StepModel:
    moments: tuple[PhaseTerms, ...]
    model_states_bytes: int
    fixed_overhead_bytes: int
    # The caching allocator's reserve for the job (overhead.reserve_terms).
    reserve: ReserveTerms

    def totals(self, batch: int, seq: int) -> StepTotals:
        peak = max(self.moments, key=lambda m: m.live(batch, seq))
        dynamic = max(m.dynamic(batch, seq) for m in self.moments)
        live = peak.live(batch, seq)
        allocated = max(live, self.model_states_bytes)
        stranded = self.reserve.stranded(batch, seq)
        stranding = max(m.live(batch, seq) + stranded for m in self.moments if m.strands) \
            if any(m.strands for m in self.moments) else 0
        reserved = self.reserve.reserved(allocated, stranding, dynamic, batch, seq)
        total = reserved + self.fixed_overhead_bytes
        return StepTotals(total, live, peak, reserved - allocated, self.fixed_overhead_bytes)

    def total_bytes(self, batch: int, seq: int) -> int:
        """Same as ``totals().total_bytes``, kept lean: it runs inside every search."""
        live = 0
        dynamic = 0
        stranding = 0
        tokens = batch * seq
        stranded = self.reserve.stranded(batch, seq)
        for m in self.moments:
            d = m.fixed + tokens * (m.per_token + m.per_token_seq * seq)
            if d > dynamic:
                dynamic = d
            if m.static + d > live:
                live = m.static + d
            if m.strands and m.static + d + stranded > stranding:
                stranding = m.static + d + stranded
        return (self.reserve.reserved(max(live, self.model_states_bytes), stranding, dynamic,
                                      batch, seq)
                + self.fixed_overhead_bytes)

    def fits(self, usable_bytes: int, batch: int, seq: int) -> bool:
        return self.total_bytes(batch, seq) <= usable_bytes

    def max_batch_size(self, usable_bytes: int, seq: int) -> int:
        """The largest micro-batch that fits at this sequence length (0 if none does)."""
        return _largest_fitting(lambda b: self.total_bytes(b, seq), usable_bytes,
                                BATCH_SEARCH_LIMIT)

    def max_seq_len(self, usable_bytes: int, batch: int, limit: int | None) -> int:
        """The longest sequence that fits at this micro-batch, up to the model's maximum
        (0 if not even one token does)."""
        return _largest_fitting(lambda s: self.total_bytes(batch, s), usable_bytes,
                                limit or SEQUENCE_SEARCH_LIMIT)


# Secant steps before falling back to bisection; two or three suffice for real jobs.
SECANT_STEPS = 8


def _largest_fitting(total: Callable[[int], int], budget: int, cap: int) -> int:
    """The largest x in [1, cap] with ``total(x) <= budget``, or 0.

    ``total`` is increasing and convex in x (a maximum of linear or quadratic phase terms
    plus a margin), so the chord between a fitting and a non-fitting point never
    overshoots the answer: each secant step lands on a fitting x, and checking x + 1 ends
    the search. Bisection takes over should the chord converge slowly. Exact to one, with
    the same arithmetic as :meth:`StepModel.total_bytes`.
    """
    lo, f_lo = 1, total(1)
    if f_lo > budget:
        return 0
    hi, f_hi = cap, total(cap)
    if f_hi <= budget:
        return cap
    for _ in range(SECANT_STEPS):
        if hi - lo <= 1:
            return lo
        x = lo + int((budget - f_lo) * (hi - lo) / (f_hi - f_lo))
        x = min(max(x, lo + 1), hi - 1)
        f_x = total(x)
        if f_x > budget:
            hi, f_hi = x, f_x
            continue
        lo, f_lo = x, f_x
        if lo + 1 == hi:
            return lo
        f_next = total(lo + 1)
        if f_next > budget:
            return lo
        lo, f_lo = lo + 1, f_next
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if total(mid) <= budget:
            lo = mid
        else:
            hi = mid
    return lo
