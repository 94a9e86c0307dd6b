"""Column types the tables share.

:class:`UtcDateTime` is every timestamp column: what is written is converted to UTC, what is
read is a timezone-aware UTC ``datetime`` on every database. Without it, SQLite hands back naive
values (it has no zone; SQLAlchemy drops the offset on write) and PostgreSQL aware ones in the
connection's zone.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import DateTime, Dialect
from sqlalchemy.types import TypeDecorator


class NaiveDatetimeError(ValueError):
    """A naive ``datetime`` was about to be stored: its zone is unknown, so it is refused
    rather than guessed (every writer uses :func:`app.db.base.utcnow`)."""


class UtcDateTime(TypeDecorator[datetime]):
    """``DateTime(timezone=True)`` that stores UTC and reads back aware UTC.

    The database type stays ``TIMESTAMP WITH TIME ZONE`` on PostgreSQL and ``DATETIME`` on
    SQLite (the impl's), so no migration is needed and Alembic sees no drift. Writing converts
    to UTC first: SQLite keeps the wall clock and drops the offset, so 10:00+02:00 would
    otherwise read back as 10:00 UTC. A naive value is refused (:class:`NaiveDatetimeError`).
    Reading attaches UTC to SQLite's naive text (written as UTC, by this type or by
    ``CURRENT_TIMESTAMP``, which is UTC) and converts PostgreSQL's session-zone value to UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise NaiveDatetimeError(f"naive datetime {value.isoformat()}: give it a time zone")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
