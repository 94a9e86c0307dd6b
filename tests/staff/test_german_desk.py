"""The staff desk in German has no English and shows dates and amounts the German way
(issue 18, point 8)."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape
from sqlalchemy import select

from app.catalog.seed import load_seed_catalog
from app.db.session import SessionFactory
from app.db.tables import GpuSku
from tests.english_words import english
from tests.staff.conftest import ADMIN, request_quote, sign_in
from tests.staff.test_catalog import _form_values

CATALOG_DATA = tuple(
    {text for gpu in load_seed_catalog().gpus for text in (gpu.name, gpu.usable_basis,
                                                             gpu.form_factor, gpu.interconnect)}
    | {text for system in load_seed_catalog().systems
       for text in (system.name, system.gpu_interconnect)}
    # a seed price's source, as the page escapes it (issue 27: shown beside the price)
    | {str(escape(gpu.price_source)) for gpu in load_seed_catalog().gpus if gpu.price_source}
    | {str(escape(system.price_source)) for system in load_seed_catalog().systems
       if system.price_source}
)
"""What staff typed into the catalog is data in their words, not the desk's language."""

GERMAN = {"Accept-Language": "de"}


@pytest.fixture
def desk(make_client: Callable[..., TestClient], users: object) -> tuple[TestClient, str]:
    browser = make_client()
    browser.headers.update(GERMAN)
    request_quote(browser)
    return browser, sign_in(browser, ADMIN)


def reference(browser: TestClient) -> str:
    match = re.search(r'href="/staff/quotes/(Q-[A-Z0-9-]+)"', browser.get("/staff/quotes").text)
    assert match
    return match.group(1)


@pytest.mark.parametrize("path", [
    "/staff/quotes", "/staff/quotes/{ref}", "/staff/quotes/{ref}/print", "/staff/catalog/gpus",
    "/staff/catalog/gpus/rtx-pro-6000", "/staff/catalog/systems", "/staff/audit",
    "/staff/api-keys", "/staff/models/import",
])
def test_desk_pages_in_german_have_no_english(desk: tuple[TestClient, str], path: str) -> None:
    browser, _ = desk
    page = browser.get(path.format(ref=reference(browser)))
    assert page.status_code == 200, path
    text = page.text
    for data in sorted(CATALOG_DATA, key=len, reverse=True):
        text = text.replace(data, " ")
    assert english(text) == [], path


def test_dates_on_the_desk_are_german(desk: tuple[TestClient, str]) -> None:
    browser, _ = desk
    body = browser.get("/staff/quotes").text
    assert re.search(r"<td>\d{2}\.\d{2}\.\d{4}, \d{2}:\d{2}</td>", body)
    assert not re.search(r"\d{4}-\d{2}-\d{2}", body.split("<main", 1)[1])


def test_a_german_price_reads_and_shows_the_german_way_and_the_audit_log_names_the_field(
    desk: tuple[TestClient, str], users: SessionFactory,
) -> None:
    """Issue 18, points 8 and 15: "8.499" is 8,499 EUR; the field shows "8.499,00"; the audit
    log says which field changed from what to what, in German."""
    browser, _ = desk
    form = _form_values(browser.get("/staff/catalog/gpus/rtx-pro-6000").text)
    saved = browser.post("/staff/catalog/gpus/rtx-pro-6000",
                         data={**form, "price_eur_net": "8.499"})
    assert saved.status_code == 303, saved.text
    with users() as session:
        assert session.scalars(select(GpuSku.price_eur_net)
                               .where(GpuSku.slug == "rtx-pro-6000")).one() == Decimal("8499")
    edit = browser.get("/staff/catalog/gpus/rtx-pro-6000").text
    assert 'name="price_eur_net" inputmode="decimal" value="8.499,00"' in edit
    audit = browser.get("/staff/audit").text
    assert "GPU rtx-pro-6000: geändert" in audit
    row = re.search(r"<code>price_eur_net</code></td><td class=\"before\">([^<]*)</td>"
                    r"<td class=\"after\">([^<]*)</td>", audit)
    assert row and row.groups() == ("7379.17", "8499.00")  # from the seed's list price
    assert "<pre>" not in audit
    for data in sorted(CATALOG_DATA, key=len, reverse=True):  # the seed price's source
        audit = audit.replace(data, " ")
    assert english(audit) == []
    assert '<option value="api_key">API-Schlüssel</option>' in audit
