"""Alembic environment: URL from the -x/config override or from Settings.

Order of precedence: a connection handed in by code (tests), then
``sqlalchemy.url`` set on the Config (``app.db.migrate``, ``alembic -x url=...``),
then ``SIZER_DATABASE_URL`` via Settings. SQLite gets batch mode because it
cannot ALTER most things in place.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from app.config import load_settings
from app.db import tables  # noqa: F401  (registers every table on the metadata)
from app.db.base import Base
from app.db.session import make_engine

config = context.config
target_metadata = Base.metadata


def _database_url() -> str:
    x_args = context.get_x_argument(as_dictionary=True)
    if "url" in x_args:
        return str(x_args["url"])
    configured = config.get_main_option("sqlalchemy.url")
    if configured:
        return configured
    return load_settings().database_url


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_migrations_offline() -> None:
    """Emit SQL to stdout (``alembic upgrade --sql``) for DBAs who review DDL."""
    context.configure(
        url=_database_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=_database_url().startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run against a live database, reusing a caller's connection when given one."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(_database_url())
    try:
        with engine.connect() as new_connection:
            _configure(new_connection)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
