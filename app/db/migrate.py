"""Alembic driven from code, so no command depends on the working directory.

The CLI, /readyz and the tests all build the Alembic ``Config`` here from
``MIGRATIONS_DIR`` (``app/migrations``, package data); alembic.ini at the root only serves
people who run the ``alembic`` tool by hand from a checkout.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from app.config import MIGRATIONS_DIR


def alembic_config(database_url: str | None = None, connection: Connection | None = None) -> Config:
    """An Alembic Config pointing at our migrations.

    ``database_url`` wins over the settings; ``connection`` (tests) wins over both
    and lets a caller run migrations inside its own connection.
    """
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # Dated file names, as in alembic.ini, for `alembic revision` run through code.
    config.set_main_option("file_template", "%%(year)d_%%(month).2d_%%(day).2d_%%(rev)s_%%(slug)s")
    if database_url is not None:
        # ConfigParser interpolation: a literal % in a password must be doubled.
        config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@lru_cache(maxsize=1)
def head_revision() -> str:
    """The single head of the migration history (read once per process)."""
    script = ScriptDirectory.from_config(alembic_config())
    heads = script.get_heads()
    if len(heads) != 1:
        raise RuntimeError(f"expected one migration head, found {heads}")
    return str(heads[0])


def current_revision(connection: Connection) -> str | None:
    """The revision the database is at, None when it was never migrated."""
    heads = MigrationContext.configure(connection).get_current_heads()
    return str(heads[0]) if heads else None


@dataclass(frozen=True, slots=True)
class MigrationState:
    """Where the database stands relative to the code's head."""

    current: str | None
    head: str

    @property
    def at_head(self) -> bool:
        return self.current == self.head


def migration_state(engine: Engine) -> MigrationState:
    """Connects (may raise SQLAlchemyError) and compares the database with head."""
    with engine.connect() as connection:
        return MigrationState(current=current_revision(connection), head=head_revision())


def upgrade(database_url: str, revision: str = "head") -> None:
    """Run migrations up to ``revision``."""
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str = "-1") -> None:
    """Undo migrations down to ``revision`` ("base" removes every table)."""
    command.downgrade(alembic_config(database_url), revision)
