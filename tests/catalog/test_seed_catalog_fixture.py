"""The ``seed_catalog`` fixture (tests/conftest.py) writes again the rows ``seed_database`` wrote
the first time: the same catalog, row for row, apart from ``updated_at`` and the revision token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, select

from app.catalog.seed import seed_database
from app.db.session import SessionFactory
from app.db.tables import CatalogRevision, GpuSku, ModelCard, System


def _catalog(engine: Engine) -> tuple[list[dict[str, Any]], ...]:
    with engine.connect() as connection:
        return tuple(
            [{k: v for k, v in row._mapping.items() if k != "updated_at"}
             for row in connection.execute(select(model.__table__).order_by(model.slug))]
            for model in (GpuSku, System, ModelCard))


def _revision(engine: Engine) -> tuple[int, str]:
    with engine.connect() as connection:
        row = connection.execute(select(CatalogRevision.revision, CatalogRevision.token)).one()
    return int(row.revision), str(row.token)


def _empty(session_factory: SessionFactory) -> None:
    with session_factory.begin() as session:
        for model in (System, GpuSku, ModelCard):
            session.query(model).delete()


def test_the_second_seed_is_the_first_again(engine: Engine, session_factory: SessionFactory,
                                            seed_catalog: Callable[[], None]) -> None:
    seed_catalog()
    first, (revision, token) = _catalog(engine), _revision(engine)
    assert all(first) and revision >= 1
    _empty(session_factory)
    seed_catalog()
    again, (revision_again, token_again) = _catalog(engine), _revision(engine)
    assert again == first
    assert revision_again == revision and token_again != token


def test_it_matches_seed_database_into_an_empty_catalog(
        engine: Engine, session_factory: SessionFactory,
        seed_catalog: Callable[[], None]) -> None:
    seed_catalog()
    seed_catalog_rows = _catalog(engine)
    _empty(session_factory)
    with session_factory.begin() as session:
        seed_database(session)
    fresh = _catalog(engine)
    ids = ("id", "gpu_sku_id")
    assert [[{k: v for k, v in row.items() if k not in ids} for row in table]
            for table in seed_catalog_rows] == [
        [{k: v for k, v in row.items() if k not in ids} for row in table] for table in fresh]
