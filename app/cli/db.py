"""`sizer db upgrade|downgrade|current|seed`.

Every command validates the settings and connects once before doing anything,
so a bad SIZER_* value or an unreachable database ends in one clear line and
exit code 2 instead of a traceback from deep inside Alembic.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from app.catalog.seed import SeedError, seed_database
from app.config import SEED_DIR, Settings, exit_on_configuration_error, load_settings_or_exit
from app.db import backup, migrate
from app.db.session import check_database, make_engine, make_session_factory


def _ready_settings() -> Settings:
    settings = load_settings_or_exit()
    with exit_on_configuration_error():
        check_database(settings.database_url)
    return settings


def _upgrade(args: argparse.Namespace) -> int:
    settings = _ready_settings()
    migrate.upgrade(settings.database_url, args.revision)
    print(f"database upgraded to {args.revision}")
    return 0


def _downgrade(args: argparse.Namespace) -> int:
    settings = _ready_settings()
    migrate.downgrade(settings.database_url, args.revision)
    print(f"database downgraded to {args.revision}")
    return 0


def _current(_args: argparse.Namespace) -> int:
    settings = _ready_settings()
    engine = make_engine(settings.database_url)
    try:
        state = migrate.migration_state(engine)
    finally:
        engine.dispose()
    marker = "(head)" if state.at_head else f"(head is {state.head})"
    print(f"{state.current or 'none'} {marker}")
    return 0


def _seed(args: argparse.Namespace) -> int:
    settings = _ready_settings()
    engine = make_engine(settings.database_url)
    try:
        state = migrate.migration_state(engine)
        if not state.at_head:
            print(
                f"error: database is at migration {state.current or 'none'}, not {state.head}; "
                "run `sizer db upgrade` first"
            )
            return 1
        try:
            with make_session_factory(engine).begin() as session:  # one transaction
                report = seed_database(session, seed_dir=args.seed_dir)
        except SeedError as exc:
            print(f"error: {exc}")
            return 1
    finally:
        engine.dispose()
    print(report.summary() if report.changed else "catalog already up to date")
    return 0


def _export(args: argparse.Namespace) -> int:
    settings = _ready_settings()
    engine = make_engine(settings.database_url)
    try:
        with engine.connect() as connection:
            document = backup.export_database(connection)
    except backup.BackupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        engine.dispose()
    text = backup.dumps(document)
    if args.out is None or str(args.out) == "-":
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8")
        rows = sum(len(rows) for rows in document["tables"].values())
        print(f"exported {rows} rows at migration {document['migration']} to {args.out}")
    return 0


def _import(args: argparse.Namespace) -> int:
    settings = _ready_settings()
    try:
        raw = sys.stdin.read() if str(args.file) == "-" else args.file.read_text(encoding="utf-8")
        document = json.loads(raw)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(f"error: {args.file}: not a readable JSON backup: {exc}", file=sys.stderr)
        return 1
    if not isinstance(document, dict):
        print(f"error: {args.file}: not a backup document", file=sys.stderr)
        return 1
    engine = make_engine(settings.database_url)
    try:
        with engine.begin() as connection:  # one transaction: all rows or none
            counts = backup.import_database(connection, document, replace=args.replace)
    except backup.BackupError as exc:
        print(f"error: {exc}; nothing was written", file=sys.stderr)
        return 1
    except SQLAlchemyError as exc:
        first = str(exc).strip().splitlines()[0]
        print(f"error: the database refused the backup ({first}); nothing was written",
              file=sys.stderr)
        return 1
    finally:
        engine.dispose()
    print(f"imported {sum(counts.values())} rows into {len(counts)} tables")
    return 0


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add the `db` command group to the `sizer` parser."""
    db = subparsers.add_parser("db", help="migrate and seed the catalog database")
    commands = db.add_subparsers(dest="db_command", required=True, metavar="COMMAND")

    upgrade = commands.add_parser("upgrade", help="apply migrations (default: to head)")
    upgrade.add_argument("revision", nargs="?", default="head")
    upgrade.set_defaults(func=_upgrade)

    downgrade = commands.add_parser("downgrade", help="undo migrations (default: one step)")
    downgrade.add_argument("revision", nargs="?", default="-1", help='e.g. -1 or "base"')
    downgrade.set_defaults(func=_downgrade)

    current = commands.add_parser("current", help="show the migration the database is at")
    current.set_defaults(func=_current)

    seed = commands.add_parser("seed", help="load the catalog seed files (idempotent)")
    seed.add_argument("--seed-dir", type=Path, default=SEED_DIR, help=argparse.SUPPRESS)
    seed.set_defaults(func=_seed)

    export = commands.add_parser("export", help="write every row as one JSON backup document")
    export.add_argument("--out", type=Path, default=None, help="file (default: standard output)")
    export.set_defaults(func=_export)

    restore = commands.add_parser(
        "import", help="load a JSON backup into a database at the same migration"
    )
    restore.add_argument("file", type=Path, help="the backup file, or - for standard input")
    restore.add_argument(
        "--replace", action="store_true", help="delete every existing row first (same transaction)"
    )
    restore.set_defaults(func=_import)
