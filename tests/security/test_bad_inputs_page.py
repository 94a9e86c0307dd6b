"""The bad-input catalogue against the storefront: the calculator (as a page and as the htmx
fragment) and the quote request form. Every entry is a 4xx with the message beside its field
(or the error page when the form cannot be shown at all), markup is escaped wherever it is
echoed, and no table gains or loses a row. SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from urllib.parse import urlencode

import pytest
from httpx2 import Response  # what starlette's TestClient returns

from tests.security.catalogue import (
    BODIES,
    CALCULATOR,
    FIELDS,
    QUOTE,
    READS,
    SCRIPT,
    BadBody,
    BadInput,
    BadRead,
)
from tests.security.conftest import RowCounts, Shop

HX = {"HX-Request": "true"}
FORM = "application/x-www-form-urlencoded"
LONGEST_URL_QUERY = 4000
"""Configs longer than this go in a POST body, as the page's own form sends them."""

VALID_CONTACT = {"item": "gpu:rtx-pro-6000", "name": "Ada Buyer", "company": "Example GmbH",
                 "email": "ada@example.com", "country": "DE", "quantity": "1"}


def _encode(fields: Mapping[str, str]) -> str:
    """A query string or form body; lone surrogates go out as the bytes a broken client
    would send (invalid UTF-8), which the server must take as well."""
    return urlencode(fields, encoding="utf-8", errors="surrogatepass")


def calculator_fields(entry: BadInput) -> dict[str, str]:
    """A valid calculator job with the entry's field (and its context) set."""
    fields = {"model": "llama-3.1-8b", "method": "lora"}
    for name, value in entry.context.items():
        fields[str(FIELDS[name].page)] = value
    if entry.field == "config":
        fields.update(model="custom", config=entry.on_page)
    else:
        fields[str(FIELDS[entry.field].page)] = entry.on_page
    return fields


def inline_error(html: str, name: str) -> str:
    """The message the page shows beside field ``name`` ('' when none)."""
    match = re.search(rf'<span id="err-{name}" class="field-error"[^>]*>([^<]*)</span>', html)
    return match.group(1).strip() if match else ""


def assert_escaped(response: Response) -> None:
    assert SCRIPT not in response.text
    assert "<script>" not in response.text


def assert_refused(response: Response) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith("text/html")


def _page_entries(entries: tuple[BadInput, ...]) -> list[BadInput]:
    return [entry for entry in entries if entry.applies_to("page")]


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
@pytest.mark.parametrize("entry", _page_entries(CALCULATOR), ids=lambda e: e.id)
def test_the_calculator_refuses_it_beside_the_field(
    shop: Shop, row_counts: Callable[[], RowCounts], entry: BadInput, htmx: bool
) -> None:
    before = row_counts()
    query = _encode(calculator_fields(entry))
    headers = {"Accept-Language": "en", **(HX if htmx else {})}
    if len(query) <= LONGEST_URL_QUERY:
        response = shop.client.get(f"/?{query}", headers=headers)
    else:
        response = shop.client.post("/", content=query.encode("ascii"),
                                    headers={**headers, "Content-Type": FORM})

    assert_refused(response)
    assert inline_error(response.text, str(FIELDS[entry.field].page)), response.text[:2000]
    assert_escaped(response)
    assert row_counts() == before


@pytest.mark.parametrize("entry", _page_entries(QUOTE), ids=lambda e: e.id)
def test_the_quote_form_refuses_bad_contact_details_and_stores_nothing(
    shop: Shop, row_counts: Callable[[], RowCounts], entry: BadInput
) -> None:
    before = row_counts()
    fields = {"model": "llama-3.1-8b", "method": "lora", **VALID_CONTACT,
              str(FIELDS[entry.field].page): entry.on_page}
    response = shop.client.post("/quote", content=_encode(fields).encode("ascii"),
                                headers={"Content-Type": FORM, "Accept-Language": "en"})

    assert_refused(response)
    if entry.field.startswith("item"):  # no such item: there is no form to show
        assert response.status_code == 404
        assert 'class="error-page" role="alert"' in response.text
    else:
        assert response.status_code == 422
        assert inline_error(response.text, str(FIELDS[entry.field].page)), response.text[:2000]
    assert_escaped(response)
    assert row_counts() == before


@pytest.mark.parametrize("entry", _page_entries(CALCULATOR), ids=lambda e: e.id)
def test_the_quote_form_refuses_a_bad_job_and_stores_nothing(
    shop: Shop, row_counts: Callable[[], RowCounts], entry: BadInput
) -> None:
    before = row_counts()
    fields = {**calculator_fields(entry), **VALID_CONTACT}
    response = shop.client.post("/quote", content=_encode(fields).encode("ascii"),
                                headers={"Content-Type": FORM, "Accept-Language": "en"})

    assert_refused(response)
    assert 'class="error-page" role="alert"' in response.text
    assert_escaped(response)
    assert row_counts() == before


@pytest.mark.parametrize("body", BODIES, ids=lambda b: b.id)
def test_the_quote_form_refuses_a_body_it_cannot_read(
    shop: Shop, row_counts: Callable[[], RowCounts], body: BadBody
) -> None:
    before = row_counts()
    headers = {"Content-Type": body.content_type} if body.content_type else {}
    response = shop.client.post("/quote", content=body.content, headers=headers)

    assert_refused(response)
    assert row_counts() == before


@pytest.mark.parametrize("read", [r for r in READS if r.page], ids=lambda r: r.id)
def test_a_bad_quote_page_address_is_the_404_page(
    shop: Shop, row_counts: Callable[[], RowCounts], read: BadRead
) -> None:
    before = row_counts()
    response = shop.client.get(str(read.page), headers={"Accept": "text/html"})

    assert response.status_code == read.page_status
    assert 'class="error-page" role="alert"' in response.text
    assert_escaped(response)
    assert row_counts() == before


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
def test_a_search_text_is_escaped_where_it_is_echoed(shop: Shop, htmx: bool) -> None:
    response = shop.client.get("/models", params={"q": SCRIPT}, headers=HX if htmx else {})

    assert response.status_code < 500
    assert_escaped(response)
