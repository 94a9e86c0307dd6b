"""One exit-code rule for every ``sizer`` command (app/cli/__init__.py): anything the user can
fix is one line on standard error and exit 2. Here: every command that reads or writes rows,
on a database nobody has migrated (``sizer db seed`` returned 1 for this, ``sizer user create``
1 too, ``sizer apikey`` 2), and an unknown migration revision. SQLite and PostgreSQL."""

from __future__ import annotations

import io

import pytest

from tests.cli.runner import sizer

NEEDS_MIGRATED = [
    ("db", "seed"),
    ("apikey", "list"),
    ("apikey", "partners"),
    ("apikey", "revoke", "sz_live_abc"),
    ("apikey", "create", "--new-partner", "Shop AG"),
    ("user", "create", "boss@shop.example", "--password-stdin"),
]


@pytest.mark.parametrize("argv", NEEDS_MIGRATED, ids=" ".join)
def test_an_unmigrated_database_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, empty_database_url: str, argv: tuple[str, ...]
) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", empty_database_url)
    stdin = io.StringIO("a long enough password\n")
    monkeypatch.setattr("sys.stdin", stdin)

    run = sizer(*argv)

    assert run.code == 2, run
    assert run.stdout == ""
    assert run.stderr.startswith(f"sizer {argv[0]}: error: database: at migration none, not ")
    assert run.stderr.endswith("; run `sizer db upgrade` first\n")
    assert run.stderr.count("\n") == 1
    assert stdin.tell() == 0  # no password is asked for a database that cannot take it


@pytest.mark.parametrize("command", ["upgrade", "downgrade"])
def test_an_unknown_revision_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, empty_database_url: str, command: str
) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", empty_database_url)
    run = sizer("db", command, "nosuchrev")
    assert run.code == 2, run
    assert run.stderr.startswith("sizer db: error: revision: ")
    assert "nosuchrev" in run.stderr and run.stderr.count("\n") == 1
