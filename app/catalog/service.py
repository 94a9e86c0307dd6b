"""The one catalog read service every surface and the estimates domain use.

``get_catalog`` returns an immutable snapshot cached in this process. At most once every
:data:`REVISION_CHECK_INTERVAL_S` it asks the database for the ``catalog_revision`` row; when
another worker wrote to the catalog the revision differs and the snapshot is reloaded, so
another worker's edit shows here within that interval. Writers in this process call
:func:`record_catalog_write`, which bumps the revision in their transaction and drops the local
cache at once. If the revision query itself fails (database down), the last snapshot keeps
being served, so the calculator stays up while the database blips.

Services never commit (docs/architecture.md rule 5); the caller's session does.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from app.catalog import repository
from app.catalog import seed as catalog_seed
from app.catalog.schemas import Catalog, GpuRecord, ModelRecord, SystemRecord
from app.config import SEED_DIR

logger = logging.getLogger(__name__)

REVISION_CHECK_INTERVAL_S = 1.0
"""How long a worker trusts its snapshot without asking for the revision. Checking on every
call was one database round trip per estimate, a third of an API estimate's server time under
load (``make load``); a price edit reaching the other workers a second later costs nothing."""

_clock = time.monotonic


@dataclass(frozen=True, slots=True)
class _Snapshot:
    revision: tuple[int, str]
    full: Catalog
    active: Catalog
    checked_at: float


_lock = threading.Lock()
_cache: dict[str, _Snapshot] = {}


def _cache_key(session: Session) -> str:
    """One cache per database, so tests (and tools) with several databases stay apart."""
    return session.get_bind().engine.url.render_as_string(hide_password=False)


def _load(session: Session, revision: tuple[int, str]) -> _Snapshot:
    full = Catalog(
        revision=revision[0],
        gpus=tuple(repository.list_gpus(session)),
        systems=tuple(repository.list_systems(session)),
        models=tuple(repository.list_models(session)),
    )
    return _Snapshot(revision=revision, full=full, active=full.active_only(),
                     checked_at=_clock())


def get_catalog(session: Session, *, include_inactive: bool = False,
                fresh: bool = False) -> Catalog:
    """The current catalog; active rows only unless ``include_inactive`` (staff views).

    ``fresh`` asks for the revision whatever the interval: the staff desk edits what it shows,
    and a form rendered from a second-old snapshot another worker has since changed would
    only earn its user a conflict."""
    key = _cache_key(session)
    cached = _cache.get(key)
    if (not fresh and cached is not None
            and _clock() - cached.checked_at < REVISION_CHECK_INTERVAL_S):
        return cached.full if include_inactive else cached.active
    try:
        revision = repository.get_revision(session)
    except SQLAlchemyError:
        if cached is None:
            raise
        logger.warning("catalog revision unreadable; serving cached catalog", exc_info=True)
        session.rollback()
        return cached.full if include_inactive else cached.active
    if cached is None or cached.revision != revision:
        cached = _load(session, revision)
    else:
        cached = replace(cached, checked_at=_clock())
    with _lock:
        _cache[key] = cached
    return cached.full if include_inactive else cached.active


def get_gpu(session: Session, *, slug: str, include_inactive: bool = False) -> GpuRecord:
    """One GPU by slug; raises app.errors.NotFound."""
    return get_catalog(session, include_inactive=include_inactive).gpu(slug)


def get_system(session: Session, *, slug: str, include_inactive: bool = False) -> SystemRecord:
    """One system by slug; raises app.errors.NotFound."""
    return get_catalog(session, include_inactive=include_inactive).system(slug)


def get_model(session: Session, *, slug: str, include_inactive: bool = False) -> ModelRecord:
    """One model card by slug; raises app.errors.NotFound."""
    return get_catalog(session, include_inactive=include_inactive).model(slug)


def record_catalog_write(session: Session) -> None:
    """Call after any catalog write: bumps the revision (other workers) and drops ours."""
    repository.bump_revision(session)
    invalidate_cache()


def invalidate_cache() -> None:
    """Forget every cached snapshot in this process."""
    with _lock:
        _cache.clear()


def load_seed_catalog(seed_dir: Path = SEED_DIR) -> Catalog:
    """The catalog built from the seed files with no database (active rows only)."""
    return catalog_seed.load_seed_catalog(seed_dir).active_only()
