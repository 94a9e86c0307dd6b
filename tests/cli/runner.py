"""``sizer`` as a user runs it, without a process: the tests call :func:`app.cli.main` and get
what it printed and its exit status, which costs milliseconds where starting an interpreter
cost about two seconds a call. tests/cli/test_end_to_end.py keeps the few checks that need a
real process (the console script, a closed pipe, the working directory)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass

import pytest

from app.cli import main


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str


def sizer(*argv: str) -> Run:
    """Run ``sizer ARGV`` in this process. Settings are read afresh (nothing keeps them), as a
    new process would.
    An exception escaping ``main`` is what a user would see as a traceback: the test fails."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit_:
            code = 0 if exit_.code is None else exit_.code if isinstance(exit_.code, int) else 1
        except Exception as error:  # the tests' whole point: nothing may escape main
            pytest.fail(f"sizer {' '.join(argv)[:200]} raised {error!r} (a traceback)")
    return Run(code, out.getvalue(), err.getvalue())
