"""Opening the database for a command: one helper, one exit-code rule.

Every command that touches the database validates the settings and connects once before doing
anything, so a bad ``SIZER_*`` value or an unreachable database ends in one
``configuration error:`` line and exit 2 instead of a traceback from deep inside SQLAlchemy or
Alembic; commands that read or write rows also need the database at the code's migration, and
say which command gets it there (exit 2) when it is not.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.cli.errors import CliError
from app.config import Settings, exit_on_configuration_error, load_settings_or_exit
from app.db import migrate
from app.db.session import check_database, make_engine, make_session_factory

UPGRADE_HINT = "run `sizer db upgrade` first"


class NotMigrated(CliError):
    """The database is reachable but not at the code's head migration."""

    def __init__(self, state: migrate.MigrationState) -> None:
        super().__init__(
            f"at migration {state.current or 'none'}, not {state.head}; {UPGRADE_HINT}",
            subject="database",
        )
        self.state = state


def ready_settings() -> Settings:
    """Validated settings with a reachable database, or one line and exit 2."""
    settings = load_settings_or_exit()
    with exit_on_configuration_error():
        check_database(settings.database_url)
    return settings


@contextmanager
def open_database(*, migrated: bool = True) -> Iterator[Engine]:
    """An engine on the configured database, disposed afterwards. With ``migrated`` (the
    default) the database must be at head, else :class:`NotMigrated` (exit 2)."""
    settings = ready_settings()
    engine = make_engine(settings.database_url)
    try:
        if migrated:
            state = migrate.migration_state(engine)
            if not state.at_head:
                raise NotMigrated(state)
        yield engine
    finally:
        engine.dispose()


@contextmanager
def transaction() -> Iterator[Session]:
    """One session on the migrated database, committed when the block ends without an error
    and rolled back otherwise: a refused command leaves no half-written rows."""
    with open_database() as engine, make_session_factory(engine).begin() as session:
        yield session
