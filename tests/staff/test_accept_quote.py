"""The customer accepts a sent quote on /q/ (issue 18, point 14): confirmed with a box,
recorded as the quote's status with when and how (``accepted_at``, ``accepted_via``), audited
and visible on the desk and its print view; a double click records one acceptance, an expired
offer is refused on its page, and an accepted quote stays accepted. The page names the contact
and the seller from settings."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.db.session import SessionFactory
from app.db.tables import AuditLog, QuoteRequest
from app.quotes import desk, validity
from tests.staff.conftest import SALES, hidden, request_quote
from tests.staff.test_quotes import _open, _reference, add_card_line

SELLER = {
    "seller_company": "GPU Handel GmbH", "seller_address": "Hauptstraße 1, 10115 Berlin",
    "seller_register": "Amtsgericht Berlin HRB 12345", "seller_vat_id": "DE123456789",
    "seller_terms_url": "https://shop.example/agb",
    "seller_imprint_url": "https://shop.example/impressum",
    "contact_name": "Max Vertrieb", "contact_email": "max@shop.example",
    "contact_phone": "+49 30 1234567",
}


def accept_form(customer: TestClient, path: str) -> dict[str, str]:
    """The /q/ page's accept form, ticked: the box and the page's token (issue 24)."""
    return {"confirm": "1", "accept_token": hidden(customer.get(path).text, "accept_token")}


@dataclass(frozen=True)
class Sent:
    """A storefront request priced and sent by the desk: the signed-in sales client, its
    CSRF token and the customer's /q/ path."""

    desk: TestClient
    csrf: str
    path: str


@pytest.fixture
def sent(users: SessionFactory, staff_client: Callable[..., tuple[TestClient, str]]) -> Sent:
    client, token = staff_client(SALES)
    path = request_quote(client)
    reference = _reference(users)
    add_card_line(client, token, reference)
    _, version = _open(client, reference)
    assert client.post(f"/staff/quotes/{reference}/send", data={
        "csrf_token": token, "version": version, "confirm": "1"}).status_code == 303
    return Sent(client, token, path)


def test_the_customer_accepts_with_confirmation_and_the_desk_sees_it(
    make_client: Callable[..., TestClient], users: SessionFactory,
    sent: Sent,
) -> None:
    client, path = sent.desk, sent.path
    customer = make_client(**SELLER)
    customer.headers["Accept-Language"] = "en"
    page = customer.get(path).text
    assert 'id="accept"' in page and 'name="confirm" type="checkbox" value="1" required' in page
    for value in ("GPU Handel GmbH", "Amtsgericht Berlin HRB 12345", "DE123456789",
                  'href="https://shop.example/agb"', 'href="https://shop.example/impressum"',
                  "Max Vertrieb", 'href="mailto:max@shop.example"', "+49 30 1234567"):
        assert value in page, value
    form = accept_form(customer, path)
    refused = customer.post(f"{path}/accept", data={**form, "confirm": ""})
    assert refused.status_code == 422 and "Tick the box to accept the quote." in refused.text
    accepted = customer.post(f"{path}/accept", data=form)
    assert accepted.status_code == 303
    page = customer.get(path).text
    assert 'id="accepted-note"' in page and "on this quote's page." in page
    with users() as session:
        row = session.scalars(select(QuoteRequest)).one()
        assert row.status == "accepted" and row.accepted_via == "link"
        assert row.accepted_at is not None and row.sent_at is not None
        assert row.accepted_at >= row.sent_at
        entry = session.scalars(select(AuditLog).order_by(AuditLog.id.desc())).first()
        assert entry is not None and entry.action == "accept"
        assert entry.actor == "customer (/q/ page)" and entry.staff_user_id is None
        assert entry.before and entry.after and entry.before["status"] == "sent"
        assert entry.after["accepted_at"] == row.accepted_at.isoformat()
        assert entry.after["lines"] == entry.before["lines"] != []  # the quote as sent
        reference = row.reference
    desk = client.get("/staff/quotes").text
    assert 'data-status="accepted"' in desk
    for staff_page in (f"/staff/quotes/{reference}", f"/staff/quotes/{reference}/print"):
        assert 'id="acceptance"' in client.get(staff_page).text, staff_page
    assert customer.post(f"{path}/accept", data=form).status_code == 303
    with users() as session:  # a second click changes nothing and records nothing
        accepts = select(AuditLog.id).where(AuditLog.action == "accept")
        assert session.scalars(accepts).all() == [entry.id]


def test_an_unsent_quote_cannot_be_accepted(
    make_client: Callable[..., TestClient], users: SessionFactory,
) -> None:
    customer = make_client()
    path = request_quote(customer)
    assert 'id="accept"' not in customer.get(path).text
    assert customer.post(f"{path}/accept", data={"confirm": "1"}).status_code == 404


def _token(path: str) -> str:
    return path.rsplit("/", 1)[1]


def test_two_clicks_at_once_record_one_acceptance(users: SessionFactory, sent: Sent) -> None:
    """A double click sends two requests that meet in the database: the second waits for the
    first's lock, then finds the quote accepted and answers alike; one acceptance, one audit
    entry (before, the loser's stale write was a 409 "changed by someone else")."""
    quote = _token(sent.path)
    first = users()
    assert desk.accept(first, token=quote)  # holds the row until it commits
    second: list[str | BaseException] = []

    def click_again() -> None:
        with users() as session:
            try:
                second.append(desk.accept(session, token=quote))
                session.commit()
            except BaseException as exc:  # reported below, in the test's thread
                second.append(exc)

    thread = threading.Thread(target=click_again)
    thread.start()
    thread.join(0.5)
    assert thread.is_alive(), f"the second click did not wait for the first: {second}"
    first.commit()
    first.close()
    thread.join(10)
    with users() as session:
        reference = session.scalars(select(QuoteRequest.reference)).one()
        assert second == [reference]
        entries = session.scalars(select(AuditLog).where(AuditLog.action == "accept")).all()
        assert len(entries) == 1


def test_an_expired_offer_is_refused_on_its_page_and_nothing_is_recorded(
    make_client: Callable[..., TestClient], users: SessionFactory,
    sent: Sent,
) -> None:
    path = sent.path
    with users.begin() as session:
        row = session.scalars(select(QuoteRequest)).one()
        row.valid_until = validity.today() - timedelta(days=1)
    customer = make_client()
    customer.headers["Accept-Language"] = "de"
    refused = customer.post(f"{path}/accept", data={"confirm": "1"})  # the form is gone
    assert refused.status_code == 409
    assert 'id="accept-error"' in refused.text
    assert "Dieses Angebot ist abgelaufen und lässt sich hier nicht mehr annehmen" in refused.text
    assert 'id="accept"' not in refused.text
    with users() as session:
        row = session.scalars(select(QuoteRequest)).one()
        assert row.status == "sent" and row.accepted_at is None
        assert session.scalars(select(AuditLog).where(AuditLog.action == "accept")).all() == []


def test_an_accepted_quote_stays_accepted_on_the_desk(
    make_client: Callable[..., TestClient], users: SessionFactory,
    sent: Sent,
) -> None:
    """The customer's acceptance is an order: staff cannot turn it back into sent or expired
    (the desk offers only "accepted" and the service refuses the rest)."""
    client, token, path = sent.desk, sent.csrf, sent.path
    customer = make_client()
    assert customer.post(f"{path}/accept",
                         data=accept_form(customer, path)).status_code == 303
    reference = _reference(users)
    page, version = _open(client, reference)
    assert '<option value="expired"' not in page and '<option value="sent"' not in page
    refused = client.post(f"/staff/quotes/{reference}", data={
        "csrf_token": token, "version": version, "status": "expired"})
    assert refused.status_code == 422
    assert "an accepted quote is an order; it stays accepted" in refused.text
    with users() as session:
        row = session.scalars(select(QuoteRequest)).one()
        assert row.status == "accepted" and row.accepted_via == "link"
