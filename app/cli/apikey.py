"""`sizer apikey create|list|revoke|partners`: partner API keys from the command line.

The same service functions as the staff desk (:mod:`app.accounts.api_keys`); the plaintext of
a new key is printed once and never stored. ``create`` names its partner explicitly: an
existing one (``--partner SLUG`` or ``--partner-id ID``) or a new one (``--new-partner NAME``,
refused with the reason when the name reads like an existing partner's); a name never joins a
partner by resemblance.
"""

from __future__ import annotations

import argparse
import sys

from sqlalchemy.orm import Session

from app.accounts import api_keys
from app.accounts.api_keys import ApiKeyRecord
from app.cli.database import transaction
from app.cli.errors import CliError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `apikey` command group's subcommands."""
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
        with transaction() as session:
            record, plaintext = _issue(session, args)
    except api_keys.PartnerNameTaken as error:
        if error.existing_slug is None:
            raise
        raise CliError(f"{error.detail}; to issue a key for that partner: --partner "
                       f"{error.existing_slug}") from error
    print(f"partner: {record.partner_slug} ({record.partner_name}, id {record.partner_id})")
    print(f"prefix:  {record.prefix}")
    print(f"key:     {plaintext}")
    print("Store the key now: it is shown only once.", file=sys.stderr)
    return 0


def _list(args: argparse.Namespace) -> int:
    with transaction() as session:
        records = api_keys.list_keys(session, partner_slug=args.partner)
    print(f"{'prefix':<14}{'partner':<24}{'status':<9}{'limit/min':>10}  {'last used':<17}label")
    for r in records:
        status = "active" if r.active else "revoked"
        limit = str(r.rate_limit_per_minute) if r.rate_limit_per_minute else "default"
        print(f"{r.prefix:<14}{r.partner_slug[:23]:<24}{status:<9}{limit:>10}  "
              f"{_when(r):<17}{r.label}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    with transaction() as session:
        # This process checked no keys: its cache is empty, and the serving workers' caches
        # let the key go within PRINCIPAL_CACHE_S (app.accounts.api_keys).
        record = api_keys.revoke_key(session, prefix=args.prefix,
                                     checked=api_keys.KeyCheckCache())
    print(f"revoked {record.prefix} ({record.partner_slug})")
    return 0


def _partners(args: argparse.Namespace) -> int:
    with transaction() as session:
        records = api_keys.list_partners(session)
    print(f"{'id':>6}  {'slug':<24}{'status':<11}{'keys':>5}  name")
    for p in records:
        status = "active" if p.active else "suspended"
        print(f"{p.id:>6}  {p.slug[:23]:<24}{status:<11}{p.active_keys:>5}  {p.name}")
    return 0
