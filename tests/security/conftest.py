"""One seeded shop per test module and backend (SQLite and PostgreSQL), and its row counts.

The catalogue runs hundreds of requests that must all store nothing, so the seed catalog, an
API key and the app are built once per module (not per test) and emptied afterwards;
``row_counts()`` counts every table the app has, for the before/after comparison.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, text

from app.accounts import api_keys
from app.catalog.seed import seed_database
from app.config import load_settings
from app.db import tables  # noqa: F401  (registers every table on Base.metadata)
from app.db.base import Base
from app.db.session import SessionFactory, make_session_factory
from app.main import create_app

RowCounts = dict[str, int]


@dataclass(frozen=True)
class Shop:
    """The seeded app: a client that returns 5xx answers instead of raising, a key."""

    client: TestClient
    auth: dict[str, str]
    database_url: str
    sessions: SessionFactory


def count_rows(engine: Engine) -> RowCounts:
    """Rows in every table of the schema."""
    with engine.connect() as connection:
        return {
            table.name: connection.execute(select(func.count()).select_from(table)).scalar_one()
            for table in Base.metadata.sorted_tables
        }


def _empty(engine: Engine) -> None:
    with engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            if table.name != "catalog_revision":
                connection.execute(table.delete())
        connection.execute(text("UPDATE catalog_revision SET revision = 0, token = 'initial'"))


@pytest.fixture(scope="module")
def shop(engine: Engine, database_url: str) -> Iterator[Shop]:
    """The seed catalog, a partner key without a practical rate limit, and the app on them."""
    sessions = make_session_factory(engine)
    with sessions.begin() as session:
        seed_database(session)
        partner = api_keys.create_partner(session, name="Catalogue").id
        _, key = api_keys.issue_key(session, partner_id=partner, label="security",
                                    rate_limit_per_minute=1_000_000)
    app = create_app(load_settings(database_url=database_url))
    try:
        with TestClient(app, follow_redirects=False, raise_server_exceptions=False) as client:
            yield Shop(client, {"Authorization": f"Bearer {key}"}, database_url, sessions)
    finally:
        _empty(engine)


@pytest.fixture
def row_counts(engine: Engine) -> Callable[[], RowCounts]:
    """``row_counts()``: rows per table now."""
    return lambda: count_rows(engine)
