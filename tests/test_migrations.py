"""The migrations build exactly the ORM's schema, and run both ways, on both databases."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect

from app.db import migrate
from app.db.base import Base
from app.db.session import make_engine

CATALOG_TABLES = {"gpu_sku", "system", "model_card", "catalog_revision"}


def _tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def _state(url: str) -> migrate.MigrationState:
    engine = make_engine(url)
    try:
        return migrate.migration_state(engine)
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade(empty_database_url: str) -> None:
    assert _state(empty_database_url).current is None

    migrate.upgrade(empty_database_url)
    assert _tables(empty_database_url) >= CATALOG_TABLES
    assert _state(empty_database_url).at_head

    migrate.downgrade(empty_database_url, "base")
    assert _tables(empty_database_url) & CATALOG_TABLES == set()
    assert _state(empty_database_url).current is None

    migrate.upgrade(empty_database_url)
    assert _tables(empty_database_url) >= CATALOG_TABLES
    assert _state(empty_database_url).at_head


def test_autogenerate_finds_no_drift_between_orm_and_migrations(engine: Engine) -> None:
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"compare_type": True, "compare_server_default": False}
        )
        assert compare_metadata(context, Base.metadata) == []


def test_there_is_exactly_one_head() -> None:
    assert migrate.head_revision() == "20261204_0010"
