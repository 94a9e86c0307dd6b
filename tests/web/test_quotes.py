"""Quote requests from a result row: form, stored request with its sizing, /q/<token>."""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.db.session import SessionFactory
from app.db.tables import QuoteRequest
from tests.web.conftest import HX

QUOTE = "/quote?item=gpu:rtx-pro-6000&model=llama-3.1-8b&method=lora&batch=1&seq=2048"
CONTACT = {
    "name": "Ada Lovelace", "company": "Analytical Engines GmbH", "email": "ada@example.com",
    "country": "DE", "vat_id": "DE 123 456 789", "message": "Two, please.", "quantity": "2",
}


def _form_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html))


def _count(factory: SessionFactory) -> int:
    with factory() as session:
        return int(session.scalar(select(func.count()).select_from(QuoteRequest)) or 0)


def test_every_result_row_links_to_a_quote_form_carrying_the_sizing(client: TestClient) -> None:
    body = client.get("/?model=llama-3.1-8b&method=lora").text
    links = re.findall(r'href="(/quote\?[^"]+)"', body)
    assert len(set(links)) == 8 + 11  # the phone's verdict bar repeats the recommended one
    form = client.get(links[0].replace("&amp;", "&"))
    assert form.status_code == 200
    fields = _form_fields(form.text)
    assert fields["model"] == "llama-3.1-8b" and fields["item"].startswith("gpu:")
    for name in ("name", "company", "email", "country", "vat_id", "message", "quantity"):
        assert f'for="f-{name}"' in form.text


def test_request_is_stored_with_its_snapshot_and_has_a_permanent_page(
    client: TestClient, seeded: SessionFactory, htmx: bool
) -> None:
    fields = _form_fields(client.get(QUOTE).text)
    response = client.post("/quote", data={**fields, **CONTACT}, headers=HX if htmx else {})
    target = response.headers["HX-Redirect"] if htmx else response.headers["location"]
    assert response.status_code == (200 if htmx else 303)
    assert re.fullmatch(r"/q/[A-Za-z0-9_-]{32}", target)
    with seeded() as session:
        row = session.scalars(select(QuoteRequest)).one()
        assert row.item_kind == "gpu" and row.item_slug == "rtx-pro-6000"
        assert row.quantity == 2 and row.vat_id == "DE123456789" and row.country == "DE"
        assert row.sizing["result"]["model_states_bytes"] == 16_731_611_136
        assert row.sizing["item_fit"]["fits"] is True
        assert len(row.sizing["systems"]) == 11
        assert row.sizing["calculator"]["model"] == "llama-3.1-8b"
    page = client.get(target)
    assert page.status_code == 200
    assert "Q-" in page.text and "Ada Lovelace" in page.text and "16.7\u00a0GB" in page.text
    assert page.headers["cache-control"] == "private, no-store"


def test_unknown_token_is_404(client: TestClient) -> None:
    response = client.get("/q/not-a-token", headers={"Accept": "text/html"})
    assert response.status_code == 404
    assert "We could not find this page" in response.text


def test_shop_quote_url_gets_sku_quantity_and_reference(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(
        quote_url_template="https://shop.example/quote?sku={sku}&qty={quantity}&ref={reference}"
    )
    fields = _form_fields(client.get(QUOTE).text)
    target = client.post("/quote", data={**fields, **CONTACT}).headers["location"]
    page = client.get(target).text
    assert re.search(
        r'href="https://shop.example/quote\?sku=rtx-pro-6000&amp;qty=2&amp;ref=Q-[A-Z0-9]{8}"', page
    )


BAD_CONTACTS = {
    "script in name": ({"name": "<script>alert(1)</script>"}, "name"),
    "missing company": ({"company": ""}, "company"),
    "bad email": ({"email": "not-an-address"}, "email"),
    "unknown country": ({"country": "XX"}, "country"),
    "bad VAT ID": ({"vat_id": "12"}, "vat_id"),
    "quantity 0": ({"quantity": "0"}, "quantity"),
}


def test_bad_contact_details_are_inline_errors_and_store_nothing(
    client: TestClient, seeded: SessionFactory, htmx: bool
) -> None:
    fields = _form_fields(client.get(QUOTE).text)
    for name, (change, field) in BAD_CONTACTS.items():
        response = client.post("/quote", data={**fields, **CONTACT, **change},
                               headers=HX if htmx else {})
        assert response.status_code == 422, name
        assert re.search(rf'<span id="err-{field}" class="field-error">[^<]+</span>',
                         response.text), name
        assert "<script>alert" not in response.text, name
    assert _count(seeded) == 0


def test_bad_sizing_or_item_stores_nothing(client: TestClient, seeded: SessionFactory) -> None:
    fields = _form_fields(client.get(QUOTE).text)
    cases = [({"item": "gpu:no-such-card"}, 404), ({"item": "bogus"}, 404),
             ({"model": "no-such-model"}, 404), ({"batch": "0"}, 422),
             ({"seq": "1000000000"}, 422)]
    for change, status in cases:
        response = client.post("/quote", data={**fields, **CONTACT, **change},
                               headers={"Accept": "text/html"})
        assert response.status_code == status, change
    assert client.get("/quote?item=gpu:nope&model=llama-3.1-8b").status_code == 404
    assert _count(seeded) == 0


def test_quote_pages_are_in_german_too(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    client.headers["Accept-Language"] = "de"
    form = client.get(QUOTE)
    assert "Angebot anfragen" in form.text and "Deutschland" in form.text
    target = client.post("/quote", data={**_form_fields(form.text), **CONTACT}).headers["location"]
    page = client.get(target).text
    assert "Ihre Angebotsanfrage" in page and "16,7\u00a0GB" in page
