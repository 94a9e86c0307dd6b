"""`sizer estimate` says where its catalog comes from and refuses what it cannot use: a bad
setting or a configured database it cannot use exits 2 naming it (never a silent answer from
the seed files), ``--offline`` answers from the seed files and says so on standard error, and
the cards come in the same order either way. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.catalog.seed import seed_database
from app.cli.estimate import OFFLINE_HINT, OFFLINE_NOTE
from app.db.session import SessionFactory
from tests.cli.runner import Run, sizer

ESTIMATE = ("estimate", "--model", "llama-3.1-8b", "--method", "lora", "--format", "json")
UNREACHABLE = "postgresql+psycopg://nobody@127.0.0.1:1/sizer"
"""Port 1: nothing listens there, so the connection is refused at once."""


def _refused(run: Run) -> str:
    """The one line a refusal prints, after checking it is one, with exit 2 and no output."""
    assert run.code == 2, run
    assert run.stdout == ""
    assert "Traceback" not in run.stderr and run.stderr.count("\n") == 1, run.stderr
    return run.stderr


@pytest.mark.parametrize(("name", "value"), [
    ("SIZER_DATABASE_URL", "not a url"),
    ("SIZER_DATABASE_URL", "mysql://x/y"),
    ("SIZER_VAT_RATES", "DE=lots"),
])
def test_a_bad_setting_exits_2_naming_it(monkeypatch: pytest.MonkeyPatch, name: str,
                                         value: str) -> None:
    monkeypatch.setenv(name, value)
    assert name in _refused(sizer(*ESTIMATE))


def test_an_unreachable_database_exits_2_and_offers_offline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", UNREACHABLE)
    line = _refused(sizer(*ESTIMATE))
    assert "SIZER_DATABASE_URL" in line and "cannot connect" in line and OFFLINE_HINT in line


def test_offline_answers_from_the_seed_files_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", UNREACHABLE)
    run = sizer(*ESTIMATE, "--offline")
    assert run.code == 0, run.stderr
    assert run.stderr == f"{OFFLINE_NOTE}\n"
    assert json.loads(run.stdout)["params"]["total"] == 8030261248


def test_serving_takes_offline_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", UNREACHABLE)
    argv = ("serving", "--model", "llama-3.1-8b", "--format", "json")
    assert OFFLINE_HINT in _refused(sizer(*argv))
    run = sizer(*argv, "--offline")
    assert run.code == 0 and run.stderr == f"{OFFLINE_NOTE}\n"


def test_a_configured_sqlite_file_that_is_not_there_is_refused_not_created(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", f"sqlite:///{tmp_path / 'typo.db'}")
    line = _refused(sizer(*ESTIMATE))
    assert "does not exist" in line and "sizer db upgrade" in line and OFFLINE_HINT in line
    assert list(tmp_path.iterdir()) == []


def test_an_unmigrated_database_exits_2(monkeypatch: pytest.MonkeyPatch,
                                        empty_database_url: str) -> None:
    if empty_database_url.startswith("sqlite:///"):
        Path(empty_database_url.removeprefix("sqlite:///")).touch()  # there, but empty
    monkeypatch.setenv("SIZER_DATABASE_URL", empty_database_url)
    line = _refused(sizer(*ESTIMATE))
    assert "at migration none" in line and "sizer db upgrade" in line


def test_a_database_without_cards_exits_2(monkeypatch: pytest.MonkeyPatch, database_url: str,
                                          session_factory: SessionFactory) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    line = _refused(sizer(*ESTIMATE))
    assert "no cards" in line and "sizer db seed" in line


def _answer(*argv: str) -> dict[str, Any]:
    run = sizer(*ESTIMATE, *argv)
    assert run.code == 0, run.stderr
    document: dict[str, Any] = json.loads(run.stdout)
    return document


def test_the_seeded_database_and_the_seed_files_give_the_same_answer_in_the_same_order(
    monkeypatch: pytest.MonkeyPatch, database_url: str, session_factory: SessionFactory,
) -> None:
    with session_factory.begin() as session:
        seed_database(session)
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    with_database = _answer()
    offline = _answer("--offline")
    assert [fit["gpu"] for fit in with_database["fits"]] == \
        [fit["gpu"] for fit in offline["fits"]]
    assert len(offline["fits"]) > 1
    assert with_database == offline
