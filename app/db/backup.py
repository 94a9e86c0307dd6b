"""`sizer db export` / `sizer db import`: the whole database as one JSON document.

Why JSON and not pg_dump: the same file moves between SQLite (the embedded default) and
PostgreSQL, can be read and diffed by a person, and needs no client tools in the image.
The document names the migration it was taken at; an import only goes into a database at
that same migration, in one transaction (a failure leaves the target as it was).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, Table, func, insert, select, text
from sqlalchemy.sql.sqltypes import Date, LargeBinary, Numeric

from app.db.base import Base
from app.db.migrate import MigrationState, current_revision, head_revision
from app.db.types import UtcDateTime

FORMAT = "gpu-sizer-backup"
FORMAT_VERSION = 1


class BackupError(ValueError):
    """A backup that can't be taken or restored, with the reason in words."""


def _state(connection: Connection) -> MigrationState:
    return MigrationState(current=current_revision(connection), head=head_revision())


def _tables() -> list[Table]:
    """Every table of the service, parents before children (foreign keys)."""
    return list(Base.metadata.sorted_tables)


def _dump_value(value: Any) -> Any:
    if isinstance(value, date):  # datetimes too: UtcDateTime reads them as aware UTC
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def _load_value(table: Table, column: str, value: Any) -> Any:
    if value is None:
        return None
    if column not in table.c:
        raise BackupError(f"{table.name}.{column}: no such column at this migration")
    kind = table.c[column].type
    try:
        if isinstance(kind, UtcDateTime):
            moment = datetime.fromisoformat(str(value))
            if moment.tzinfo is None:
                raise ValueError("a timestamp needs its time zone (exports write +00:00)")
            return moment
        if isinstance(kind, Date):
            return date.fromisoformat(str(value))
        if isinstance(kind, Numeric) and kind.asdecimal:
            return Decimal(str(value))
        if isinstance(kind, LargeBinary):
            return base64.b64decode(str(value))
    except ValueError as exc:
        raise BackupError(f"{table.name}.{column}: {value!r} is not valid: {exc}") from exc
    return value


def export_database(connection: Connection) -> dict[str, Any]:
    """Every row of every table, primary keys included, in foreign-key order."""
    state = _state(connection)
    if not state.at_head:
        raise BackupError(
            f"database is at migration {state.current or 'none'}, not {state.head}; "
            "run `sizer db upgrade` first"
        )
    tables: dict[str, list[dict[str, Any]]] = {}
    for table in _tables():
        order = list(table.primary_key.columns) or list(table.c)
        rows = connection.execute(select(table).order_by(*order)).mappings()
        tables[table.name] = [{k: _dump_value(v) for k, v in row.items()} for row in rows]
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "migration": state.current,
        "exported_at": datetime.now(UTC).isoformat(),
        "tables": tables,
    }


def _check_document(document: Mapping[str, Any], migration: str | None) -> Mapping[str, Any]:
    if document.get("format") != FORMAT or document.get("format_version") != FORMAT_VERSION:
        raise BackupError(f"not a {FORMAT} document of version {FORMAT_VERSION}")
    if document.get("migration") != migration:
        raise BackupError(
            f"the backup was taken at migration {document.get('migration')}, this database is "
            f"at {migration}; migrate one of them first"
        )
    tables = document.get("tables")
    if not isinstance(tables, Mapping):
        raise BackupError("tables: missing or not an object")
    known = {table.name for table in _tables()}
    unknown = sorted(set(tables) - known)
    if unknown:
        raise BackupError(f"tables: unknown at this migration: {', '.join(unknown)}")
    return tables


def _rows(table: Table, rows: object) -> Iterable[dict[str, Any]]:
    if not isinstance(rows, list):
        raise BackupError(f"{table.name}: expected a list of rows")
    for row in rows:
        if not isinstance(row, Mapping):
            raise BackupError(f"{table.name}: every row must be an object")
        yield {str(k): _load_value(table, str(k), v) for k, v in row.items()}


def _reset_sequences(connection: Connection) -> None:
    """PostgreSQL: rows came with their ids, so move each id sequence past the largest."""
    if connection.dialect.name != "postgresql":
        return
    for table in _tables():
        for column in table.primary_key.columns:
            sequence = connection.execute(
                text("SELECT pg_get_serial_sequence(:table, :column)"),
                {"table": table.name, "column": column.name},
            ).scalar()
            if sequence is None:
                continue
            largest = connection.execute(select(func.max(column))).scalar()
            connection.execute(
                text("SELECT setval(:sequence, :value, :called)"),
                {"sequence": sequence, "value": largest or 1, "called": largest is not None},
            )


def import_database(
    connection: Connection, document: Mapping[str, Any], *, replace: bool = False
) -> dict[str, int]:
    """Load a backup into this database; returns rows per table.

    The target must be at the backup's migration and, unless ``replace``, hold no rows
    (the catalog revision row that the migration creates aside). Runs inside the caller's
    transaction: the caller commits, or nothing is written.
    """
    state = _state(connection)
    tables = _check_document(document, state.current)
    ordered = _tables()
    if replace:
        for table in reversed(ordered):
            connection.execute(table.delete())
    else:
        for table in ordered:
            if table.name == "catalog_revision":
                continue
            if connection.execute(select(func.count()).select_from(table)).scalar():
                raise BackupError(
                    f"{table.name} already holds rows; import into an empty database, "
                    "or pass --replace to overwrite everything"
                )
        if "catalog_revision" in tables:
            connection.execute(Base.metadata.tables["catalog_revision"].delete())
    counts: dict[str, int] = {}
    for table in ordered:
        rows = list(_rows(table, tables.get(table.name, [])))
        if rows:
            connection.execute(insert(table), rows)
        counts[table.name] = len(rows)
    _reset_sequences(connection)
    return counts


def dumps(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False, sort_keys=False) + "\n"
