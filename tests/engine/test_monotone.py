"""The bisection shared by the fewest-cards and users-at-the-floor answers (engine monotone.py)."""

from __future__ import annotations

import pytest

from app.engine.monotone import first_true, last_true


@pytest.mark.parametrize("edge", [2, 3, 17, 63, 64])
def test_first_true_finds_the_smallest_n_that_holds(edge: int) -> None:
    asked: list[int] = []

    def holds(n: int) -> bool:
        asked.append(n)
        return n >= edge

    assert first_true(1, 64, holds) == edge
    assert len(asked) <= 6  # log2(63), rounded up: the work is bounded by the bounds


@pytest.mark.parametrize("edge", [1, 2, 50, 98, 99])
def test_last_true_finds_the_largest_n_that_holds(edge: int) -> None:
    assert last_true(1, 100, lambda n: n <= edge) == edge


def test_bounds_next_to_each_other_ask_nothing() -> None:
    def never(n: int) -> bool:
        raise AssertionError(n)

    assert first_true(4, 5, never) == 5
    assert last_true(4, 5, never) == 4
