"""`sizer apikey create|list|revoke|partners`: partner API keys from the command line.

The same service functions as the staff desk (:mod:`app.accounts.api_keys`); the plaintext of
a new key is printed once and never stored. ``create`` names its partner explicitly: an
existing one (``--partner SLUG`` or ``--partner-id ID``) or a new one (``--new-partner NAME``,
refused with the reason when the name reads like an existing partner's); a name never joins a
partner by resemblance (issue 13, point 6).
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
    create = actions.add_parser("create", help="issue a key for an existing or a new partner")
    which = create.add_mutually_exclusive_group(required=True)
    which.add_argument("--partner", metavar="SLUG", help="an existing partner, by its slug")
    which.add_argument("--partner-id", type=int, metavar="ID", help="an existing partner, by id")
    which.add_argument("--new-partner", metavar="NAME", help="create this partner first")
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
    partners = actions.add_parser("partners", help="every partner: id, slug, status, name")
    partners.set_defaults(func=_partners)


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


def _issue(session: Session, args: argparse.Namespace) -> tuple[ApiKeyRecord, str]:
    """Create the partner if asked, then the key: one transaction, so a refused key leaves no
    new partner behind."""
    if args.new_partner is not None:
        partner_id = api_keys.create_partner(session, name=args.new_partner).id
    elif args.partner_id is not None:
        partner_id = args.partner_id
    else:
        partner_id = api_keys.get_partner(session, slug=args.partner).id
    return api_keys.issue_key(session, partner_id=partner_id, label=args.label,
                              rate_limit_per_minute=args.rate_limit)


def _create(args: argparse.Namespace) -> int:
    try:
        record, plaintext = _in_transaction(lambda session: _issue(session, args))
    except DomainError as error:
        print(f"sizer apikey: error: {error.detail}", file=sys.stderr)
        if isinstance(error, api_keys.PartnerNameTaken) and error.existing_slug is not None:
            print(f"sizer apikey: to issue a key for that partner: --partner "
                  f"{error.existing_slug}", file=sys.stderr)
        return 2
    print(f"partner: {record.partner_slug} ({record.partner_name}, id {record.partner_id})")
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


def _partners(args: argparse.Namespace) -> int:
    records = _in_transaction(api_keys.list_partners)
    print(f"{'id':>6}  {'slug':<24}{'status':<11}{'keys':>5}  name")
    for p in records:
        status = "active" if p.active else "suspended"
        print(f"{p.id:>6}  {p.slug[:23]:<24}{status:<11}{p.active_keys:>5}  {p.name}")
    return 0
