"""While the database is down: estimates keep coming from the cached catalog, anything that
must write or read the database answers 503 with Retry-After (never a 500), /readyz says why."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from app.catalog.seed import seed_database
from app.config import load_settings
from app.db import migrate
from app.db.session import make_engine, make_session_factory
from app.main import create_app

UNREACHABLE = "postgresql+psycopg://postgres@127.0.0.1:1/none"


def test_nothing_reachable_gives_503_pages_and_problems_not_500() -> None:
    with TestClient(create_app(load_settings(database_url=UNREACHABLE))) as client:
        page = client.get("/", headers={"Accept": "text/html", "Accept-Language": "en"})
        assert page.status_code == 503
        assert page.headers["Retry-After"] == "5"
        assert "nothing was stored" in page.text
        api = client.post("/api/v1/estimates", json={"model": "llama-3.1-8b", "method": "lora"},
                          headers={"Authorization": "Bearer gsz_" + "x" * 43})
        assert api.status_code == 503
        assert api.headers["content-type"].startswith("application/problem+json")
        assert api.json()["status"] == 503
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["database"] == "unreachable"


def test_estimates_come_from_the_cached_catalog_while_the_database_is_gone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sizer.db"
    url = f"sqlite:///{path}"
    migrate.upgrade(url)
    engine = make_engine(url)
    with make_session_factory(engine).begin() as session:
        seed_database(session)
    engine.dispose()
    query = {"model": "llama-3.1-8b", "method": "lora"}
    app = create_app(load_settings(database_url=url))
    with TestClient(app) as client:
        before = client.get("/", params=query, headers={"Accept-Language": "en"})
        assert before.status_code == 200
        path.rename(tmp_path / "gone.db")  # the database disappears under the running app
        app.state.engine.dispose()  # pooled connections would still hold the old file
        during = client.get("/", params=query, headers={"Accept-Language": "en"})
        assert during.status_code == 200
        assert "16.7\u00a0GB" in during.text
        assert client.get("/readyz").status_code == 503
