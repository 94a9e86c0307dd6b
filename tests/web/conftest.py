"""A seeded catalog and an app on it, for the customer-page tests (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from app.config import load_settings
from app.db.session import SessionFactory
from app.main import create_app

HX = {"HX-Request": "true"}


@pytest.fixture
def seeded(session_factory: SessionFactory,
           seed_catalog: Callable[[], None]) -> Iterator[SessionFactory]:
    """The shipped seed catalog, committed; catalog and quote requests emptied afterwards."""
    seed_catalog()
    yield session_factory
    with session_factory.begin() as session:
        session.execute(text("DELETE FROM quote_request"))


@pytest.fixture
def make_client(database_url: str, seeded: SessionFactory) -> Iterator[Callable[..., TestClient]]:
    """``make_client(**settings)``: a client on the seeded database with these settings."""
    clients: list[TestClient] = []

    def make(**overrides: object) -> TestClient:
        app = create_app(load_settings(database_url=database_url, **overrides))
        client = TestClient(app, follow_redirects=False)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    """English pages by default so assertions read like the page."""
    client = make_client()
    client.headers["Accept-Language"] = "en"
    return client


@pytest.fixture(params=[False, True], ids=["page", "htmx"])
def htmx(request: pytest.FixtureRequest) -> bool:
    """HTML tests run twice: as a full page and as the htmx fragment."""
    flag: bool = request.param
    return flag


@pytest.fixture(params=["en", "de"])
def lang(request: pytest.FixtureRequest) -> str:
    """Tests of what a page says run in English and in German."""
    value: str = request.param
    return value


@pytest.fixture
def lang_client(make_client: Callable[..., TestClient], lang: str) -> TestClient:
    """A client on the seeded database asking for pages in ``lang``."""
    client = make_client()
    client.headers["Accept-Language"] = lang
    return client
