"""Declarative base with a naming convention.

Named constraints make Alembic migrations reproducible (SQLite batch mode and
PostgreSQL both need a name to drop a constraint), and autogenerate then
compares like with like.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

NAMING_CONVENTION: dict[str, str] = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Every table of the service hangs off this metadata (the migrations' target)."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def utcnow() -> datetime:
    """Timezone-aware now; SQLite stores it naive, readers re-attach UTC."""
    return datetime.now(UTC)
