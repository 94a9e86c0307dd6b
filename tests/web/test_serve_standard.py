"""Serve at the fine-tune page's standard (issue 30, point 3): every bad input is an error
beside its field (never a silent default, never the old verdict left standing), the model's
longest context is a limit as in fine-tuning, the tables list what serves the load first and
then by price, German pages name systems in German, and the phone's verdict bar comes with
every result."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from app.catalog.seed import load_seed_catalog
from app.db.session import SessionFactory
from tests.web.conftest import HX

FORM = {"model": "llama-3.1-8b", "weights": "bf16", "kv": "auto", "context": "8192",
        "users": "1", "gpus": "1", "runtime": "vllm", "gpu": ""}
"""What the Serve form sends: every field, always."""
BOTH = "/serve?model=llama-3.1-70b&weights=awq&context=32768&users=8"
"""A load some cards and systems serve and some do not."""


def _error(body: str, field: str) -> str:
    match = re.search(rf'<span id="err-{field}" class="field-error"[^>]*>([^<]*)</span>', body)
    assert match, f"no message slot for {field}"
    return html.unescape(match.group(1)).replace("\u00a0", " ")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("users", "0", "Enter a number from 1 to 65,536."),
    ("users", "-5", "Enter a number from 1 to 65,536."),
    ("users", "70000", "Enter a number from 1 to 65,536."),
    ("users", "", "Enter a number from 1 to 65,536."),
    ("users", "abc", "Enter a whole number."),
    ("context", "99999999999", "Enter a number from 1 to 16,777,216."),
    ("context", "", "Enter a number from 1 to 16,777,216."),
    ("gpus", "", "Enter a number from 1 to 64."),
])
def test_a_bad_number_is_named_beside_its_field_and_sizes_nothing(
    client: TestClient, field: str, value: str, message: str
) -> None:
    response = client.post("/serve", data={**FORM, field: value}, headers=HX)
    assert response.status_code == 422
    assert _error(response.text, field) == message
    assert "serves" not in response.text  # no verdict: the old one is replaced
    assert 'id="verdict-bar"' in response.text  # and the phone's bar says so too


def test_a_shared_link_leaves_defaults_out_and_is_still_sized(client: TestClient) -> None:
    response = client.get("/serve?model=llama-3.1-8b", headers=HX)
    assert response.status_code == 200
    assert "serves 1 user at 8,192 tokens, up to" in response.text


@pytest.mark.parametrize(("lang", "message"), [
    ("en", "A context of 200,000 tokens is more than this model's maximum of 131,072 tokens."),
    ("de", "Ein Kontext von 200.000 Token ist mehr als das Maximum dieses Modells von "
           "131.072 Token."),
])
def test_a_context_beyond_the_model_s_maximum_is_an_error_naming_the_maximum(
    client: TestClient, lang: str, message: str
) -> None:
    """gpt-oss reads 131,072 positions; Serve sized 200,000 with only a note, fine-tuning
    refused it."""
    for headers in (HX, {}):
        response = client.get("/serve?model=gpt-oss-20b&context=200000",
                              headers={**headers, "Accept-Language": lang})
        assert response.status_code == 422
        assert _error(response.text, "context") == message
    ok = client.get("/serve?model=gpt-oss-20b&context=131072", headers=HX)
    assert ok.status_code == 200


def _rows(body: str, kind: str) -> list[tuple[str, bool, str]]:
    rows = re.findall(rf'<tr id="{kind}-([^"]+)" class="(ok|no)[^"]*">.*?</tr>', body, re.S)
    prices = re.findall(rf'<tr id="{kind}-[^"]+".*?<td data-label="Price">([^<]*)', body, re.S)
    return [(slug, state == "ok", price) for (slug, state), price in zip(rows, prices,
                                                                         strict=True)]


def _euros(price: str) -> float:
    return float(price.replace("€", "").replace(",", "").strip() or "inf") \
        if "request" not in price else float("inf")


@pytest.mark.parametrize("kind", ["card", "system"])
def test_tables_list_what_serves_first_then_by_price(client: TestClient, kind: str) -> None:
    body = client.get(BOTH, headers=HX).text
    rows = _rows(body, kind)
    assert rows, kind
    serves = [fits for _, fits, _ in rows]
    assert serves == sorted(serves, reverse=True), "everything that serves comes first"
    assert True in serves and False in serves, "the case has both"
    for group in (True, False):
        prices = [_euros(price) for _, fits, price in rows if fits is group]
        assert prices == sorted(prices), f"{kind}s that serve={group} by price"


@pytest.mark.parametrize("lang", ["en", "de"])
def test_without_prices_the_tables_start_at_the_recommended_card(
    make_client: Callable[..., TestClient], seeded: SessionFactory, lang: str
) -> None:
    """A shop that has priced nothing (price on request everywhere): the card table starts
    at the recommended card, the smallest that serves, and goes up in memory (a fourth walk
    found it alphabetical, the recommended card third); what does not serve comes last."""
    with seeded.begin() as session:
        for table in ("gpu_sku", "system"):
            session.execute(text(f"UPDATE {table} SET price_eur_net = NULL"))
    client = make_client()
    body = client.get("/serve?model=llama-3.1-8b", headers={**HX, "Accept-Language": lang}).text
    cards = re.findall(r'<tr id="card-([^"]+)" class="(ok|no)([^"]*)">', body)
    assert cards[0][0] == "rtx-pro-4500" and "recommended" in cards[0][2]
    memory = {gpu.slug: gpu.usable_bytes for gpu in load_seed_catalog().gpus}
    serving = [memory[slug] for slug, state, _ in cards if state == "ok"]
    assert serving == sorted(serving) and len(serving) == len(cards)
    late = client.get(BOTH, headers=HX).text
    order = [state for _, state in re.findall(r'<tr id="card-([^"]+)" class="(ok|no)', late)]
    assert order == sorted(order, key=lambda state: state != "ok") and "no" in order


def test_german_serve_pages_name_systems_in_german(client: TestClient) -> None:
    body = client.get(BOTH, headers={"Accept-Language": "de"}).text
    assert "Server mit" in body
    for english in ("Server with", "Workstation with", "NVLink bridge", "clustered"):
        assert english not in body, english


def test_the_verdict_bar_comes_with_every_result(client: TestClient) -> None:
    page = client.get("/serve?model=llama-3.1-8b").text
    fragment = client.get("/serve?model=llama-3.1-8b", headers=HX).text
    for body in (page, fragment):
        bar = re.search(r'<div id="verdict-bar".*?</div>', body, re.S)
        assert bar, "the phone's verdict bar"
        assert "serves 1 user at" in bar.group(0)
        assert "/quote?item=" in bar.group(0) and "workload=serving" in bar.group(0)
    assert 'id="verdict-bar" class="verdict-bar ok" hx-swap-oob="true"' in fragment


@pytest.mark.parametrize(("lang", "card", "note"), [
    ("en", "48 GB card", "48 GiB of 2³⁰ bytes"),
    ("de", "48-GB-Karte", "48 GiB zu 2³⁰ Byte"),
])
def test_cards_are_named_as_sold_and_usable_memory_is_explained_once(
    client: TestClient, lang: str, card: str, note: str
) -> None:
    """As on the fine-tune page: a walk found each Serve row saying "151 GB usable" under a
    141 GB card and "51.3 GB usable" under a 48 GB one, unexplained, which reads as an error to a
    buyer; the rows name the card as it is sold and one note says why usable reads higher."""
    for body in (client.get(BOTH, headers={"Accept-Language": lang}).text,
                 client.get(BOTH, headers={**HX, "Accept-Language": lang}).text):
        body = body.replace("\u00a0", " ")
        row = re.search(r'<tr id="card-rtx-pro-5000-48gb".*?</th>', body, re.S)
        assert row and f"<small>{card}</small>" in row.group(0)
        tables = body[body.index('id="cards-title"'):]
        assert not [small for small in re.findall(r"<small>([^<]*)</small>", tables)
                    if "usable" in small or "nutzbar" in small]
        assert body.count('id="gib-note"') == 1 and note in body
