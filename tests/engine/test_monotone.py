"""The bisection behind the users-at-the-floor answer (engine monotone.py)."""

from __future__ import annotations

import pytest

from app.engine.monotone import last_true


@pytest.mark.parametrize("edge", [1, 2, 50, 98, 99])
def test_last_true_finds_the_largest_n_that_holds(edge: int) -> None:
    asked: list[int] = []

    def holds(n: int) -> bool:
        asked.append(n)
        return n <= edge

    assert last_true(1, 100, holds) == edge
    assert len(asked) <= 7  # log2(99), rounded up: the work is bounded by the bounds


def test_bounds_next_to_each_other_ask_nothing() -> None:
    def never(n: int) -> bool:
        raise AssertionError(n)

    assert last_true(4, 5, never) == 4
