"""A sent quote is valid through its ``valid_until`` date; after that it is expired, whether or
not anyone marked it so. Computed when read (never by a job that may not have run), so the
customer's page, the staff desk and the partner API agree on the same day.

Days are UTC dates: the desk writes ``valid_until`` as a date without a time zone, and UTC is
the one calendar every worker shares; in the shop's own zone (CET) a quote therefore lasts
until 01:00 (02:00 in summer) on the day after its last day, never shorter.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from sqlalchemy import ColumnElement, and_, or_

from app.db.tables import QuoteRequest


def today() -> date:
    """The current UTC date (what ``valid_until`` is compared with)."""
    return datetime.now(UTC).date()


def effective_status(status: str, valid_until: date | None, on: date) -> str:
    """``sent`` past its validity reads as ``expired``; every other status as stored."""
    if status == "sent" and valid_until is not None and valid_until < on:
        return "expired"
    return status


def status_is(status: str, on: date) -> ColumnElement[bool]:
    """The SQL condition for requests whose effective status is ``status`` on ``on``."""
    lapsed = and_(QuoteRequest.status == "sent", QuoteRequest.valid_until < on)
    if status == "expired":
        return or_(QuoteRequest.status == "expired", lapsed)
    if status == "sent":
        return and_(QuoteRequest.status == "sent",
                    or_(QuoteRequest.valid_until.is_(None), QuoteRequest.valid_until >= on))
    return QuoteRequest.status == status
