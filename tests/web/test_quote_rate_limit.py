"""POST /quote is limited per client address and clock hour (issue 13, point 5): in-process,
and in Redis shared by every worker when SIZER_REDIS_URL is set. Before, 500 scripted
requests in a row were all stored and pushed every real one out of the staff desk's view.

The limiters get a fixed clock so no test can straddle the edge of an hour."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from starlette.requests import Request
from starlette.types import Scope

from app.api.v1.ratelimit import FixedWindowLimiter, RedisFixedWindowLimiter
from app.config import load_settings
from app.db.session import SessionFactory
from app.db.tables import QuoteRequest
from app.main import create_app
from app.ops.clients import UNKNOWN_CLIENT
from app.web import quotes
from tests.conftest import RedisTarget

QUOTE = "/quote?item=gpu:rtx-pro-6000&model=llama-3.1-8b&method=lora&batch=1&seq=2048"
CONTACT = {"name": "Ada Lovelace", "company": "Analytical Engines GmbH",
           "email": "ada@example.com", "country": "DE", "quantity": "1"}
TEN_PAST = 3600 * 493_000 + 600.0
"""Ten minutes past a full hour: 50 minutes (3000 s) until the window resets."""


@pytest.fixture
def make_app(database_url: str, seeded: SessionFactory) -> Iterator[Callable[..., FastAPI]]:
    """``make_app(**settings)``: an app on the seeded database, its quote limiter on a fixed
    clock (in Redis when the settings name one, as the app built it)."""
    apps: list[FastAPI] = []

    def make(**overrides: object) -> FastAPI:
        app = create_app(load_settings(database_url=database_url, **overrides))
        store = app.state.shared_store
        app.state.quote_limiter = (
            FixedWindowLimiter(lambda: TEN_PAST, window_s=quotes.RATE_WINDOW_S)
            if store is None else
            RedisFixedWindowLimiter(store, lambda: TEN_PAST, kind="quote",
                                    window_s=quotes.RATE_WINDOW_S)
        )
        apps.append(app)
        return app

    yield make
    for app in apps:
        close(app)


def close(app: FastAPI) -> None:
    """What the app's lifespan does on shutdown (these clients never start it)."""
    app.state.engine.dispose()
    if app.state.shared_store is not None:
        app.state.shared_store.close()


def browser(app: FastAPI, address: str = "203.0.113.7", lang: str = "en") -> TestClient:
    client = TestClient(app, follow_redirects=False, client=(address, 50_000))
    client.headers["Accept-Language"] = lang
    return client


def send(client: TestClient, **contact: str) -> int:
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">',
                             client.get(QUOTE).text))
    return client.post("/quote", data={**fields, **CONTACT, **contact}).status_code


def stored(factory: SessionFactory) -> int:
    with factory() as session:
        return int(session.scalar(select(func.count()).select_from(QuoteRequest)) or 0)


def test_requests_beyond_the_hourly_limit_are_refused_and_not_stored(
    make_app: Callable[..., FastAPI], seeded: SessionFactory
) -> None:
    app = make_app(quote_rate_limit_per_hour=2)
    customer = browser(app)
    assert [send(customer), send(customer)] == [303, 303]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">',
                             customer.get(QUOTE).text))
    refused = customer.post("/quote", data={**fields, **CONTACT, "company": "Third Try AG"})
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "3000"
    assert 'id="quote-limited"' in refused.text
    assert "the most quote requests we take from one address in an hour (2)" in refused.text
    assert "try again in 50 min;" in refused.text
    assert 'value="Third Try AG"' in refused.text  # what was typed is kept
    assert stored(seeded) == 2
    assert send(browser(app, "198.51.100.20")) == 303  # another address has its own count
    assert stored(seeded) == 3


def test_a_refused_form_does_not_count_against_the_customer(
    make_app: Callable[..., FastAPI], seeded: SessionFactory
) -> None:
    customer = browser(make_app(quote_rate_limit_per_hour=1))
    assert [send(customer, email="not-an-address") for _ in range(3)] == [422, 422, 422]
    assert send(customer) == 303
    assert send(customer) == 429
    assert stored(seeded) == 1


def test_the_refusal_is_in_the_page_s_language(make_app: Callable[..., FastAPI]) -> None:
    customer = browser(make_app(quote_rate_limit_per_hour=1), lang="de")
    assert send(customer) == 303
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">',
                             customer.get(QUOTE).text))
    refused = customer.post("/quote", data={**fields, **CONTACT})
    assert refused.status_code == 429
    assert "Bitte versuchen Sie es in 50 Min. erneut" in refused.text
    assert "quote requests we take" not in refused.text


def test_an_ipv6_client_is_counted_by_its_64_prefix(
    make_app: Callable[..., FastAPI], seeded: SessionFactory
) -> None:
    app = make_app(quote_rate_limit_per_hour=1)
    assert send(browser(app, "2001:db8:1:2::1")) == 303
    assert send(browser(app, "2001:db8:1:2:ffff:eeee:dddd:cccc")) == 429  # same /64
    assert send(browser(app, "2001:db8:1:3::1")) == 303  # the next /64
    assert stored(seeded) == 2


@pytest.mark.parametrize(("host", "key"), [
    ("192.0.2.1", "192.0.2.1"),
    ("::ffff:192.0.2.1", "192.0.2.1"),
    ("2001:db8::1", "2001:db8::/64"),
    ("2001:DB8:0:0:1234::9", "2001:db8::/64"),
    ("testclient", "testclient"),
    ("", UNKNOWN_CLIENT),
])
def test_client_key(host: str, key: str) -> None:
    scope: Scope = {"type": "http", "client": (host, 1) if host else None, "headers": []}
    assert quotes.client_key(Request(scope)) == key


def test_without_redis_each_app_counts_in_process(database_url: str) -> None:
    app = create_app(load_settings(database_url=database_url))
    assert isinstance(app.state.quote_limiter, FixedWindowLimiter)
    close(app)


def test_workers_share_the_quote_limit_in_redis(
    make_app: Callable[..., FastAPI], seeded: SessionFactory, redis_target: RedisTarget
) -> None:
    """Two apps stand in for two workers: an address gets the limit once, not once each."""
    settings = {"quote_rate_limit_per_hour": 2, **redis_target.settings()}
    workers = [browser(make_app(**settings)), browser(make_app(**settings))]
    assert [send(workers[0]), send(workers[1]), send(workers[0]), send(workers[1])] == [
        303, 303, 429, 429]
    assert stored(seeded) == 2
    keys = redis_target.keys()
    assert len(keys) == 1 and keys[0].startswith(f"{redis_target.prefix}quote:")
    assert "203.0.113.7" not in keys[0]
    assert 0 < redis_target.client.ttl(keys[0]) <= 2 * quotes.RATE_WINDOW_S


def test_the_app_builds_its_quote_limiter_on_redis_with_its_own_counters(
    database_url: str, redis_target: RedisTarget
) -> None:
    app = create_app(load_settings(database_url=database_url, **redis_target.settings()))
    limiter = app.state.quote_limiter
    assert isinstance(limiter, RedisFixedWindowLimiter)
    assert limiter.hit("203.0.113.7", limit=5).remaining == 4
    keys = redis_target.keys()
    assert len(keys) == 1 and keys[0].startswith(f"{redis_target.prefix}quote:")
    assert abs(int(keys[0].rsplit(":", 1)[1]) - time.time() // quotes.RATE_WINDOW_S) <= 1
    close(app)
