"""The ``sizer`` command: serve, db, estimate, serving, apikey, user.

Each subcommand lives in its own module with an ``add_arguments(parser)`` function and handlers
that return an exit code. Only the module of the command being run is imported: ``sizer
estimate`` does not pay for uvicorn or the staff accounts, and ``sizer --help`` for none of them.

Exit codes, one rule for every command:

* 0: done.
* 2 (:data:`EXIT_USER_ERROR`): anything the user can fix (a bad option or value, a bad
  ``SIZER_*`` setting, an unreachable or unmigrated database, a refused backup, a name that is
  taken): one line on standard error, no traceback.
* 141 (:data:`EXIT_BROKEN_PIPE`): the reader of standard output went away (``| head``); quiet.
* 1: a bug. Python's own status for an exception that escapes, with its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from app import text_input
from app.cli.errors import EXIT_USER_ERROR, CliError
from app.errors import DomainError

EXIT_BROKEN_PIPE = 128 + 13
"""What a shell reports for a filter killed by SIGPIPE (128 + signal 13), as ``yes | head -1``
does for ``yes``: quiet, and still visible to ``set -o pipefail``."""

COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("app.cli.serve", "run the web service (uvicorn)"),
    "db": ("app.cli.db", "migrate, seed, export and import the database"),
    "estimate": ("app.cli.estimate",
                 "memory per GPU for fine-tuning a model, and the cards it fits"),
    "serving": ("app.cli.serving",
                "serving a model: the cards, users at a context, and tokens per second"),
    "apikey": ("app.cli.apikey", "partner API keys: create, list, revoke"),
    "user": ("app.cli.user", "staff users of the /staff desk"),
}
"""Each command's module and its one-line help: the module is imported only when its command
runs, so ``--help`` lists every command from here."""


class CliParser(argparse.ArgumentParser):
    """argparse, but a usage error is one clear line (exit 2), not a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USER_ERROR, f"{self.prog}: error: {message}\n")


def _command_in(argv: Sequence[str]) -> str | None:
    """The command word: the first argument that is not an option (the top-level parser has
    only ``-h``, so nothing before the command takes a value)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The ``sizer`` parser with every command listed and the arguments of the one in
    ``argv`` (if any) filled in by its module."""
    parser = CliParser(prog="sizer", description="GPU Sizer: fine-tuning memory sizing.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=CliParser)
    wanted = _command_in(argv)
    for name, (module, help_text) in COMMANDS.items():
        command = commands.add_parser(name, help=help_text, description=help_text)
        if name == wanted:
            importlib.import_module(module).add_arguments(command)
    return parser


def _silence_stdout() -> None:
    """Point standard output at /dev/null so the interpreter's final flush of what is still
    buffered does not raise a second BrokenPipeError (the recipe in Python's ``signal`` docs)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (in-process tests)
        pass


def refuse_control_characters(arguments: Sequence[str]) -> None:
    """Exit 2 naming the option whose value (or the argument that) holds a control character
    (:mod:`app.text_input`, the check every surface uses; a command line's undecodable bytes
    arrive as lone surrogates), before any command reads it."""
    for place, argument in enumerate(arguments):
        if text_input.control_character(argument) is None:
            continue
        option, equals, _ = argument.partition("=")
        if not (equals and option.startswith("-")):
            previous = arguments[place - 1] if place else ""
            option = previous if previous.startswith("-") and "=" not in previous else "argument"
        if text_input.control_character(option) is not None:
            option = "argument"
        command = _command_in(arguments[:place])
        prog = f"sizer {command}" if command else "sizer"
        print(f"{prog}: error: {option}: {text_input.REASON}", file=sys.stderr)
        raise SystemExit(EXIT_USER_ERROR)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``sizer`` command; returns its exit code (see the module docstring)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    refuse_control_characters(arguments)
    args = build_parser(arguments).parse_args(arguments)
    try:
        code: int = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except CliError as error:
        print(f"sizer {args.command}: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except DomainError as error:
        print(f"sizer {args.command}: error: {error.detail}", file=sys.stderr)
        return EXIT_USER_ERROR
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
