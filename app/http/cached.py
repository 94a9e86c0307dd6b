"""The cached read path of async routes: the catalog from this process's cache without a
session, a thread or a query in the steady state.

A sync route costs a thread-pool hop for itself and one for each sync dependency (its
``DbSession``, the partner key check): most of what an answer from the caches took. The partner
API's estimates and the calculator's result fragment are async instead;
they read the catalog here. Once every ``REVISION_CHECK_INTERVAL_S``
(:mod:`app.catalog.service`) the snapshot is due for its revision check, and only that check
(a session, one query) runs in a thread, exactly as a sync route runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Engine
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection

from app import caches
from app.catalog import service as catalog_service
from app.catalog.schemas import Catalog
from app.db.session import SessionFactory

T = TypeVar("T")


def engine_of(connection: HTTPConnection) -> Engine:
    """The database engine of the application serving this request (the partner
    sub-application holds only the session factory, bound to the same engine)."""
    factory: SessionFactory = connection.app.state.session_factory
    bind = factory.kw["bind"]
    assert isinstance(bind, Engine)
    return bind


def _checked_catalog(connection: HTTPConnection) -> Catalog:
    factory: SessionFactory = connection.app.state.session_factory
    with factory() as session:  # reads only: nothing to commit
        return catalog_service.get_catalog(session, caches.of(connection).catalog)


def in_session(connection: HTTPConnection, work: Callable[[Session], T]) -> T:
    """``work(session)`` in a session of its own, committed (rule 5: the caller commits): what
    an async route sends to a thread when it needs the database after all."""
    factory: SessionFactory = connection.app.state.session_factory
    with factory() as session:
        result = work(session)
        session.commit()
    return result


async def catalog(connection: HTTPConnection) -> Catalog:
    """The active catalog: the cached snapshot while it is fresh, else checked in a thread."""
    key = catalog_service.database_key(engine_of(connection))
    snapshot = caches.of(connection).catalog.peek(key)
    if snapshot is not None:
        return snapshot
    return await run_in_threadpool(_checked_catalog, connection)
