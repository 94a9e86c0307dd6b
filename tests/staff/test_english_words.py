"""The English desk says its statuses in words (issue 30, point 6): the walk found the raw
status "in_progress" on the English desk (German reads "in Bearbeitung"), and the stock
vocabulary the same way in the catalog list."""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi.testclient import TestClient

from app.db.session import SessionFactory
from tests.staff.conftest import SALES, request_quote
from tests.staff.test_quotes import _reference

StaffClient = Callable[..., tuple[TestClient, str]]


def _shown(page: str) -> set[str]:
    """What the page shows a person: option labels and cell texts, not attribute values."""
    return set(re.findall(r">([^<>]+)<", page))


def test_the_english_desk_names_statuses_in_words(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, _ = staff_client(SALES)
    request_quote(client)
    reference = _reference(users)
    for page in (client.get("/staff/quotes").text, client.get(f"/staff/quotes/{reference}").text):
        shown = _shown(page)
        assert "in progress" in shown
        assert not {"in_progress", "in_stock", "on_order", "on_request"} & shown


def test_the_english_catalog_list_names_stock_in_words(staff_client: StaffClient) -> None:
    client, _ = staff_client(SALES)
    page = client.get("/staff/catalog/gpus").text
    assert not {"in_stock", "on_order", "on_request"} & _shown(page)
