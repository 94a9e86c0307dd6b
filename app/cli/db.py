"""`sizer db upgrade|downgrade|current|seed|export|import`.

Every command opens the database through :mod:`app.cli.database`, so a bad SIZER_* value, an
unreachable database, an unmigrated one (for seed), a revision Alembic does not know or a refused
backup ends in one clear line and exit code 2 instead of a traceback from deep inside Alembic.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from alembic.util import CommandError
from sqlalchemy.exc import SQLAlchemyError

from app.catalog.seed import SeedError, seed_database
from app.cli.database import open_database, ready_settings
from app.cli.errors import CliError
from app.config import SEED_DIR
from app.db import backup, migrate
from app.db.session import make_session_factory


def _upgrade(args: argparse.Namespace) -> int:
    settings = ready_settings()
    try:
        migrate.upgrade(settings.database_url, args.revision)
    except CommandError as error:  # a revision Alembic does not know, say
        raise CliError(str(error), subject="revision") from error
    print(f"database upgraded to {args.revision}")
    return 0


def _downgrade(args: argparse.Namespace) -> int:
    settings = ready_settings()
    try:
        migrate.downgrade(settings.database_url, args.revision)
    except CommandError as error:
        raise CliError(str(error), subject="revision") from error
    print(f"database downgraded to {args.revision}")
    return 0


def _current(_args: argparse.Namespace) -> int:
    with open_database(migrated=False) as engine:
        state = migrate.migration_state(engine)
    marker = "(head)" if state.at_head else f"(head is {state.head})"
    print(f"{state.current or 'none'} {marker}")
    return 0


def _seed(args: argparse.Namespace) -> int:
    with open_database() as engine:
        try:
            with make_session_factory(engine).begin() as session:  # one transaction
                report = seed_database(session, seed_dir=args.seed_dir)
        except SeedError as error:
            raise CliError(str(error), subject="seed") from error
    print(report.summary() if report.changed else "catalog already up to date")
    return 0


def _export(args: argparse.Namespace) -> int:
    with open_database(migrated=False) as engine:
        try:
            with engine.connect() as connection:
                document = backup.export_database(connection)
        except backup.BackupError as error:
            raise CliError(str(error), subject="export") from error
    text = backup.dumps(document)
    if args.out is None or str(args.out) == "-":
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8")
        rows = sum(len(rows) for rows in document["tables"].values())
        print(f"exported {rows} rows at migration {document['migration']} to {args.out}")
    return 0


def _read_backup(file: Path) -> dict[str, object]:
    """The JSON document in ``file`` (``-``: standard input), or a CliError naming it."""
    try:
        raw = sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
        document = json.loads(raw)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CliError(f"not a readable JSON backup: {error}", subject=str(file)) from error
    if not isinstance(document, dict):
        raise CliError("not a backup document", subject=str(file))
    return document


def _import(args: argparse.Namespace) -> int:
    # The database first (a bad setting, an unreachable server), then the document.
    with open_database(migrated=False) as engine:
        document = _read_backup(args.file)
        try:
            with engine.begin() as connection:  # one transaction: all rows or none
                counts = backup.import_database(connection, document, replace=args.replace)
        except backup.BackupError as error:
            raise CliError(f"{error}; nothing was written", subject=str(args.file)) from error
        except SQLAlchemyError as error:
            first = str(error).strip().splitlines()[0]
            raise CliError(f"the database refused the backup ({first}); nothing was written",
                           subject=str(args.file)) from error
    print(f"imported {sum(counts.values())} rows into {len(counts)} tables")
    return 0


def add_arguments(db: argparse.ArgumentParser) -> None:
    """The `db` command group's subcommands."""
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
