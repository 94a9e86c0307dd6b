"""The quotes domain's tests: a session on the seeded catalog (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from app.db.session import SessionFactory


@pytest.fixture
def seeded_session(session_factory: SessionFactory,
                   seed_catalog: Callable[[], None]) -> Iterator[Session]:
    """A session on the seed catalog; what it leaves uncommitted is rolled back, and quote
    requests and audit rows are deleted afterwards."""
    seed_catalog()
    with session_factory() as session:
        yield session
        session.rollback()
    with session_factory.begin() as session:
        session.execute(text("DELETE FROM audit_log"))
        session.execute(text("DELETE FROM quote_request"))
