"""The one catalog read service every surface and the estimates domain use.

:func:`get_catalog` returns an immutable snapshot kept in a :class:`CatalogCache`, one per
process, held by the application (``app.state.caches.catalog``, see :mod:`app.caches`) or by a
CLI command, and passed in by the caller: nothing is cached in this module. At most once every
:data:`REVISION_CHECK_INTERVAL_S` the cache asks the database for the ``catalog_revision`` row
(:mod:`app.catalog.revision`); when another worker wrote to the catalog the revision differs and
the snapshot is reloaded, so another worker's edit shows here within that interval. Writers in
this process call :func:`record_catalog_write`, which bumps the revision in their transaction
and drops the local snapshot at once. If the revision query itself fails (database down), the
last snapshot keeps being served, so the calculator stays up while the database blips.

Services never commit (docs/architecture.md rule 5); the caller's session does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from app.catalog import repository, revision
from app.catalog.schemas import Catalog, GpuRecord, ModelRecord, SystemRecord

logger = logging.getLogger(__name__)

REVISION_CHECK_INTERVAL_S = 1.0
"""How long a worker trusts its snapshot without asking for the revision. Checking on every
call was one database round trip per estimate, a third of an API estimate's server time under
load (``make load``); a price edit reaching the other workers a second later costs nothing."""


@dataclass(frozen=True, slots=True)
class _Snapshot:
    revision: tuple[int, str]
    full: Catalog
    active: Catalog
    checked_at: float


def database_key(engine: Engine) -> str:
    """One snapshot per database, so tests (and tools) with several databases stay apart."""
    return engine.url.render_as_string(hide_password=False)


def _database(session: Session) -> str:
    return database_key(session.get_bind().engine)


class CatalogCache:
    """This process's catalog snapshots, one per database URL, each with the revision it was
    loaded at and when that revision was last confirmed. Thread-safe (the sync routes run in
    a thread pool). ``clock`` is injectable so tests step time instead of sleeping."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._snapshots: dict[str, _Snapshot] = {}

    def get(self, session: Session, *, include_inactive: bool = False,
            fresh: bool = False) -> Catalog:
        """See :func:`get_catalog`."""
        key = _database(session)
        cached = self._snapshots.get(key)
        if (not fresh and cached is not None
                and self._clock() - cached.checked_at < REVISION_CHECK_INTERVAL_S):
            return cached.full if include_inactive else cached.active
        try:
            current = revision.read(session)
        except SQLAlchemyError:
            if cached is None:
                raise
            logger.warning("catalog revision unreadable; serving cached catalog", exc_info=True)
            session.rollback()
            return cached.full if include_inactive else cached.active
        if cached is None or cached.revision != current:
            cached = self._load(session, current)
        else:
            cached = replace(cached, checked_at=self._clock())
        with self._lock:
            self._snapshots[key] = cached
        return cached.full if include_inactive else cached.active

    def peek(self, database: str, *, include_inactive: bool = False) -> Catalog | None:
        """The snapshot of ``database`` (a URL as :func:`database_key` renders it) if its
        revision was confirmed less than :data:`REVISION_CHECK_INTERVAL_S` ago, else None:
        what an async route serves without a session, a thread or a query (it calls
        :meth:`get` in a thread on None)."""
        cached = self._snapshots.get(database)
        if cached is None or self._clock() - cached.checked_at >= REVISION_CHECK_INTERVAL_S:
            return None
        return cached.full if include_inactive else cached.active

    def _load(self, session: Session, current: tuple[int, str]) -> _Snapshot:
        full = Catalog(
            revision=current[0],
            gpus=tuple(repository.list_gpus(session)),
            systems=tuple(repository.list_systems(session)),
            models=tuple(repository.list_models(session)),
        )
        return _Snapshot(revision=current, full=full, active=full.active_only(),
                         checked_at=self._clock())

    def forget(self) -> None:
        """Drop every snapshot: the next read loads from the database."""
        with self._lock:
            self._snapshots.clear()


def get_catalog(session: Session, cache: CatalogCache, *, include_inactive: bool = False,
                fresh: bool = False) -> Catalog:
    """The current catalog; active rows only unless ``include_inactive`` (staff views).

    ``fresh`` asks for the revision whatever the interval: the staff desk edits what it shows,
    and a form rendered from a second-old snapshot another worker has since changed would
    only earn its user a conflict."""
    return cache.get(session, include_inactive=include_inactive, fresh=fresh)


def get_gpu(session: Session, cache: CatalogCache, *, slug: str,
            include_inactive: bool = False) -> GpuRecord:
    """One GPU by slug; raises app.errors.NotFound."""
    return get_catalog(session, cache, include_inactive=include_inactive).gpu(slug)


def get_system(session: Session, cache: CatalogCache, *, slug: str,
               include_inactive: bool = False) -> SystemRecord:
    """One system by slug; raises app.errors.NotFound."""
    return get_catalog(session, cache, include_inactive=include_inactive).system(slug)


def get_model(session: Session, cache: CatalogCache, *, slug: str,
              include_inactive: bool = False) -> ModelRecord:
    """One model card by slug; raises app.errors.NotFound."""
    return get_catalog(session, cache, include_inactive=include_inactive).model(slug)


def record_catalog_write(session: Session, cache: CatalogCache) -> None:
    """Call after any catalog write: bumps the revision (other workers) and drops ours."""
    revision.bump(session)
    cache.forget()
