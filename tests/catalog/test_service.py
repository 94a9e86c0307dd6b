"""The catalog read service: snapshots, cache, invalidation, plain records."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session
from sqlalchemy.orm.exc import StaleDataError

from app.catalog import revision
from app.catalog import service as catalog_service
from app.catalog.schemas import Catalog, GpuRecord, ModelRecord, SystemRecord
from app.catalog.seed import load_seed_catalog, seed_database
from app.catalog.service import CatalogCache
from app.db.session import SessionFactory
from app.db.tables import GpuSku
from app.errors import NotFound


@pytest.fixture
def cache() -> CatalogCache:
    """This test's own, empty catalog cache (the app holds one on app.state.caches)."""
    return CatalogCache()


def test_catalog_is_active_only_unless_asked(
    session: Session, cache: CatalogCache, make_gpu: Any, make_system: Any, make_model: Any
) -> None:
    live = make_gpu(session, slug="live")
    retired = make_gpu(session, slug="retired", active=False)
    make_system(session, slug="on-live", gpu_sku=live)
    make_system(session, slug="on-retired", gpu_sku=retired)
    make_model(session, slug="m-live")
    make_model(session, slug="m-hidden", active=False)
    session.commit()

    catalog = catalog_service.get_catalog(session, cache)
    assert [gpu.slug for gpu in catalog.gpus] == ["live"]
    assert [system.slug for system in catalog.systems] == ["on-live"]
    assert [model.slug for model in catalog.models] == ["m-live"]
    everything = catalog_service.get_catalog(session, cache, include_inactive=True)
    assert {gpu.slug for gpu in everything.gpus} == {"live", "retired"}
    assert everything.system("on-retired").gpu_slug == "retired"


def test_lookups_by_slug_raise_not_found(
    session: Session, cache: CatalogCache, make_gpu: Any
) -> None:
    make_gpu(session, slug="hidden", active=False)
    session.commit()

    with pytest.raises(NotFound, match="nope"):
        catalog_service.get_gpu(session, cache, slug="nope")
    with pytest.raises(NotFound):
        catalog_service.get_gpu(session, cache, slug="hidden")
    hidden = catalog_service.get_gpu(session, cache, slug="hidden", include_inactive=True)
    assert hidden.active is False
    with pytest.raises(NotFound):
        catalog_service.get_model(session, cache, slug="nope")
    with pytest.raises(NotFound):
        catalog_service.get_system(session, cache, slug="nope")


def test_records_are_plain_frozen_data(
    session: Session, cache: CatalogCache, make_gpu: Any
) -> None:
    make_gpu(session, slug="g")
    session.commit()

    gpu = catalog_service.get_gpu(session, cache, slug="g")
    assert type(gpu) is GpuRecord
    assert gpu.updated_at is not None and gpu.updated_at.tzinfo is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu.name = "changed"  # type: ignore[misc]


def test_the_snapshot_is_cached_between_calls(
    session: Session, cache: CatalogCache, make_gpu: Any
) -> None:
    make_gpu(session, slug="g")
    session.commit()

    first = catalog_service.get_catalog(session, cache)
    assert catalog_service.get_catalog(session, cache) is first


def _another_worker_renames(
    session_factory: SessionFactory, session: Session, slug: str, name: str
) -> None:
    """Another worker writes and bumps the revision, but cannot touch our cache."""
    with session_factory.begin() as other:
        other.scalars(select(GpuSku).where(GpuSku.slug == slug)).one().name = name
        revision.bump(other)
    session.commit()  # end our read transaction so we see the other worker's commit


def test_another_workers_write_reloads_the_cache_within_the_check_interval(
    session_factory: SessionFactory, session: Session, make_gpu: Any,
) -> None:
    now = [1000.0]
    cache = CatalogCache(clock=lambda: now[0])
    make_gpu(session, slug="g", name="Old name")
    session.commit()
    assert catalog_service.get_gpu(session, cache, slug="g").name == "Old name"

    _another_worker_renames(session_factory, session, "g", "New name")

    now[0] += catalog_service.REVISION_CHECK_INTERVAL_S / 2
    assert catalog_service.get_gpu(session, cache, slug="g").name == "Old name"  # not asked yet
    now[0] += catalog_service.REVISION_CHECK_INTERVAL_S / 2
    assert catalog_service.get_gpu(session, cache, slug="g").name == "New name"


def test_the_staff_desk_always_sees_the_current_revision(
    session_factory: SessionFactory, session: Session, make_gpu: Any,
) -> None:
    cache = CatalogCache(clock=lambda: 1000.0)  # the interval never ends
    make_gpu(session, slug="g", name="Old name")
    session.commit()
    assert catalog_service.get_gpu(session, cache, slug="g").name == "Old name"
    _another_worker_renames(session_factory, session, "g", "New name")
    assert catalog_service.get_gpu(session, cache, slug="g").name == "Old name"  # customers: cached
    staff_view = catalog_service.get_catalog(session, cache, include_inactive=True, fresh=True)
    assert staff_view.gpu("g").name == "New name"


def test_the_revision_is_asked_at_most_once_per_interval(
    session: Session, make_gpu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    cache = CatalogCache(clock=lambda: now[0])
    asked: list[int] = []
    real = revision.read

    def counting(s: Session) -> tuple[int, str]:
        asked.append(1)
        return real(s)

    monkeypatch.setattr(revision, "read", counting)
    make_gpu(session, slug="g")
    session.commit()
    for _ in range(5):
        catalog_service.get_catalog(session, cache)
    assert len(asked) == 1
    now[0] += catalog_service.REVISION_CHECK_INTERVAL_S
    first = catalog_service.get_catalog(session, cache)
    assert len(asked) == 2
    assert catalog_service.get_catalog(session, cache) is first  # same revision: same snapshot


def test_a_local_write_invalidates_the_cache(
    session: Session, cache: CatalogCache, make_gpu: Any
) -> None:
    make_gpu(session, slug="g")
    session.commit()
    before = catalog_service.get_catalog(session, cache)

    make_gpu(session, slug="h")
    catalog_service.record_catalog_write(session, cache)
    session.commit()

    after = catalog_service.get_catalog(session, cache)
    assert after is not before
    assert after.revision == before.revision + 1
    assert {gpu.slug for gpu in after.gpus} == {"g", "h"}


def test_the_cached_catalog_is_served_while_the_database_is_down(
    session: Session, make_gpu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    later = [0.0]
    cache = CatalogCache(clock=lambda: time.monotonic() + later[0])
    make_gpu(session, slug="g")
    session.commit()
    cached = catalog_service.get_catalog(session, cache)

    def database_down(_session: Session) -> tuple[int, str]:
        raise OperationalError("SELECT revision", {}, ConnectionError("server closed"))

    monkeypatch.setattr(revision, "read", database_down)
    later[0] = catalog_service.REVISION_CHECK_INTERVAL_S
    assert catalog_service.get_catalog(session, cache) is cached
    assert catalog_service.get_gpu(session, cache, slug="g").slug == "g"

    cache.forget()  # nothing cached: the error must surface
    with pytest.raises(OperationalError):
        catalog_service.get_catalog(session, cache)


def test_relationships_never_load_lazily(session: Session, make_system: Any) -> None:
    system = make_system(session)
    session.commit()
    session.expire_all()
    loaded = session.get(type(system), system.id)
    assert loaded is not None
    with pytest.raises(Exception, match="lazy='raise'"):
        _ = loaded.gpu_sku


def test_a_stale_edit_loses_instead_of_overwriting(
    session_factory: SessionFactory, session: Session, make_gpu: Any
) -> None:
    make_gpu(session, slug="g")
    session.commit()
    with session_factory() as alice, session_factory() as bob:
        alice_gpu = alice.scalars(select(GpuSku).where(GpuSku.slug == "g")).one()
        bob_gpu = bob.scalars(select(GpuSku).where(GpuSku.slug == "g")).one()
        alice_gpu.stock_status = "on_order"
        alice.commit()
        bob_gpu.stock_status = "on_request"
        with pytest.raises(StaleDataError):
            bob.commit()


def test_the_seed_catalog_without_a_database(seed_files: Any) -> None:
    catalog = load_seed_catalog(seed_files.dir)

    assert isinstance(catalog, Catalog)
    assert catalog.gpu("rtx-pro-6000").usable_bytes == 97887 * 1024**2
    assert catalog.system("srv-8x-h200-nvl").gpu_count == 8
    assert catalog.model("tiny-mixtral").params_active < catalog.model("tiny-mixtral").params_total


def test_database_and_seed_catalogs_agree(
    session_factory: SessionFactory, session: Session, cache: CatalogCache, seed_files: Any
) -> None:
    with session_factory.begin() as writer:
        seed_database(writer, seed_dir=seed_files.dir)

    from_db = catalog_service.get_catalog(session, cache)
    from_files = load_seed_catalog(seed_files.dir)

    def facts(catalog: Catalog) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        groups: tuple[tuple[GpuRecord | SystemRecord | ModelRecord, ...], ...] = (
            catalog.gpus, catalog.systems, catalog.models,
        )
        for group in groups:
            for record in sorted(group, key=lambda r: r.slug):
                values = dataclasses.asdict(record)
                values.pop("updated_at")
                values.pop("version")
                rows.append(tuple(sorted((k, repr(v)) for k, v in values.items())))
        return rows

    assert facts(from_db) == facts(from_files)
