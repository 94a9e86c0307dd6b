"""The catalogue's config.json entries against the staff model import (/staff/models/import),
pasted and uploaded, previewed and saved, and against the import service itself: a 422 with
the message beside the config field, never a 5xx, and no card (nor any other row) stored.
SQLite and PostgreSQL: PostgreSQL's jsonb refuses NaN and lone surrogates that SQLite would
store, and a stored one made every later read of the card a 500.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx2 import Response  # what starlette's TestClient returns

from app.accounts import staff as staff_accounts
from app.catalog import editing
from app.errors import InvalidInput
from tests.security.catalogue import CALCULATOR, LLAMA, SCRIPT, BadInput, llama
from tests.security.conftest import RowCounts, Shop
from tests.security.test_bad_inputs_page import inline_error
from tests.staff.conftest import sign_in

STAFF = ("importer@shop.example", "importer-password-123")
CARD = {"slug": "catalogue-card", "hf_id": "catalogue/card", "family": "Llama",
        "license": "apache-2.0"}
CONFIG_ENTRIES = [entry for entry in CALCULATOR if entry.field == "config"]


@pytest.fixture(scope="module")
def staff(shop: Shop) -> Iterator[tuple[TestClient, str]]:
    """A signed-in staff client on the catalogue's shop, and its CSRF token."""
    with shop.sessions.begin() as session:
        staff_accounts.create_user(session, email=STAFF[0], display_name="Importer",
                                   password=STAFF[1], role="sales")
    with TestClient(shop.client.app, follow_redirects=False,
                    raise_server_exceptions=False) as client:
        client.headers["Accept-Language"] = "en"
        yield client, sign_in(client, STAFF)


def _import(staff: tuple[TestClient, str], text: str, *, action: str, upload: bool) -> Response:
    client, token = staff
    fields = {**CARD, "csrf_token": token, "action": action}
    if upload:
        document = ("config.json", text.encode("utf-8", "surrogatepass"), "application/json")
        return client.post("/staff/models/import", data=fields,
                           files={"config_file": document})
    return client.post("/staff/models/import", data={**fields, "config": text})


@pytest.mark.parametrize("upload", [False, True], ids=["pasted", "uploaded"])
@pytest.mark.parametrize("action", ["preview", "save"])
@pytest.mark.parametrize("entry", CONFIG_ENTRIES, ids=lambda e: e.id)
def test_the_model_import_refuses_it_beside_the_config_and_stores_nothing(
    shop: Shop, staff: tuple[TestClient, str], row_counts: Callable[[], RowCounts],
    entry: BadInput, action: str, upload: bool,
) -> None:
    before = row_counts()

    response = _import(staff, entry.as_text, action=action, upload=upload)

    assert response.status_code == 422, (response.status_code, response.text[:500])
    assert inline_error(response.text, "config"), response.text[:2000]
    assert SCRIPT not in response.text
    assert row_counts() == before


def test_the_baseline_import_is_valid(
    shop: Shop, staff: tuple[TestClient, str], row_counts: Callable[[], RowCounts]
) -> None:
    """The catalogue's imports differ from this one in the config only; saved, it reads back
    on the partner API."""
    before = row_counts()
    saved = _import(staff, llama(), action="save", upload=False)
    assert saved.status_code == 303, saved.text[:500]
    assert row_counts()["model_card"] == before["model_card"] + 1
    card = shop.client.get(f"/api/v1/models/{CARD['slug']}", headers=shop.auth)
    assert card.status_code == 200, card.text[:300]


@pytest.mark.parametrize("config", [
    {**LLAMA, "rope_theta": math.nan},
    {**LLAMA, "rope_scaling": {"factor": math.inf}},
    {**LLAMA, "note": 10**5000},
    {**LLAMA, "note": "\ud800"},
    {**LLAMA, "\udc80": 1},
    {**LLAMA, "nested": json.loads("[" * 40 + "]" * 40)},
], ids=["nan", "nested-infinity", "5000-digits", "lone-surrogate", "surrogate-key", "depth-40"])
def test_the_import_service_refuses_what_no_database_or_response_can_hold(
    config: dict[str, Any]
) -> None:
    """The last stop before the database holds the document to the same bounds, whoever
    calls it (the form reads the text first; this is the service's own check, in the preview
    that ``editing.import_model`` runs before it adds the row)."""
    with pytest.raises(InvalidInput, match=r"^config: "):
        editing.preview_model(config=config)
