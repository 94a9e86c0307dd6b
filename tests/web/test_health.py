"""/healthz says the process lives; /readyz says whether it can serve the catalog."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import text

from app.config import load_settings
from app.db import migrate
from app.http.session import DbSession
from app.main import create_app


def _client(database_url: str) -> Iterator[TestClient]:
    app = create_app(load_settings(database_url=database_url))
    # From loopback, so /readyz shows the migration ids (app/ops/access.py).
    with TestClient(app, client=("127.0.0.1", 50000)) as client:
        yield client


@pytest.fixture
def client(database_url: str) -> Iterator[TestClient]:
    yield from _client(database_url)


@pytest.fixture
def unmigrated_client(empty_database_url: str) -> Iterator[TestClient]:
    yield from _client(empty_database_url)


def test_healthz_is_ok(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_is_ok_when_migrated(client: TestClient) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["migration"]["current"] == body["migration"]["head"] == migrate.head_revision()


def test_readyz_is_503_and_says_why_when_not_migrated(unmigrated_client: TestClient) -> None:
    response = unmigrated_client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["database"] == "reachable"
    assert body["migration"]["current"] is None
    assert "sizer db upgrade" in body["detail"]
    assert unmigrated_client.get("/healthz").status_code == 200


def test_readyz_is_503_when_the_database_is_unreachable() -> None:
    for client in _client("postgresql+psycopg://nobody@127.0.0.1:1/x"):
        response = client.get("/readyz")
        assert response.status_code == 503
        assert response.json()["database"] == "unreachable"
        assert client.get("/healthz").status_code == 200


def test_the_request_session_commits_before_the_response(database_url: str) -> None:
    app: FastAPI = create_app(load_settings(database_url=database_url))

    @app.post("/_bump")
    def bump(session: DbSession) -> dict[str, str]:
        session.execute(text("UPDATE catalog_revision SET token = 'from-request'"))
        return {"status": "done"}

    with TestClient(app) as client:
        assert client.post("/_bump").status_code == 200
    engine = app.state.engine
    try:
        with engine.begin() as connection:
            token = connection.execute(text("SELECT token FROM catalog_revision")).scalar_one()
            connection.execute(text("UPDATE catalog_revision SET token = 'initial'"))
    finally:
        engine.dispose()
    assert token == "from-request"
