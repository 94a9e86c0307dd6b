"""Cross-site posts, logs, headers and look-alike partners (issue 24, points 4 and 5).

Before: ``POST /quote`` and ``POST /q/<token>/accept`` took no token and checked no Origin
(a third-party page could make its visitors file quote requests, and accepting a binding order
needed only the link, whose path was in the request log); no HSTS, no Permissions-Policy,
``server: uvicorn``; "ACME Computе" (Cyrillic "е") was accepted beside "ACME Compute".
SQLite and PostgreSQL."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.accounts import api_keys
from app.db.session import SessionFactory
from app.db.tables import AuditLog, Partner, QuoteRequest
from app.html.middleware import HSTS
from app.ops.logs import JsonFormatter
from app.web import cross_site
from tests.cli.test_serve import started  # noqa: F401 (fixture)
from tests.staff.conftest import (  # noqa: F401 (fixtures)
    CONTACT,
    QUOTE,
    _fast_hashes,
    hidden,
    staff_client,
    users,
)
from tests.staff.test_accept_quote import Sent, accept_form, sent  # noqa: F401 (fixture)
from tests.web.conftest import client, make_client, seeded  # noqa: F401 (fixtures)

SHOP = "http://testserver"
"""The origin TestClient's requests go to (no SIZER_PUBLIC_BASE_URL set)."""
FOREIGN = "https://evil.example"


def _quote_form(browser: TestClient) -> dict[str, str]:
    fields = dict(_hidden_fields(browser.get(QUOTE).text))
    return {**fields, **CONTACT}


def _hidden_fields(html: str) -> list[tuple[str, str]]:
    import re

    return re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html)


def _requests(users: SessionFactory) -> int:  # noqa: F811
    with users() as session:
        return session.scalar(select(func.count()).select_from(QuoteRequest)) or 0


# --- POST /quote -----------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [
    {"Origin": FOREIGN},
    {"Origin": "null"},  # a sandboxed frame, a data: page
    {"Origin": "http://testserver.evil.example"},
    {"Referer": f"{FOREIGN}/spam.html"},
], ids=["origin", "null-origin", "look-alike-origin", "referer"])
def test_a_quote_request_posted_from_another_site_is_refused(
    client: TestClient, users: SessionFactory, headers: dict[str, str]  # noqa: F811
) -> None:
    answer = client.post("/quote", data=_quote_form(client), headers=headers)
    assert answer.status_code == 403
    assert "This form was sent from another website" in answer.text
    assert _requests(users) == 0


@pytest.mark.parametrize("headers", [
    {"Origin": SHOP}, {"Referer": f"{SHOP}/quote?item=gpu:rtx-pro-6000"}, {},
], ids=["origin", "referer", "neither"])
def test_a_quote_request_from_the_shop_s_own_page_is_stored(
    client: TestClient, users: SessionFactory, headers: dict[str, str]  # noqa: F811
) -> None:
    answer = client.post("/quote", data=_quote_form(client), headers=headers)
    assert answer.status_code == 303
    assert _requests(users) == 1


def test_behind_its_public_address_only_that_origin_may_post(
    make_client: Callable[..., TestClient], users: SessionFactory  # noqa: F811
) -> None:
    browser = make_client(public_base_url="https://sizer.shop.example")
    form = _quote_form(browser)
    assert browser.post("/quote", data=form, headers={"Origin": SHOP}).status_code == 403
    ok = browser.post("/quote", data=form, headers={"Origin": "https://sizer.shop.example"})
    assert ok.status_code == 303


# --- POST /q/<token>/accept ------------------------------------------------------------------


def _accepted(users: SessionFactory) -> int:  # noqa: F811
    with users() as session:
        return len(session.scalars(select(AuditLog.id).where(AuditLog.action == "accept")).all())


def test_accepting_from_another_site_is_refused(
    make_client: Callable[..., TestClient], users: SessionFactory, sent: Sent  # noqa: F811
) -> None:
    customer = make_client()
    form = accept_form(customer, sent.path)
    answer = customer.post(f"{sent.path}/accept", data=form, headers={"Origin": FOREIGN})
    assert answer.status_code == 403 and _accepted(users) == 0


def test_accepting_needs_the_page_s_own_token(
    make_client: Callable[..., TestClient], users: SessionFactory, sent: Sent  # noqa: F811
) -> None:
    """The link alone (from a log, a forwarded mail) no longer accepts: the form's token is
    made when the page is rendered, for that quote, and holds for a day."""
    customer = make_client()
    customer.headers["Accept-Language"] = "en"
    quote = sent.path.rsplit("/", 1)[1]
    settings = customer.app.state.settings  # type: ignore[attr-defined]
    day_old = cross_site.accept_token(
        settings, quote, now=time.time() - cross_site.ACCEPT_TOKEN_HOURS * 3600 - 60)
    other_quote = cross_site.accept_token(settings, "another-quote-token-of-32-chars")
    for token in ("", "garbage", day_old, other_quote, "99999999999.abc"):
        answer = customer.post(f"{sent.path}/accept", data={"confirm": "1", "accept_token": token})
        assert answer.status_code == 403, token
        assert "This page is out of date" in answer.text
        assert _accepted(users) == 0
    answer = customer.post(f"{sent.path}/accept", data=accept_form(customer, sent.path),
                           headers={"Origin": SHOP})
    assert answer.status_code == 303 and _accepted(users) == 1


def test_a_token_is_bound_to_its_quote_and_its_time() -> None:
    class Settings:
        class secret_key:
            @staticmethod
            def get_secret_value() -> str:
                return "s" * 32

    settings: Any = Settings()
    now = 1_800_000_000.0
    token = cross_site.accept_token(settings, "quote-a", now=now)
    assert cross_site.accept_token_ok(settings, "quote-a", token, now=now + 3600)
    assert not cross_site.accept_token_ok(settings, "quote-b", token, now=now)
    assert not cross_site.accept_token_ok(settings, "quote-a", token, now=now - 1)  # future
    assert not cross_site.accept_token_ok(settings, "quote-a", token,
                                          now=now + 24 * 3600 + 1)


def test_the_acceptance_link_never_appears_in_the_log(
    make_client: Callable[..., TestClient], users: SessionFactory,  # noqa: F811
    sent: Sent, caplog: pytest.LogCaptureFixture,  # noqa: F811
) -> None:
    customer = make_client()
    quote = sent.path.rsplit("/", 1)[1]
    with caplog.at_level(logging.DEBUG):
        form = accept_form(customer, sent.path)
        customer.post(f"{sent.path}/accept", data=form)
        customer.get(f"{sent.path}?accepted=1")
    lines = [JsonFormatter().format(record) for record in caplog.records
             if not record.name.startswith("httpx")]  # the test's own client, not the app
    requests = [json.loads(line) for line in lines if '"request"' in line]
    assert {line["route"] for line in requests} >= {"/q/{token}", "/q/{token}/accept"}
    assert not [line for line in lines if quote in line]


# --- headers ---------------------------------------------------------------------------------


def test_every_answer_carries_a_permissions_policy(client: TestClient) -> None:  # noqa: F811
    for path in ("/", "/healthz", "/api/v1/gpus", "/no-such-page"):
        policy = client.get(path).headers["Permissions-Policy"]
        assert "camera=()" in policy and "geolocation=()" in policy and "payment=()" in policy


def test_hsts_is_sent_when_the_service_is_told_it_sits_behind_tls(
    make_client: Callable[..., TestClient],  # noqa: F811
) -> None:
    assert "Strict-Transport-Security" not in make_client().get("/healthz").headers
    behind_tls = make_client(public_base_url="https://sizer.shop.example")
    assert behind_tls.get("/healthz").headers["Strict-Transport-Security"] == HSTS


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_sizer_serve_sends_no_server_banner(started: list[dict[str, Any]]) -> None:  # noqa: F811
    """``sizer serve`` starts uvicorn without its ``server: uvicorn`` header; a uvicorn started
    with those settings answers without one."""
    from app.cli import main as sizer

    assert sizer(["serve", "--host", "127.0.0.1"]) == 0
    assert started[0]["server_header"] is False

    async def hello(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(hello, host="127.0.0.1", port=port, log_config=None,
                                           server_header=started[0]["server_header"]))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        answer = httpx.get(f"http://127.0.0.1:{port}/")
        assert answer.text == "ok" and "server" not in answer.headers
    finally:
        server.should_exit = True
        thread.join(10)


# --- look-alike partner names ----------------------------------------------------------------


@pytest.mark.parametrize("look_alike", [
    "ACME Computе",  # Cyrillic е, as the probe sent it
    "АСМЕ Compute",  # Cyrillic А, С, М, Е
    "ACME C0mpute",
    "ACME Cornpute",
    "ΑCΜΕ Compute",  # Greek capitals
])
def test_a_partner_name_that_looks_like_an_existing_one_is_refused_naming_it(
    users: SessionFactory, look_alike: str  # noqa: F811
) -> None:
    with users.begin() as session:
        first = api_keys.create_partner(session, name="ACME Compute")
    with users() as session, pytest.raises(api_keys.PartnerNameTaken) as taken:
        api_keys.create_partner(session, name=look_alike)
    assert taken.value.existing_id == first.id and taken.value.existing_name == "ACME Compute"
    assert taken.value.status_code == 409 and taken.value.field == "new_partner_name"
    with users() as session:
        assert session.scalar(select(func.count()).select_from(Partner)) == 1


@pytest.mark.parametrize("other", ["ACME Computing", "Acme Komputer", "株式会社ACME"])
def test_a_name_that_only_resembles_in_meaning_is_a_new_partner(
    users: SessionFactory, other: str  # noqa: F811
) -> None:
    with users.begin() as session:
        api_keys.create_partner(session, name="ACME Compute")
        api_keys.create_partner(session, name=other)


def test_the_staff_desk_names_the_look_alike(
    staff_client: Callable[..., tuple[TestClient, str]], users: SessionFactory  # noqa: F811
) -> None:
    from tests.staff.conftest import ADMIN

    desk, csrf = staff_client(ADMIN)
    with users.begin() as session:
        api_keys.create_partner(session, name="ACME Compute")
    answer = desk.post("/staff/api-keys", data={
        "csrf_token": csrf, "partner_id": "new", "new_partner_name": "ACME Computе",
        "label": "probe"})
    assert answer.status_code in (409, 422)
    assert "ACME Compute" in answer.text
    with users() as session:
        assert session.scalar(select(func.count()).select_from(Partner)) == 1
