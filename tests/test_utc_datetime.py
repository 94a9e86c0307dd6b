"""Timestamps are written as UTC and read back as aware UTC, on SQLite and PostgreSQL
(``app.db.types.UtcDateTime``, issue 14, point 3): no reader re-attaches a zone by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import DateTime, select, text
from sqlalchemy.exc import StatementError
from sqlalchemy.orm import Session

from app.db.base import Base
from app.db.session import SessionFactory
from app.db.tables import AuditLog
from app.db.types import NaiveDatetimeError, UtcDateTime

BERLIN_SUMMER = timezone(timedelta(hours=2))


def _audit(session: Session, at: datetime | None = None) -> int:
    row = AuditLog(actor="tests", entity="clock", entity_key="k", action="tick")
    if at is not None:
        row.at = at
    session.add(row)
    session.flush()
    return row.id


def _read(factory: SessionFactory, row_id: int) -> datetime:
    with factory() as session:
        return session.scalars(select(AuditLog.at).where(AuditLog.id == row_id)).one()


def test_an_offset_value_is_stored_as_utc_and_read_back_aware(
    session_factory: SessionFactory, backend: str
) -> None:
    """Regression: SQLite dropped the offset (10:00+02:00 came back as a naive 10:00) and
    PostgreSQL answered in the connection's zone; both now give 08:00 UTC."""
    with session_factory.begin() as session:
        row_id = _audit(session, datetime(2026, 7, 1, 10, 0, tzinfo=BERLIN_SUMMER))
    read = _read(session_factory, row_id)
    assert read.tzinfo is UTC
    assert read == datetime(2026, 7, 1, 8, 0, tzinfo=UTC)
    with session_factory() as session:  # what the database itself holds is the UTC wall clock
        if backend == "sqlite":
            stored = session.scalar(text("SELECT at FROM audit_log WHERE id = :i"), {"i": row_id})
            assert str(stored).startswith("2026-07-01 08:00:00")
        else:
            session.execute(text("SET TIME ZONE 'America/New_York'"))
            stored = session.scalar(
                text("SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') "
                     "FROM audit_log WHERE id = :i"), {"i": row_id})
            assert stored == "2026-07-01 08:00"
            assert session.scalars(select(AuditLog.at).where(AuditLog.id == row_id)
                                   ).one().tzinfo is UTC  # in another session zone too


def test_a_database_default_reads_back_aware_utc(session_factory: SessionFactory) -> None:
    """Rows written by SQL alone (``server_default=now()``: naive text on SQLite) read
    back aware as well."""
    with session_factory.begin() as session:
        session.execute(text("INSERT INTO audit_log (actor, entity, entity_key, action) "
                             "VALUES ('sql', 'clock', 'k', 'tick')"))
    with session_factory() as session:
        read = session.scalars(select(AuditLog.at).where(AuditLog.actor == "sql")).one()
    assert read.tzinfo is UTC
    assert abs(datetime.now(UTC) - read) < timedelta(minutes=5)


def test_a_naive_value_is_refused_and_nothing_is_written(
    session_factory: SessionFactory,
) -> None:
    with session_factory() as session:
        with pytest.raises(StatementError) as caught:
            _audit(session, datetime(2026, 7, 1, 10, 0))
        assert isinstance(caught.value.orig, NaiveDatetimeError)
        session.rollback()
        assert session.scalars(select(AuditLog)).all() == []


def test_a_naive_value_never_comes_back_from_any_timestamp_column() -> None:
    """Every timestamp column of every table is a UtcDateTime (none is a bare DateTime)."""
    bare = [f"{table.name}.{column.name}" for table in Base.metadata.sorted_tables
            for column in table.c
            if isinstance(column.type, DateTime) and not isinstance(column.type, UtcDateTime)]
    assert bare == []
    timestamps = [column for table in Base.metadata.sorted_tables for column in table.c
                  if isinstance(column.type, UtcDateTime)]
    assert len(timestamps) >= 14
