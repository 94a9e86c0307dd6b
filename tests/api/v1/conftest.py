"""The partner API on a seeded database (SQLite and PostgreSQL), with keys to call it.

Builders: ``issue_key(partner=..., rate_limit=...)`` commits a key and returns its plaintext;
``api(**settings)`` builds a client on the seeded database; ``auth`` is the default key's
header.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.accounts import api_keys
from app.caches import Caches
from app.config import load_settings
from app.db.session import SessionFactory
from app.main import create_app


def partner_id(session: Session, name: str) -> int:
    """The id of the partner with exactly this name, created when there is none (keys are
    issued for a partner named explicitly, never one found by resemblance)."""
    for partner in api_keys.list_partners(session):
        if partner.name == name:
            return partner.id
    return api_keys.create_partner(session, name=name).id


@pytest.fixture
def seeded(session_factory: SessionFactory, seed_catalog: Callable[[], None]) -> SessionFactory:
    """The shipped seed catalog, committed (tests/conftest.py empties it afterwards)."""
    seed_catalog()
    return session_factory


@pytest.fixture
def issue_key(seeded: SessionFactory) -> Callable[..., str]:
    """``issue_key(partner="Acme", rate_limit=None)`` -> the plaintext of a committed key."""

    def issue(partner: str = "Acme Integrations", rate_limit: int | None = None) -> str:
        with seeded.begin() as session:
            _, plaintext = api_keys.issue_key(
                session, partner_id=partner_id(session, partner), label="tests",
                rate_limit_per_minute=rate_limit,
            )
        return plaintext

    return issue


@pytest.fixture
def api(database_url: str, seeded: SessionFactory) -> Iterator[Callable[..., TestClient]]:
    """``api(caches=None, **settings)``: a client of the whole app on the seeded database
    (with these caches, e.g. with a clock the test steps)."""
    clients: list[TestClient] = []

    def make(caches: Caches | None = None, **overrides: object) -> TestClient:
        settings = load_settings(database_url=database_url, **overrides)
        client = TestClient(create_app(settings, caches=caches), follow_redirects=False)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(api: Callable[..., TestClient]) -> TestClient:
    return api()


@pytest.fixture
def key(issue_key: Callable[..., str]) -> str:
    return issue_key()


@pytest.fixture
def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def assert_problem(response: Any, status: int, code: str | None = None) -> dict[str, Any]:
    """The response is an RFC 9457 problem with this status; returns its body."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert {"type", "title", "status", "detail", "code"} <= set(body)
    assert body["status"] == status
    assert str(body["type"]).startswith("/api/v1/docs#problem-")
    if code is not None:
        assert body["code"] == code
    return body
