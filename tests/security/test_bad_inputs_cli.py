"""The bad-input catalogue against ``sizer estimate`` (its ``main``, in-process, on the seeded
test database): exit status 2, one line on stderr that names the option or field, no
traceback, nothing on stdout, and no table gains or loses a row. SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.runner import sizer
from tests.security.catalogue import CALCULATOR, FIELDS, BadInput, nested
from tests.security.conftest import RowCounts, Shop


def arguments(entry: BadInput, tmp_path: Path) -> list[str]:
    """A valid ``sizer estimate`` command with the entry's option (and its context) set."""
    options = {"--model": "llama-3.1-8b", "--method": "lora"}
    for name, value in entry.context.items():
        options[str(FIELDS[name].cli)] = value
    if entry.field == "config":
        path = tmp_path / "config.json"
        path.write_bytes(entry.as_text.encode("utf-8", "surrogatepass"))
        del options["--model"]
        options["--model-config"] = str(path)
    else:
        options[str(FIELDS[entry.field].cli)] = entry.as_text
    return ["estimate", *(f"{option}={value}" for option, value in options.items()),
            "--format", "json"]


@pytest.fixture
def on_the_shop(shop: Shop, monkeypatch: pytest.MonkeyPatch) -> Shop:
    """``sizer`` reads the seeded test database."""
    monkeypatch.setenv("SIZER_DATABASE_URL", shop.database_url)
    return shop


def test_the_baseline_command_works(on_the_shop: Shop) -> None:
    """The catalogue's commands differ from this one in one option only."""
    run = sizer("estimate", "--model=llama-3.1-8b", "--method=lora", "--format", "json")
    assert run.code == 0, run.stderr
    assert '"engine_version"' in run.stdout


@pytest.mark.parametrize("entry", [e for e in CALCULATOR if e.applies_to("cli")],
                         ids=lambda e: e.id)
def test_sizer_estimate_refuses_it_in_one_line(
    on_the_shop: Shop, row_counts: Callable[[], RowCounts], entry: BadInput, tmp_path: Path
) -> None:
    before = row_counts()

    run = sizer(*arguments(entry, tmp_path))

    assert run.code == 2, (run.code, run.stdout[:300], run.stderr[:300])
    assert run.stdout == ""
    assert run.stderr.startswith("sizer estimate: error: "), run.stderr[:300]
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert row_counts() == before


def test_a_nesting_bomb_is_one_line(tmp_path: Path) -> None:
    """The deepest document: refused at the bound, before any parser recurses into it."""
    path = tmp_path / "config.json"
    path.write_text(nested(100_000), encoding="utf-8")
    run = sizer("estimate", "--model-config", str(path), "--method", "lora")
    assert run.code == 2
    assert run.stderr == (
        f"sizer estimate: error: model-config: {path}: nested more than 32 levels deep\n"
    )
