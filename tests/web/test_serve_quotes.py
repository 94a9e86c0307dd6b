"""Quotes from the Serve page (issue 17, a user's view): the quote link carries every serving
input, the form shows the serving figures of that row as /serve does, the stored request keeps
the workload and the inputs, the customer's /q/ page shows the serving sizing in German and
English; bad serving inputs in a link are named beside their field on the form, never a 500,
and nothing is stored."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qsl, urlsplit

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.db.session import SessionFactory
from app.db.tables import QuoteRequest

SERVE = "/serve?model=llama-3.1-8b&weights=awq&kv=fp8&context=32768&users=16&runtime=sglang"
INPUTS = {"model": "llama-3.1-8b", "weights": "awq", "kv": "fp8", "context": "32768",
          "users": "16", "speed": "10", "gpus": "1", "runtime": "sglang"}
CONTACT = {"name": "Ada Lovelace", "company": "Analytical Engines GmbH",
           "email": "ada@example.com", "country": "DE", "quantity": "1"}


def _hidden(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html))


def _quote_link(body: str, row: str) -> str:
    found = re.search(rf'<tr id="{row}".*?href="(/quote\?[^"]+)"', body, re.S)
    assert found, row
    return unescape(found.group(1))


def _cell(body: str, row: str, css: str) -> str:
    found = re.search(rf'<tr id="{row}".*?<td class="{css}"[^>]*>([^<]+)</td>', body, re.S)
    assert found, (row, css)
    return found.group(1).strip()


def _figure(body: str, name: str) -> str:
    found = re.search(rf'<dd id="fig-{name}">([^<]+)</dd>', body)
    assert found, name
    return found.group(1).strip()


def _count(factory: SessionFactory) -> int:
    with factory() as session:
        return int(session.scalar(select(func.count()).select_from(QuoteRequest)) or 0)


@pytest.mark.parametrize("row", ["card-rtx-pro-6000", "system-srv-2x-h200-nvl"])
def test_the_quote_link_carries_every_serving_input_and_the_form_shows_the_row(
    client: TestClient, row: str,
) -> None:
    serve = client.get(SERVE).text
    link = _quote_link(serve, row)
    assert dict(parse_qsl(urlsplit(link).query)) == {
        "item": row.replace("card-", "gpu:").replace("system-", "system:"),
        "workload": "serving", **INPUTS}
    form = client.get(link)
    assert form.status_code == 200
    assert _hidden(form.text) == dict(parse_qsl(urlsplit(link).query))
    assert _figure(form.text, "users") == _cell(serve, row, "users")
    assert _figure(form.text, "speed") == _cell(serve, row, "speed")
    assert _figure(form.text, "speed-total") == _cell(serve, row, "speed-total")
    for name in ("weights", "kv", "kv-pool", "total"):
        assert _figure(form.text, name).endswith(("GB", "tokens)"))
    assert "micro-batch" not in form.text  # not a training sizing
    assert "AWQ 4-bit" in form.text and "16 concurrent users at 32,768 tokens each" in form.text


def test_the_stored_request_keeps_the_workload_the_inputs_and_the_figures(
    client: TestClient, seeded: SessionFactory, htmx: bool,
) -> None:
    form = client.get(_quote_link(client.get(SERVE).text, "card-rtx-pro-6000")).text
    headers = {"HX-Request": "true"} if htmx else {}
    response = client.post("/quote", data={**_hidden(form), **CONTACT}, headers=headers)
    target = response.headers["HX-Redirect"] if htmx else response.headers["location"]
    with seeded() as session:
        row = session.scalars(select(QuoteRequest)).one()
        assert row.workload == "serving"
        assert dict(parse_qsl(row.calculator_query)) == INPUTS
        assert row.sizing["item_fit"]["max_concurrency"] == int(_figure(form, "users"))
    page = client.get(target).text
    for name in ("users", "speed", "speed-total", "weights", "kv", "kv-pool", "total"):
        assert _figure(page, name) == _figure(form, name), name
    assert 'href="/serve?model=llama-3.1-8b&amp;weights=awq' in page
    assert "Model states" not in page


def test_the_customer_page_shows_the_serving_sizing_in_german(
    make_client: object,
) -> None:
    client: TestClient = make_client()  # type: ignore[operator]
    client.headers["Accept-Language"] = "de"
    form = client.get(_quote_link(client.get(SERVE).text, "card-rtx-pro-6000")).text
    target = client.post("/quote", data={**_hidden(form), **CONTACT}).headers["location"]
    page = client.get(target).text
    assert "Für die Inferenz" in page and "16 gleichzeitige Nutzer mit je 32.768 Tokens" in page
    for german in ("Gewichte je GPU", "KV-Cache-Vorrat je GPU", "Tokens/s je Nutzer"):
        assert german in page, german
    for english in ("Weights per GPU", "KV cache pool", "concurrent users", "To serve"):
        assert english not in page, english


@pytest.mark.parametrize(("query", "field", "label", "status"), [
    ("users=0", "users", "Concurrent users", 422),
    ("context=abc", "context", "Context per user (tokens)", 422),
    ("weights=int3", "weights", "Weights format", 422),
    ("runtime=llama.cpp&weights=awq", "weights", "Weights format", 422),
    ("model=no-such-model", "model", "Model", 404),
    ("gpu=no-such-card", "gpu", "Card to check", 404),
])
def test_bad_serving_inputs_in_a_link_are_named_on_the_form_and_nothing_is_stored(
    client: TestClient, seeded: SessionFactory, query: str, field: str, label: str,
    status: int,
) -> None:
    link = f"/quote?item=gpu:rtx-pro-6000&workload=serving&model=llama-3.1-8b&{query}"
    response = client.get(link)
    assert response.status_code == status
    summary = re.search(r'<div class="error-summary"[^>]*id="sizing-errors".*?</div>',
                        response.text, re.S)
    assert summary and f"<li>{label}: " in summary.group(0), response.text[:2000]
    assert '<form id="quote"' not in response.text
    posted = client.post("/quote", data={**dict(parse_qsl(urlsplit(link).query)), **CONTACT})
    assert posted.status_code == status and "sizing-errors" in posted.text
    assert _count(seeded) == 0


@pytest.mark.parametrize(("lang", "one", "wrong"), [
    ("en", "1 user at 8,192 tokens", "1 concurrent users"),
    ("de", "1 Nutzer mit 8.192 Tokens", "1 gleichzeitige Nutzer"),
])
def test_one_user_is_one_user_on_the_form_and_the_customer_s_page(
    make_client: object, lang: str, one: str, wrong: str,
) -> None:
    """The Serve page's default, one user, read "1 concurrent users at 8,192 tokens each" on
    the quote form and /q/ (a fresh walk after issue 30's "serves 1 users")."""
    client: TestClient = make_client()  # type: ignore[operator]
    client.headers["Accept-Language"] = lang
    form = client.get(_quote_link(client.get("/serve?model=llama-3.1-8b").text,
                                  "card-rtx-pro-6000")).text
    target = client.post("/quote", data={**_hidden(form), **CONTACT}).headers["location"]
    for body in (form, client.get(target).text):
        assert one in body and wrong not in body
