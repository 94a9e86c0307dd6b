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
from app.cli.estimate import NO_DATABASE_NOTE
from app.config import DEFAULT_DATABASE_URL

SIZER = Path(sys.executable).with_name("sizer")
TIMEOUT_S = 60
"""Far above the ~1 s a command takes; only a hung process hits it."""

ESTIMATE = ("estimate", "--model", "llama-3.1-8b", "--method", "lora")


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without any SIZER_* setting of the test run's own."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("SIZER_")}, **extra}


def test_estimate_from_any_directory_leaves_nothing_behind(tmp_path: Path) -> None:
    """With no SIZER_DATABASE_URL and no ./data/sizer.db yet, the seed files answer and the
    command says so, and no data/ directory or database file appears where it ran."""
    run = subprocess.run([str(SIZER), *ESTIMATE, "--format", "json"], cwd=tmp_path,
                         env=_clean_env(), capture_output=True, text=True, timeout=TIMEOUT_S)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["params"]["total"] == 8030261248
    assert run.stderr == NO_DATABASE_NOTE.format(url=DEFAULT_DATABASE_URL) + "\n"
    assert list(tmp_path.iterdir()) == []


SEED_PATH_SPARES = ("sqlalchemy", "pydantic", "pydantic_settings", "prometheus_client",
                    "alembic", "fastapi", "jinja2", "app.db", "app.config")
"""What ``sizer estimate --offline`` and ``sizer serving --offline`` do without: the settings,
the database layer and the web's metrics (each a noticeable share of the command's start;
benchmarks/test_cli_speed.py)."""


def _imported(argv: list[str], names: tuple[str, ...], cwd: Path) -> list[str]:
    """Which of ``names`` ``sizer`` has imported once it has run ``argv`` in ``cwd``."""
    code = (
        "import sys\n"
        "from app.cli import main\n"
        f"main({argv!r})\n"
        f"print(','.join(m for m in {names!r} if m in sys.modules), file=sys.stderr)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=_clean_env(),
                         capture_output=True, text=True, check=True, timeout=TIMEOUT_S)
    return [name for name in run.stderr.splitlines()[-1].split(",") if name]


def test_the_seed_path_imports_neither_the_database_nor_the_settings(tmp_path: Path) -> None:
    assert _imported([*ESTIMATE, "--offline"], SEED_PATH_SPARES, tmp_path) == []
    serving = ["serving", "--offline", "--model", "llama-3.1-8b"]
    assert _imported(serving, SEED_PATH_SPARES, tmp_path) == []


NO_DATABASE_SPARES = ("sqlalchemy", "alembic", "prometheus_client", "fastapi", "jinja2",
                      "app.db")
"""What ``sizer estimate`` does without in a fresh checkout (SIZER_DATABASE_URL unset, no
``data/sizer.db``): it reads and checks the settings, then the seed files, never the database
layer (SQLAlchemy alone is about half the command's start)."""


def test_the_no_database_path_imports_no_database_layer(tmp_path: Path) -> None:
    assert _imported(list(ESTIMATE), NO_DATABASE_SPARES, tmp_path) == []
    assert _imported(list(ESTIMATE), ("pydantic_settings",), tmp_path) == ["pydantic_settings"]


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
    assert stderr.decode() == NO_DATABASE_NOTE.format(url=DEFAULT_DATABASE_URL) + "\n"
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
