"""The few ``sizer`` checks that need a real process: the console script, the directory it is
run from, a reader that closes the pipe, and what importing the command costs. Everything else
runs through ``main`` in-process (tests/cli/runner.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from app.cli import EXIT_BROKEN_PIPE

SIZER = Path(sys.executable).with_name("sizer")
TIMEOUT_S = 60
"""Far above the ~1 s a command takes; only a hung process hits it."""

ESTIMATE = ("estimate", "--model", "llama-3.1-8b", "--method", "lora")


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without any SIZER_* setting of the test run's own."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("SIZER_")}, **extra}


def test_estimate_from_any_directory_leaves_nothing_behind(tmp_path: Path) -> None:
    """With the default SIZER_DATABASE_URL (./data/sizer.db, which does not exist here) the
    seed files answer, and no data/ directory or database file appears where it ran."""
    run = subprocess.run([str(SIZER), *ESTIMATE, "--format", "json"], cwd=tmp_path,
                         env=_clean_env(), capture_output=True, text=True, timeout=TIMEOUT_S)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["params"]["total"] == 8030261248
    assert list(tmp_path.iterdir()) == []


def test_a_closed_output_pipe_ends_quietly(tmp_path: Path) -> None:
    """``sizer estimate | head -1``: the reader goes away before the table is written. The
    command stops with the shell's status for SIGPIPE and no traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", *ESTIMATE], cwd=tmp_path, env=_clean_env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    process.stdout.close()  # before the command has started: every write finds no reader
    _, stderr = process.communicate(timeout=TIMEOUT_S)
    assert stderr.decode() == ""
    assert process.returncode == EXIT_BROKEN_PIPE


def test_a_bad_setting_is_one_line_and_exit_2_from_the_console_script(tmp_path: Path) -> None:
    run = subprocess.run([str(SIZER), "db", "current"], cwd=tmp_path,
                         env=_clean_env(SIZER_DEFAULT_LOCALE="fr"),
                         capture_output=True, text=True, timeout=TIMEOUT_S)
    assert run.returncode == 2
    assert run.stderr == (
        "configuration error: SIZER_DEFAULT_LOCALE: 'fr' is not one of de, en\n"
    )


HEAVY = ("fastapi", "starlette", "uvicorn", "sqlalchemy", "alembic", "jinja2", "app.db",
         "app.catalog", "app.accounts")


def test_only_the_command_being_run_is_imported() -> None:
    """``sizer --help`` imports none of the commands; ``sizer estimate`` no web framework and
    no server (it used to import every command, about 1.7 s per call)."""
    code = (
        "import sys\n"
        "from app.cli import build_parser\n"
        "build_parser(['--help'])\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
        "build_parser(['estimate'])\n"
        "print(','.join(m for m in ('fastapi', 'starlette', 'uvicorn') if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=TIMEOUT_S)
    assert run.stdout.splitlines() == ["", ""]
