"""A serving quote on the staff desk (issue 17): the list marks it; the desk, its print view
and the customer's priced page show the serving sizing (workload, Serve inputs, users,
tokens/s, KV cache, the serving breakdown), never a training one; the German desk has no
English."""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import select

from app.db.session import SessionFactory
from app.db.tables import QuoteRequest
from tests.english_words import english
from tests.staff.conftest import ADMIN, CONTACT, SALES, hidden, sign_in
from tests.staff.test_german_desk import CATALOG_DATA

SERVE_QUOTE = ("/quote?item=system:srv-2x-h200-nvl&workload=serving&model=llama-3.3-70b"
               "&weights=fp8&kv=fp8&context=16384&users=32&gpus=1&runtime=vllm")
StaffClient = Callable[..., tuple[TestClient, str]]


def _serving_request(browser: TestClient) -> str:
    form = browser.get(SERVE_QUOTE).text
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form))
    response = browser.post("/quote", data={**fields, **CONTACT})
    assert response.status_code == 303, response.text
    return str(response.headers["location"])


def _figures(html: str) -> dict[str, str]:
    return dict(re.findall(r'<dd id="fig-([a-z-]+)">([^<]+)</dd>', html))


def _reference(factory: SessionFactory) -> str:
    with factory() as session:
        return str(session.scalars(select(QuoteRequest.reference)).one())


def test_the_desk_print_view_and_priced_page_show_the_serving_sizing(
    staff_client: StaffClient, users: SessionFactory,
) -> None:
    client, token = staff_client(SALES)
    q_path = _serving_request(client)
    customer = _figures(client.get(q_path).text)
    assert {"users", "speed", "speed-total", "weights", "kv", "kv-pool", "total"} <= set(customer)
    reference = _reference(users)
    listed = client.get("/staff/quotes").text
    assert f'id="workload-{reference}">(Serve)<' in listed
    desk = client.get(f"/staff/quotes/{reference}").text
    assert 'id="workload">Serve<' in desk
    assert 'href="/serve?model=llama-3.3-70b&amp;weights=fp8&amp;kv=fp8' in desk
    assert "32 concurrent users at 16,384 tokens each" in desk
    assert _figures(desk) == customer
    assert "KV cache for these users" in desk and "Optimizer states" not in desk
    version = hidden(desk, "version")
    assert client.post(f"/staff/quotes/{reference}/lines", data={
        "csrf_token": token, "version": version, "item_slug": "other:",
        "description": "Server", "quantity": "1", "unit_price": "100"}).status_code == 303
    version = hidden(client.get(f"/staff/quotes/{reference}").text, "version")
    assert client.post(f"/staff/quotes/{reference}/send", data={
        "csrf_token": token, "version": version, "confirm": "1"}).status_code == 303
    printable = client.get(f"/staff/quotes/{reference}/print").text
    assert _figures(printable) == customer and "KV cache for these users" in printable
    priced = client.get(q_path).text
    assert 'id="priced-quote"' in priced
    breakdown = priced.split('id="priced-quote"', 1)[1].split("</section>", 1)[0]
    assert "KV cache for these users" in breakdown and "CUDA graphs" in breakdown


def test_the_german_desk_shows_a_serving_quote_without_english(
    make_client: Callable[..., TestClient], users: SessionFactory,
) -> None:
    browser = make_client()
    browser.headers["Accept-Language"] = "de"
    _serving_request(browser)
    sign_in(browser, ADMIN)
    reference = _reference(users)
    assert f'id="workload-{reference}">(Inferenz)<' in browser.get("/staff/quotes").text
    for path in (f"/staff/quotes/{reference}", f"/staff/quotes/{reference}/print"):
        text = browser.get(path).text
        assert "Inferenz" in text and "Tokens/s je Nutzer" in text, path
        for data in sorted(CATALOG_DATA, key=len, reverse=True):
            text = text.replace(data, " ")
        assert english(text) == [], path
