"""A price the customer asked at keeps its word "indicative" (issue 27's seed prices): the
result calls the seed catalog's public list price "indicative" until staff confirm one; the quote
request stores that with the price, so the customer's /q/ page says it too, in English and in
German, for a fine-tuning and a Serve request; a price staff set is shown without it."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text

from app.catalog import revision
from app.db.session import SessionFactory
from app.db.tables import QuoteRequest

FINE_TUNE = "/quote?item=gpu:rtx-pro-6000&model=llama-3.1-8b&method=lora&batch=1&seq=2048"
SERVE = "/serve?model=llama-3.1-8b&weights=awq&kv=fp8&context=32768&users=16"
CONTACT = {"name": "Ada Lovelace", "company": "Analytical Engines GmbH",
           "email": "ada@example.com", "country": "DE", "quantity": "1"}
WORD = {"en": "indicative", "de": "Richtpreis"}
PRICE = {"en": "€8,999.00", "de": "8.999,00\u00a0€"}


def _hidden(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html))


def _form(client: TestClient, workload: str) -> str:
    if workload == "training":
        return client.get(FINE_TUNE).text
    serve = client.get(SERVE).text
    found = re.search(r'<tr id="card-rtx-pro-6000".*?href="(/quote\?[^"]+)"', serve, re.S)
    assert found
    return client.get(unescape(found.group(1))).text


def _asked_price(client: TestClient, workload: str) -> str:
    """The customer's /q/ page's "Price" of what they asked for, after asking from the form."""
    response = client.post("/quote", data={**_hidden(_form(client, workload)), **CONTACT})
    assert response.status_code == 303, response.text
    page = client.get(response.headers["location"]).text
    found = re.search(r'<dd id="asked-price">(.*?)</dd>', page, re.S)
    assert found, "no price of the item asked for"
    return found.group(1)


def _stored_flag(factory: SessionFactory) -> bool:
    with factory() as session:
        return session.scalars(select(QuoteRequest.item_price_indicative)).one()


@pytest.mark.parametrize("workload", ["training", "serving"])
def test_a_seed_price_stays_indicative_on_the_customer_s_page(
    lang_client: TestClient, seeded: SessionFactory, lang: str, workload: str,
) -> None:
    price = _asked_price(lang_client, workload)
    assert WORD[lang] in price
    assert _stored_flag(seeded) is True


@pytest.mark.parametrize("locale", ["en", "de"])
@pytest.mark.parametrize("workload", ["training", "serving"])
def test_a_staff_price_is_shown_without_the_word(
    make_client: Callable[..., TestClient], seeded: SessionFactory, locale: str, workload: str,
) -> None:
    with seeded.begin() as session:  # staff priced the card in the desk
        session.execute(text(
            "UPDATE gpu_sku SET price_eur_net = 8999, price_indicative = false, "
            "price_source = 'staff' WHERE slug = 'rtx-pro-6000'"))
        revision.bump(session)
    client = make_client()
    client.headers["Accept-Language"] = locale
    price = _asked_price(client, workload)
    assert PRICE[locale] in price and WORD[locale] not in price
    assert _stored_flag(seeded) is False
