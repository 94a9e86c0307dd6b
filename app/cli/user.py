"""`sizer user create [--admin] EMAIL`: make a staff user (the first admin, say).

The password comes from a prompt (asked twice) or, for scripts, from standard input with
``--password-stdin`` (first line). It never appears on the command line or in the shell's
history.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from app.accounts import staff as staff_accounts
from app.config import exit_on_configuration_error, load_settings_or_exit
from app.db import migrate
from app.db.session import check_database, make_engine, make_session_factory
from app.errors import DomainError


def _password(args: argparse.Namespace) -> str | None:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("Password: ")
    if first != getpass.getpass("Repeat the password: "):
        print("error: the passwords differ", file=sys.stderr)
        return None
    return first


def _create(args: argparse.Namespace) -> int:
    settings = load_settings_or_exit()
    with exit_on_configuration_error():
        check_database(settings.database_url)
    password = _password(args)
    if password is None:
        return 2
    engine = make_engine(settings.database_url)
    try:
        if not migrate.migration_state(engine).at_head:
            print("error: the database is not migrated; run `sizer db upgrade` first",
                  file=sys.stderr)
            return 1
        with make_session_factory(engine).begin() as session:
            user = staff_accounts.create_user(
                session, email=args.email, display_name=args.name or "",
                password=password, role="admin" if args.admin else args.role,
            )
    except DomainError as exc:
        print(f"error: {exc.detail}", file=sys.stderr)
        return 2
    finally:
        engine.dispose()
    print(f"created {user.role} {user.email}")
    return 0


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add the `user` command group to the `sizer` parser."""
    user = subparsers.add_parser("user", help="staff users of the /staff desk")
    commands = user.add_subparsers(dest="user_command", required=True, metavar="COMMAND")
    create = commands.add_parser("create", help="create a staff user")
    create.add_argument("email")
    create.add_argument("--admin", action="store_true", help="role admin (default: sales)")
    create.add_argument("--role", choices=("sales", "admin"), default="sales")
    create.add_argument("--name", default="", help="display name (default: the e-mail)")
    create.add_argument("--password-stdin", action="store_true",
                        help="read the password from the first line of standard input")
    create.set_defaults(func=_create)
