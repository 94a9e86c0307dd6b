"""`sizer apikey create|list|revoke`: partner API keys from the command line.

The same service functions as the staff desk (:mod:`app.accounts.api_keys`); the plaintext of
a new key is printed once and never stored.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from app.accounts import api_keys
from app.accounts.api_keys import ApiKeyRecord
from app.config import exit_on_configuration_error, load_settings_or_exit
from app.db import migrate
from app.db.session import check_database, make_engine, make_session_factory
from app.errors import DomainError

T = TypeVar("T")


def register(commands: Any) -> None:
    parser = commands.add_parser("apikey", help="partner API keys: create, list, revoke")
    actions = parser.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="issue a key (creates the partner if missing)")
    create.add_argument("--partner", required=True, metavar="NAME")
    create.add_argument("--label", default="", help="what the key is for")
    create.add_argument("--rate-limit", type=int, default=None, metavar="PER_MINUTE",
                        help="requests per minute (default: SIZER_API_RATE_LIMIT_PER_MINUTE)")
    create.set_defaults(func=_create)
    listing = actions.add_parser("list", help="every key, revoked ones included")
    listing.add_argument("--partner", default=None, metavar="SLUG")
    listing.set_defaults(func=_list)
    revoke = actions.add_parser("revoke", help="revoke a key by its prefix")
    revoke.add_argument("prefix")
    revoke.set_defaults(func=_revoke)


def _in_transaction(work: Callable[[Session], T]) -> T:
    """Run ``work`` in one committed transaction on the migrated database (exit 2 if not)."""
    settings = load_settings_or_exit()
    with exit_on_configuration_error():
        check_database(settings.database_url)
    engine = make_engine(settings.database_url)
    try:
        state = migrate.migration_state(engine)
        if not state.at_head:
            print(f"sizer apikey: error: database is at migration {state.current or 'none'}, "
                  f"not {state.head}; run `sizer db upgrade`", file=sys.stderr)
            raise SystemExit(2)
        with make_session_factory(engine).begin() as session:
            return work(session)
    finally:
        engine.dispose()


def _when(record: ApiKeyRecord) -> str:
    used = record.last_used_at.strftime("%Y-%m-%d %H:%M") if record.last_used_at else "never"
    return used


def _create(args: argparse.Namespace) -> int:
    try:
        record, plaintext = _in_transaction(lambda session: api_keys.issue_key(
            session, partner_name=args.partner, label=args.label,
            rate_limit_per_minute=args.rate_limit,
        ))
    except DomainError as error:
        print(f"sizer apikey: error: {error.detail}", file=sys.stderr)
        return 2
    print(f"partner: {record.partner_slug} ({record.partner_name})")
    print(f"prefix:  {record.prefix}")
    print(f"key:     {plaintext}")
    print("Store the key now: it is shown only once.", file=sys.stderr)
    return 0


def _list(args: argparse.Namespace) -> int:
    records = _in_transaction(
        lambda session: api_keys.list_keys(session, partner_slug=args.partner)
    )
    print(f"{'prefix':<14}{'partner':<24}{'status':<9}{'limit/min':>10}  {'last used':<17}label")
    for r in records:
        status = "active" if r.active else "revoked"
        limit = str(r.rate_limit_per_minute) if r.rate_limit_per_minute else "default"
        print(f"{r.prefix:<14}{r.partner_slug[:23]:<24}{status:<9}{limit:>10}  "
              f"{_when(r):<17}{r.label}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    try:
        record = _in_transaction(
            lambda session: api_keys.revoke_key(session, prefix=args.prefix)
        )
    except DomainError as error:
        print(f"sizer apikey: error: {error.detail}", file=sys.stderr)
        return 2
    print(f"revoked {record.prefix} ({record.partner_slug})")
    return 0
