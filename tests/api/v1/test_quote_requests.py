"""Quote requests for a partner's customers: create, read status and priced lines, isolation."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.db.session import SessionFactory
from app.db.tables import QuoteLine, QuoteRequest
from app.quotes import desk, validity
from app.quotes import service as quotes_service
from tests.api.v1.conftest import assert_problem


def request_body(**overrides: Any) -> dict[str, Any]:
    return {
        "item_kind": "gpu", "item_slug": "rtx-pro-6000", "quantity": 2,
        "estimate": {"model": "llama-3.1-8b", "method": "lora"},
        "contact": {"name": "Ada Buyer", "company": "Example GmbH",
                    "email": "ada@example.com", "country": "AT", "vat_id": "ATU12345678"},
        "partner_reference": "ACME-4711", **overrides,
    }


def test_a_partner_creates_the_storefront_s_record_marked_as_its_own(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    response = client.post("/api/v1/quote-requests", headers=auth, json=request_body())
    assert response.status_code == 201, response.text
    created = response.json()
    assert response.headers["Location"] == f"/api/v1/quote-requests/{created['id']}"
    assert created["id"].startswith("Q-") and created["status"] == "new"
    assert created["lines"] is None and created["totals"] is None
    assert created["partner_reference"] == "ACME-4711"
    with seeded() as session:
        row = session.scalars(select(QuoteRequest)).one()
        assert row.partner_id is not None and row.quantity == 2
        assert row.sizing["result"]["engine_version"] == created["engine_version"]
        record = quotes_service.get_request(session, token=row.token)  # the /q/ page's record
        assert record.reference == created["id"]
    assert client.get(created["id"] and response.headers["Location"],
                      headers=auth).json() == created


def test_another_partner_sees_404(
    client: TestClient, auth: dict[str, str], issue_key: Callable[..., str]
) -> None:
    created = client.post("/api/v1/quote-requests", headers=auth, json=request_body()).json()
    other = {"Authorization": f"Bearer {issue_key(partner='Other Reseller')}"}
    missing = assert_problem(client.get(f"/api/v1/quote-requests/{created['id']}",
                                        headers=other), 404)
    unknown = assert_problem(client.get("/api/v1/quote-requests/Q-ZZZZZZZZ", headers=other), 404)
    assert missing["detail"].replace(created["id"], "X") == unknown["detail"].replace(
        "Q-ZZZZZZZZ", "X")


def test_a_storefront_request_is_no_partner_s(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    created = client.post("/api/v1/quote-requests", headers=auth, json=request_body()).json()
    with seeded.begin() as session:
        session.scalars(select(QuoteRequest)).one().partner_id = None
    assert_problem(client.get(f"/api/v1/quote-requests/{created['id']}", headers=auth), 404)


def _price(seeded: SessionFactory, reference: str, status: str) -> None:
    with seeded.begin() as session:
        row = session.scalars(select(QuoteRequest).where(QuoteRequest.reference == reference)
                              ).one()
        session.add_all([
            QuoteLine(quote_request_id=row.id, position=1, item_kind="gpu",
                      item_slug="rtx-pro-6000", description="RTX PRO 6000", quantity=2,
                      unit_price_eur_net=Decimal("8990.00"), discount_percent=Decimal("5")),
            QuoteLine(quote_request_id=row.id, position=2, item_kind="other", item_slug=None,
                      description="Burn-in test", quantity=1,
                      unit_price_eur_net=Decimal("99.99"), discount_percent=Decimal("0")),
        ])
        row.status = status
        if status == "sent":
            row.vat_rate_percent = Decimal("20")
            row.sent_at = datetime(2026, 12, 1, 9, tzinfo=UTC)


def test_draft_lines_stay_hidden_until_the_quote_is_sent(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    created = client.post("/api/v1/quote-requests", headers=auth, json=request_body()).json()
    _price(seeded, created["id"], "in_progress")
    shown = client.get(f"/api/v1/quote-requests/{created['id']}", headers=auth).json()
    assert shown["status"] == "in_progress" and shown["lines"] is None


def test_a_sent_quote_shows_its_lines_and_totals(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    created = client.post("/api/v1/quote-requests", headers=auth, json=request_body()).json()
    _price(seeded, created["id"], "sent")
    shown = client.get(f"/api/v1/quote-requests/{created['id']}", headers=auth).json()
    assert shown["status"] == "sent"
    assert [(line["position"], line["net_eur"]) for line in shown["lines"]] == [
        (1, "17081.00"), (2, "99.99")]
    assert shown["lines"][0]["discount_percent"] == "5.00"
    assert shown["totals"] == {"net_eur": "17180.99", "vat_rate_percent": "20.00",
                               "vat_eur": "3436.20", "gross_eur": "20617.19"}
    assert shown["sent_at"].startswith("2026-12-01T09:00:00")



def test_a_partner_sees_when_and_how_its_customer_accepted(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    created = client.post("/api/v1/quote-requests", headers=auth, json=request_body()).json()
    assert (created["accepted_at"], created["accepted_via"]) == (None, None)
    _price(seeded, created["id"], "sent")
    with seeded.begin() as session:
        token = session.scalars(select(QuoteRequest.token)).one()
        desk.accept(session, token=token)
    shown = client.get(f"/api/v1/quote-requests/{created['id']}", headers=auth).json()
    assert shown["status"] == "accepted" and shown["accepted_via"] == "link"
    accepted_at = datetime.fromisoformat(shown["accepted_at"])
    assert timedelta(0) <= datetime.now(UTC) - accepted_at < timedelta(minutes=5)
    listed = client.get("/api/v1/quote-requests", headers=auth,
                        params={"status": "accepted"}).json()
    assert [item["accepted_at"] for item in listed["items"]] == [shown["accepted_at"]]

@pytest.mark.parametrize(("change", "location"), [
    ({"contact": {"name": "A", "company": "B", "email": "not-an-email", "country": "DE"}},
     "body.contact.email"),
    ({"contact": {"name": "", "company": "B", "email": "a@b.de", "country": "DE"}},
     "body.contact.name"),
    ({"contact": {"name": "A", "company": "B", "email": "a@b.de", "country": "Germany"}},
     "body.contact.country"),
    ({"quantity": 0}, "body.quantity"),
    ({"item_kind": "cloud"}, "body.item_kind"),
    ({"estimate": {"model": "llama-3.1-8b"}}, "body.estimate.method"),
    ({"partner_reference": "x" * 101}, "body.partner_reference"),
])
def test_invalid_requests_name_the_field(client: TestClient, auth: dict[str, str],
                                         change: dict[str, Any], location: str) -> None:
    problem = assert_problem(client.post("/api/v1/quote-requests", headers=auth,
                                         json=request_body(**change)), 422)
    assert [e["location"] for e in problem["errors"]] == [location]


def test_unknown_items_are_404(client: TestClient, auth: dict[str, str]) -> None:
    assert_problem(client.post("/api/v1/quote-requests", headers=auth,
                               json=request_body(item_slug="no-such-card")), 404)
    assert_problem(client.post("/api/v1/quote-requests", headers=auth,
                               json=request_body(item_kind="system", item_slug="x")), 404)


def test_a_partner_lists_its_own_requests_newest_first_a_page_at_a_time(
    client: TestClient, auth: dict[str, str], issue_key: Callable[..., str]
) -> None:
    mine = [client.post("/api/v1/quote-requests", headers=auth,
                        json=request_body(partner_reference=f"ACME-{n}")).json()["id"]
            for n in range(5)]
    other = {"Authorization": f"Bearer {issue_key(partner='Other Reseller')}"}
    theirs = client.post("/api/v1/quote-requests", headers=other, json=request_body()).json()

    seen: list[str] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/api/v1/quote-requests", headers=auth, params=params)
        assert page.status_code == 200
        body = page.json()
        assert len(body["items"]) <= 2
        seen += [item["id"] for item in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(mine))
    assert theirs["id"] not in seen
    only_theirs = client.get("/api/v1/quote-requests", headers=other).json()
    assert [item["id"] for item in only_theirs["items"]] == [theirs["id"]]


def test_the_list_filters_by_status_and_shows_sent_lines(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    first = client.post("/api/v1/quote-requests", headers=auth, json=request_body()).json()
    client.post("/api/v1/quote-requests", headers=auth, json=request_body())
    _price(seeded, first["id"], "sent")
    sent = client.get("/api/v1/quote-requests", headers=auth, params={"status": "sent"}).json()
    assert [item["id"] for item in sent["items"]] == [first["id"]]
    assert len(sent["items"][0]["lines"]) == 2
    assert sent["items"][0]["totals"] == client.get(
        f"/api/v1/quote-requests/{first['id']}", headers=auth).json()["totals"]
    assert len(client.get("/api/v1/quote-requests", headers=auth,
                          params={"status": "new"}).json()["items"]) == 1


@pytest.mark.parametrize("params, location", [
    ({"status": "lost"}, "query.status"),
    ({"limit": 0}, "query.limit"),
    ({"limit": 101}, "query.limit"),
    ({"cursor": "not base64!"}, "query.cursor"),
    ({"cursor": "YWJj"}, "query.cursor"),  # "abc": not a position
    ({"cursor": "wrI"}, "query.cursor"),  # "²": a digit to str.isdigit, not to int()
])
def test_bad_list_parameters_name_the_parameter(
    client: TestClient, auth: dict[str, str], params: dict[str, Any], location: str
) -> None:
    problem = assert_problem(client.get("/api/v1/quote-requests", headers=auth,
                                        params=params), 422)
    assert location in {error["location"] for error in problem["errors"]}


def test_a_sent_quote_past_its_validity_reads_expired(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    created = client.post("/api/v1/quote-requests", headers=auth, json=request_body()).json()
    _price(seeded, created["id"], "sent")
    with seeded.begin() as session:
        session.scalars(select(QuoteRequest)).one().valid_until = (
            validity.today() - timedelta(days=1))
    shown = client.get(f"/api/v1/quote-requests/{created['id']}", headers=auth).json()
    assert shown["status"] == "expired" and shown["lines"] is not None
    listed = client.get("/api/v1/quote-requests", headers=auth,
                        params={"status": "expired"}).json()
    assert [item["id"] for item in listed["items"]] == [created["id"]]
    assert client.get("/api/v1/quote-requests", headers=auth,
                      params={"status": "sent"}).json()["items"] == []
