"""`sizer user create [--admin] EMAIL`: make a staff user (the first admin, say).

The password comes from a prompt (asked twice) or, for scripts, from standard input with
``--password-stdin`` (first line). It never appears on the command line or in the shell's
history.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from app.accounts import staff as staff_accounts
from app.cli.database import open_database
from app.cli.errors import CliError
from app.db.session import make_session_factory


def _password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("Password: ")
    if first != getpass.getpass("Repeat the password: "):
        raise CliError("the passwords differ", subject="password")
    return first


def _create(args: argparse.Namespace) -> int:
    # The database is checked (reachable, migrated) before anyone types a password for it.
    with open_database() as engine:
        password = _password(args)
        with make_session_factory(engine).begin() as session:
            user = staff_accounts.create_user(
                session, email=args.email, display_name=args.name or "",
                password=password, role="admin" if args.admin else args.role,
            )
    print(f"created {user.role} {user.email}")
    return 0


def add_arguments(user: argparse.ArgumentParser) -> None:
    """The `user` command group's subcommands."""
    commands = user.add_subparsers(dest="user_command", required=True, metavar="COMMAND")
    create = commands.add_parser("create", help="create a staff user")
    create.add_argument("email")
    create.add_argument("--admin", action="store_true", help="role admin (default: sales)")
    create.add_argument("--role", choices=("sales", "admin"), default="sales")
    create.add_argument("--name", default="", help="display name (default: the e-mail)")
    create.add_argument("--password-stdin", action="store_true",
                        help="read the password from the first line of standard input")
    create.set_defaults(func=_create)
