"""The quote form and the customer's /q/ page name a system as the result did (a fresh walk of
issue 30): the result calls srv-4x-h200-nvl "Server with 4× NVIDIA H200 NVL and NVLink" ("Server
mit 4× NVIDIA H200 NVL und NVLink" on German pages), and the quote form and /q/ showed the
catalog's "Server with 4x H200 NVL (4-way NVLink bridge)" instead, in English on German pages
too. The stored request keeps the catalog's name, which the desk shows."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text

from app.catalog import revision
from app.db.session import SessionFactory
from app.db.tables import QuoteRequest

CATALOG_NAME = "Server with 4x H200 NVL (4-way NVLink bridge)"
NAMES = {"en": "Server with 4× NVIDIA H200 NVL and NVLink",
         "de": "Server mit 4× NVIDIA H200 NVL und NVLink"}
FORMS = {
    "training": "/quote?item=system:srv-4x-h200-nvl&model=llama-3.3-70b&method=lora",
    "serving": "/quote?item=system:srv-4x-h200-nvl&workload=serving&model=llama-3.3-70b"
               "&users=64",
}
CONTACT = {"name": "Ada Lovelace", "company": "Analytical Engines GmbH",
           "email": "ada@example.com", "country": "DE", "quantity": "1"}


def _hidden(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html))


@pytest.mark.parametrize("workload", ["training", "serving"])
def test_the_form_and_the_customer_s_page_name_the_system_as_the_result_did(
    lang_client: TestClient, seeded: SessionFactory, lang: str, workload: str,
) -> None:
    client = lang_client
    sizing = client.get(FORMS[workload].replace("/quote?item=system:srv-4x-h200-nvl&", "/?")
                        .replace("/?workload=serving&", "/serve?")).text
    assert NAMES[lang] in sizing  # what the result calls it
    form = client.get(FORMS[workload]).text
    assert f"<strong>{NAMES[lang]}</strong>" in form and CATALOG_NAME not in form
    response = client.post("/quote", data={**_hidden(form), **CONTACT})
    page = client.get(response.headers["location"]).text
    assert NAMES[lang] in page and CATALOG_NAME not in page
    with seeded() as session:
        assert session.scalars(select(QuoteRequest.item_name)).one() == CATALOG_NAME


def test_a_renamed_item_keeps_the_name_the_request_stored(
    make_client: Callable[..., TestClient], seeded: SessionFactory,
) -> None:
    """Once staff rename the system, /q/ shows the name the customer asked for, not the new
    one: what the customer saw is never rewritten by a later catalog change."""
    client = make_client()
    client.headers["Accept-Language"] = "de"
    form = client.get(FORMS["training"]).text
    target = client.post("/quote", data={**_hidden(form), **CONTACT}).headers["location"]
    with seeded.begin() as session:
        session.execute(text("UPDATE system SET name = 'Renamed' WHERE slug = 'srv-4x-h200-nvl'"))
        revision.bump(session)
    page = make_client().get(target, headers={"Accept-Language": "de"}).text
    assert CATALOG_NAME in page and NAMES["de"] not in page and "Renamed" not in page
