"""The ``catalog_revision`` row: how one worker tells the others that the catalog changed.

Every catalog writer (the seed, staff edits) calls :func:`bump` in its own transaction; every
worker's :class:`app.catalog.service.CatalogCache` calls :func:`read` at most once per
``REVISION_CHECK_INTERVAL_S`` and reloads its snapshot when the revision differs. A module of
its own, below both the writers and the read service, so that neither imports the other.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.db.tables import CatalogRevision


def read(session: Session) -> tuple[int, str]:
    """The catalog's (revision, token): the one cheap query per catalog read."""
    row = session.execute(
        select(CatalogRevision.revision, CatalogRevision.token).where(CatalogRevision.id == 1)
    ).one_or_none()
    if row is None:  # the migration inserts it; only a hand-edited database lacks it
        return (0, "")
    return (int(row.revision), str(row.token))


def bump(session: Session) -> None:
    """Advance the revision in the caller's transaction (atomic in SQL, no read first)."""
    session.execute(
        update(CatalogRevision)
        .where(CatalogRevision.id == 1)
        .values(revision=CatalogRevision.revision + 1, token=uuid.uuid4().hex)
    )
