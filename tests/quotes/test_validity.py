"""A sent quote past its validity date reads as expired on every surface, the same day."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from app.quotes.validity import effective_status

DAY = date(2026, 12, 3)


@pytest.mark.parametrize("status, valid_until, expected", [
    ("sent", DAY - timedelta(days=1), "expired"),
    ("sent", DAY, "sent"),  # valid through its last day
    ("sent", None, "sent"),
    ("accepted", DAY - timedelta(days=30), "accepted"),  # accepted in time stays accepted
    ("in_progress", DAY - timedelta(days=1), "in_progress"),  # a draft's date is no offer yet
    ("expired", DAY + timedelta(days=9), "expired"),  # marked by staff
])
def test_effective_status(status: str, valid_until: date | None, expected: str) -> None:
    assert effective_status(status, valid_until, DAY) == expected
