"""`sizer db upgrade|downgrade|current|seed`.

Every command validates the settings and connects once before doing anything,
so a bad SIZER_* value or an unreachable database ends in one clear line and
exit code 2 instead of a traceback from deep inside Alembic.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from app.catalog.seed import SeedError, seed_database
from app.config import SEED_DIR, Settings, exit_on_configuration_error, load_settings_or_exit
from app.db import migrate
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
