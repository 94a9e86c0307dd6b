"""A search over a monotone yes/no question on whole numbers.

The most users a card serves at the speed floor is the edge of a monotone question (per-user
speed falls as users are added), found by bisection between two bounds whose answers the
caller has already checked, in O(log(high - low)) questions, so the work stays bounded by the
bounds the caller sets, never by a value a user sends. (The fewest ZeRO-3 cards, an edge of
the same kind, are searched by ``levers.first_fitting``, which guesses from the bytes at the
bracket's ends before it halves.)
"""

from __future__ import annotations

from collections.abc import Callable


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
