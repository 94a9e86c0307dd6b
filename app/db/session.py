"""Engines and sessions, for the app and the CLI alike.

The per-request session dependency (docs/architecture.md rule 5: services never commit; the
request commits once) is web plumbing and lives in :mod:`app.http.session`: this package
imports no web framework, so the CLI opens a database without loading FastAPI.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import (
    DBAPIError,
    DisconnectionError,
    InterfaceError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.orm import Session, sessionmaker

from app.config import ConfigurationError
from app.db.urls import sqlite_file

SessionFactory = sessionmaker[Session]

RETRY_AFTER_S = 5
"""What a 503 during a database outage tells the client to wait before trying again."""

CONNECT_TIMEOUT_S = 5
"""How long start-up waits for PostgreSQL before calling the URL unreachable."""


def _enable_sqlite_foreign_keys(dbapi_connection: Any, _record: Any) -> None:
    """SQLite ignores FOREIGN KEY clauses unless asked, per connection."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_engine(database_url: str, **kwargs: Any) -> Engine:
    """An engine for the URL; SQLite gets its directory created and foreign keys on.

    Creating the engine does not connect; the first query does.
    """
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        path = sqlite_file(url)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        # FastAPI runs sync endpoints in a thread pool; pooled connections hop threads.
        kwargs.setdefault("connect_args", {"check_same_thread": False})
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _enable_sqlite_foreign_keys)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def make_session_factory(engine: Engine) -> SessionFactory:
    """Sessions that keep loaded objects usable after commit (records are built from them)."""
    return sessionmaker(bind=engine, expire_on_commit=False)


def describe_url(database_url: str) -> str:
    """The URL with its password masked, safe for logs and error lines."""
    return make_url(database_url).render_as_string(hide_password=True)


def check_database(database_url: str) -> None:
    """Connect once; raise ConfigurationError naming SIZER_DATABASE_URL if we cannot."""
    url = make_url(database_url)
    connect_args: dict[str, Any] = {}
    if url.get_backend_name() == "postgresql":
        connect_args["connect_timeout"] = CONNECT_TIMEOUT_S
    try:
        engine = make_engine(
            database_url, **({"connect_args": connect_args} if connect_args else {})
        )
    except (SQLAlchemyError, OSError, ImportError) as exc:
        raise ConfigurationError(
            "SIZER_DATABASE_URL", f"cannot use {describe_url(database_url)}: {exc}"
        ) from exc
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except (SQLAlchemyError, OSError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise ConfigurationError(
            "SIZER_DATABASE_URL", f"cannot connect to {describe_url(database_url)}: {reason}"
        ) from exc
    finally:
        engine.dispose()


def is_unavailable(exc: BaseException) -> bool:
    """The database could not be reached or dropped the connection (a restart, a failover):
    worth a 503 and a retry, not a 500. Constraint and programming errors are not this."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    return isinstance(exc, OperationalError | InterfaceError | DisconnectionError)
