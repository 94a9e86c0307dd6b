"""Searches over a monotone yes/no question on whole numbers.

Several engine answers are the edge of a monotone question: the fewest cards that hold a job
under ZeRO-3 (per-GPU bytes fall as cards are added), the most users a card serves at the
speed floor (per-user speed falls as users are added). Each is found by bisection between two
bounds whose answers the caller has already checked, in O(log(high - low)) questions, so the
work stays bounded by the bounds the caller sets, never by a value a user sends.
"""

from __future__ import annotations

from collections.abc import Callable


def first_true(low: int, high: int, holds: Callable[[int], bool]) -> int:
    """The smallest n in (low, high] for which ``holds(n)``, given ``holds(low)`` is false,
    ``holds(high)`` is true and the answer only turns from false to true as n grows."""
    while high - low > 1:
        middle = (low + high) // 2
        if holds(middle):
            high = middle
        else:
            low = middle
    return high


def last_true(low: int, high: int, holds: Callable[[int], bool]) -> int:
    """The largest n in [low, high) for which ``holds(n)``, given ``holds(low)`` is true,
    ``holds(high)`` is false and the answer only turns from true to false as n grows."""
    while high - low > 1:
        middle = (low + high) // 2
        if holds(middle):
            low = middle
        else:
            high = middle
    return low
