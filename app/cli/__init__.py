"""The ``sizer`` command: serve, db, estimate (and, in later issues, user, apikey, model).

Each subcommand lives in its own module with a ``register(subparsers)`` function and handlers
that return an exit code. Errors the user can fix print one line and exit 2; no traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn


class CliParser(argparse.ArgumentParser):
    """argparse, but a usage error is one clear line (exit 2), not a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from app.cli import apikey, db, estimate, serve, user

    parser = CliParser(prog="sizer", description="GPU Sizer: fine-tuning memory sizing.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=CliParser)
    serve.register(commands)
    db.register(commands)
    estimate.register(commands)
    apikey.register(commands)
    user.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = args.func
    code: int = handler(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
