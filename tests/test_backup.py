"""`sizer db export` and `sizer db import`: a backup restores to the same rows, on SQLite and
PostgreSQL and from one to the other, and a bad backup writes nothing."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.engine import make_url

from app.catalog.seed import seed_database
from app.cli import main as sizer
from app.db import migrate
from app.db.session import make_engine, make_session_factory
from app.db.tables import Partner, QuoteLine, QuoteRequest
from tests.conftest import _postgres_base_url, _PostgresSchema


@pytest.fixture
def second_database_url(backend: str, empty_database_url: str,
                        sqlite_templates: SqliteTemplates) -> Iterator[str]:
    """Another empty database on the same backend, migrated to head."""
    if backend == "sqlite":
        path = Path(str(make_url(empty_database_url).database)).with_suffix(".restored.db")
        shutil.copy(sqlite_templates.migrated, path)
        try:
            yield f"sqlite:///{path}"
        finally:
            path.unlink(missing_ok=True)
        return
    schema = _PostgresSchema(_postgres_base_url())
    try:
        migrate.upgrade(schema.url)
        yield schema.url
    finally:
        schema.drop()


@dataclass(frozen=True)
class SqliteTemplates:
    """SQLite files made once for the module, copied for each test: one migrated to head, one
    migrated and filled (``_fill``). A copy of a file is the same database as a new migration
    of it; PostgreSQL cases migrate and fill a schema of their own each time."""

    migrated: Path
    filled: Path


@pytest.fixture(scope="module")
def sqlite_templates(sqlite_dir: Path) -> SqliteTemplates:
    folder = sqlite_dir / "backup-templates"
    folder.mkdir(exist_ok=True)
    templates = SqliteTemplates(folder / "migrated.db", folder / "filled.db")
    migrate.upgrade(f"sqlite:///{templates.migrated}")
    shutil.copy(templates.migrated, templates.filled)
    _fill(f"sqlite:///{templates.filled}")
    return templates


@pytest.fixture
def filled_database_url(empty_database_url: str, sqlite_templates: SqliteTemplates) -> str:
    """The seeded catalog plus a partner's quote request with a priced line."""
    url = make_url(empty_database_url)
    if url.get_backend_name() == "sqlite" and url.database:
        shutil.copy(sqlite_templates.filled, url.database)
        return empty_database_url
    migrate.upgrade(empty_database_url)
    _fill(empty_database_url)
    return empty_database_url


def _fill(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        with make_session_factory(engine).begin() as session:
            seed_database(session)
            partner = Partner(slug="acme", name="ACME Reseller GmbH",
                              name_key="acme-reseller-gmbh")
            session.add(partner)
            session.flush()
            request = QuoteRequest(
                token="t" * 43, reference="Q-BACKUP01", locale="de", name="Ada", company="AE",
                email="ada@example.com", country="DE", vat_id=None, message="Grüße ✓",
                quantity=2, item_kind="gpu", item_slug="rtx-pro-6000", item_name="RTX PRO 6000",
                item_sku_price_eur_net=Decimal("8999.50"), calculator_query="model=x",
                engine_version="1.1.0", sizing={"result": {"total": 1}}, partner_id=partner.id,
                valid_until=date(2027, 1, 31), status="in_progress",
            )
            session.add(request)
            session.flush()
            session.add(QuoteLine(
                quote_request_id=request.id, position=1, item_kind="gpu",
                item_slug="rtx-pro-6000", description="RTX PRO 6000", quantity=2,
                unit_price_eur_net=Decimal("8999.50"), discount_percent=Decimal("5.00"),
            ))
    finally:
        engine.dispose()


def _run(monkeypatch: pytest.MonkeyPatch, url: str, *args: str) -> int:
    monkeypatch.setenv("SIZER_DATABASE_URL", url)
    return sizer(["db", *args])


def _export(monkeypatch: pytest.MonkeyPatch, url: str, path: Path) -> dict[str, Any]:
    assert _run(monkeypatch, url, "export", "--out", str(path)) == 0
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    document.pop("exported_at")
    return document


def _count(url: str, table: str) -> int:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return int(connection.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())
    finally:
        engine.dispose()


def test_a_backup_restores_every_row(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, filled_database_url: str,
    second_database_url: str,
) -> None:
    original = _export(monkeypatch, filled_database_url, tmp_path / "a.json")
    assert len(original["tables"]["gpu_sku"]) == 15  # 8 sold, 7 comparison cards (issue 26)
    assert original["tables"]["quote_line"][0]["unit_price_eur_net"] == "8999.50"

    assert _run(monkeypatch, second_database_url, "import", str(tmp_path / "a.json")) == 0
    restored = _export(monkeypatch, second_database_url, tmp_path / "b.json")
    assert restored == original


def test_new_rows_after_a_restore_get_fresh_ids(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, filled_database_url: str,
    second_database_url: str,
) -> None:
    _export(monkeypatch, filled_database_url, tmp_path / "a.json")
    assert _run(monkeypatch, second_database_url, "import", str(tmp_path / "a.json")) == 0
    engine = make_engine(second_database_url)
    try:
        with make_session_factory(engine).begin() as session:
            partner = Partner(slug="second", name="Second partner", name_key="second-partner")
            session.add(partner)
            session.flush()
            largest = session.scalar(select(func.max(Partner.id)))
            assert partner.id == largest and partner.id > 1
    finally:
        engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the source is SQLite
def test_sqlite_backup_restores_into_postgresql(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, backend: str, filled_database_url: str,
) -> None:
    schema = _PostgresSchema(_postgres_base_url())
    try:
        migrate.upgrade(schema.url)
        original = _export(monkeypatch, filled_database_url, tmp_path / "a.json")
        assert _run(monkeypatch, schema.url, "import", str(tmp_path / "a.json")) == 0
        assert _export(monkeypatch, schema.url, tmp_path / "b.json") == original
    finally:
        schema.drop()


def test_importing_into_a_database_with_rows_is_refused_without_replace(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, filled_database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _export(monkeypatch, filled_database_url, tmp_path / "a.json")
    assert _run(monkeypatch, filled_database_url, "import", str(tmp_path / "a.json")) == 2
    assert "already holds rows" in capsys.readouterr().err
    assert _run(
        monkeypatch, filled_database_url, "import", "--replace", str(tmp_path / "a.json")
    ) == 0
    assert _count(filled_database_url, "quote_line") == 1


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda d: d.update(migration="20200101_0001"), "taken at migration"),
        (lambda d: d.update(format="something-else"), "not a gpu-sizer-backup"),
        (lambda d: d["tables"].update(secrets=[]), "unknown at this migration"),
        (lambda d: d["tables"]["quote_line"][0].update(quantity=-1), "refused"),
        (lambda d: d["tables"]["quote_request"][0].update(valid_until="soon"), "not valid"),
        (lambda d: d["tables"]["quote_request"][0].update(created_at="2026-12-01T09:00:00"),
         "needs its time zone"),
    ],
    ids=["other migration", "not ours", "unknown table", "constraint", "bad date",
         "timestamp without zone"],
)
def test_a_bad_backup_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, filled_database_url: str,
    second_database_url: str, capsys: pytest.CaptureFixture[str], damage: Any, reason: str,
) -> None:
    _export(monkeypatch, filled_database_url, tmp_path / "a.json")
    document = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    damage(document)
    (tmp_path / "bad.json").write_text(json.dumps(document), encoding="utf-8")
    assert _run(monkeypatch, second_database_url, "import", str(tmp_path / "bad.json")) == 2
    assert reason in capsys.readouterr().err
    for table in ("gpu_sku", "model_card", "partner", "quote_request", "quote_line"):
        assert _count(second_database_url, table) == 0


def test_a_file_that_is_not_json_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, second_database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "junk.json").write_text("{not json", encoding="utf-8")
    assert _run(monkeypatch, second_database_url, "import", str(tmp_path / "junk.json")) == 2
    assert "not a readable JSON backup" in capsys.readouterr().err
