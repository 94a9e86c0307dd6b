"""The customer accepts a sent quote on /q/ (issue 18, point 14): confirmed with a box,
recorded as the quote's status, audited and visible on the desk; the page names the contact
and the seller from settings."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import select

from app.db.session import SessionFactory
from app.db.tables import AuditLog, QuoteRequest
from tests.staff.conftest import SALES, request_quote
from tests.staff.test_quotes import _open, _reference, add_card_line

SELLER = {
    "seller_company": "GPU Handel GmbH", "seller_address": "Hauptstraße 1, 10115 Berlin",
    "seller_register": "Amtsgericht Berlin HRB 12345", "seller_vat_id": "DE123456789",
    "seller_terms_url": "https://shop.example/agb",
    "seller_imprint_url": "https://shop.example/impressum",
    "contact_name": "Max Vertrieb", "contact_email": "max@shop.example",
    "contact_phone": "+49 30 1234567",
}


def _sent_quote(client: TestClient, token: str, users: SessionFactory) -> str:
    """A storefront request priced and sent by the desk; returns its /q/ path."""
    path = request_quote(client)
    reference = _reference(users)
    add_card_line(client, token, reference)
    _, version = _open(client, reference)
    assert client.post(f"/staff/quotes/{reference}/send", data={
        "csrf_token": token, "version": version, "confirm": "1"}).status_code == 303
    return path


def test_the_customer_accepts_with_confirmation_and_the_desk_sees_it(
    make_client: Callable[..., TestClient], users: SessionFactory,
    staff_client: Callable[..., tuple[TestClient, str]],
) -> None:
    client, token = staff_client(SALES)
    path = _sent_quote(client, token, users)
    customer = make_client(**SELLER)
    customer.headers["Accept-Language"] = "en"
    page = customer.get(path).text
    assert 'id="accept"' in page and 'name="confirm" type="checkbox" value="1" required' in page
    for value in ("GPU Handel GmbH", "Amtsgericht Berlin HRB 12345", "DE123456789",
                  'href="https://shop.example/agb"', 'href="https://shop.example/impressum"',
                  "Max Vertrieb", 'href="mailto:max@shop.example"', "+49 30 1234567"):
        assert value in page, value
    refused = customer.post(f"{path}/accept", data={})
    assert refused.status_code == 422 and "Tick the box to accept the quote." in refused.text
    accepted = customer.post(f"{path}/accept", data={"confirm": "1"})
    assert accepted.status_code == 303
    assert 'id="accepted-note"' in customer.get(path).text
    with users() as session:
        row = session.scalars(select(QuoteRequest)).one()
        assert row.status == "accepted"
        entry = session.scalars(select(AuditLog).order_by(AuditLog.id.desc())).first()
        assert entry is not None and entry.action == "accept"
        assert entry.actor == "customer (/q/ page)" and entry.staff_user_id is None
    desk = client.get("/staff/quotes").text
    assert 'data-status="accepted"' in desk
    assert customer.post(f"{path}/accept", data={"confirm": "1"}).status_code == 303


def test_an_unsent_quote_cannot_be_accepted(
    make_client: Callable[..., TestClient], users: SessionFactory,
) -> None:
    customer = make_client()
    path = request_quote(customer)
    assert 'id="accept"' not in customer.get(path).text
    assert customer.post(f"{path}/accept", data={"confirm": "1"}).status_code == 404
