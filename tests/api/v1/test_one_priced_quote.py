"""One quote, one price: the staff desk, the customer's ``/q/`` page and the partner API show
the same lines and totals for the same sent quote, on SQLite and PostgreSQL, because all three
read it through one repository and price it in one view (``app.quotes.view``, issue 14,
point 3). Before, the partner API summed sent quotes with its own code and line shape."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select

from app.accounts.audit import Actor
from app.db.session import SessionFactory
from app.db.tables import QuoteLine, QuoteRequest
from app.quotes import desk
from app.quotes.pricing import VatPolicy

STAFF = Actor(user_id=None, name="tests")
HOME = VatPolicy(home_country="DE", rates={"DE": Decimal("19"), "AT": Decimal("20")})
BODY: dict[str, Any] = {
    "item_kind": "gpu", "item_slug": "rtx-pro-6000", "quantity": 3,
    "estimate": {"model": "llama-3.1-8b", "method": "lora"},
    "contact": {"name": "Ada Buyer", "company": "Beispiel GmbH", "email": "ada@example.com",
                "country": "DE"},
}
# Lines whose rounding differs between "round each line" and "round the sum": the view rounds
# each line to cents, sums, then takes VAT on the sum (app.quotes.pricing).
LINES = [  # description, quantity, unit price, discount %
    ("Card", 3, Decimal("8990.99"), Decimal("7.5")),
    ("Installation", 1, Decimal("333.33"), Decimal("12.5")),
    ("Cable", 7, Decimal("0.15"), Decimal("33.33")),
]
# 3 x 8990.99 x 0.925 = 24950.00 (24949.997...); 333.33 x 0.875 = 291.66 (291.66375);
# 7 x 0.15 x 0.6667 = 0.70 (0.700035); net 25242.36, VAT 19 % 4796.05 (4796.0484), gross 30038.41
EXPECTED = (Decimal("25242.36"), Decimal("19.00"), Decimal("4796.05"), Decimal("30038.41"))
AMOUNT = re.compile(r'id="total-(net|vat|gross)">([^<]+)<')


def _sent_quote(client: TestClient, auth: dict[str, str], seeded: SessionFactory) -> tuple[
    str, str
]:
    """A partner's request, priced and sent through the desk; (reference, customer token)."""
    reference = client.post("/api/v1/quote-requests", headers=auth, json=BODY).json()["id"]
    with seeded.begin() as session:
        row = session.scalars(select(QuoteRequest).where(QuoteRequest.reference == reference)
                              ).one()
        session.add_all(
            QuoteLine(quote_request_id=row.id, position=n, item_kind="other", item_slug=None,
                      description=text, quantity=quantity, unit_price_eur_net=price,
                      discount_percent=discount)
            for n, (text, quantity, price, discount) in enumerate(LINES, start=1))
        token = row.token
    with seeded.begin() as session:
        version = desk.get_quote(session, reference=reference, vat=HOME).version
        desk.send(session, actor=STAFF, reference=reference, version=version, vat=HOME)
    return reference, token


def _cents(shown: str) -> Decimal:
    """An amount as a page prints it, in either language ("€30,038.41", "30.038,41 €")."""
    return Decimal(re.sub(r"\D", "", shown)) / 100


def test_desk_page_and_api_show_the_same_totals_for_a_sent_quote(
    api: Callable[..., TestClient], auth: dict[str, str], seeded: SessionFactory
) -> None:
    client = api(vat_rates="DE=19,AT=20", vat_home_country="DE")
    reference, token = _sent_quote(client, auth, seeded)

    with seeded() as session:
        quote = desk.get_quote(session, reference=reference, vat=HOME)
    on_desk = (quote.totals.net, quote.totals.vat_rate_percent, quote.totals.vat,
               quote.totals.gross)

    page = client.get(f"/q/{token}")
    assert page.status_code == 200 and 'id="priced-quote"' in page.text
    shown = {name: _cents(amount) for name, amount in AMOUNT.findall(page.text)}
    on_page = (shown["net"], quote.totals.vat_rate_percent, shown["vat"], shown["gross"])

    single = client.get(f"/api/v1/quote-requests/{reference}", headers=auth).json()
    listed = client.get("/api/v1/quote-requests", headers=auth).json()["items"]
    assert [item["totals"] for item in listed if item["id"] == reference] == [single["totals"]]
    totals = single["totals"]
    on_api = tuple(Decimal(totals[key])
                   for key in ("net_eur", "vat_rate_percent", "vat_eur", "gross_eur"))

    assert on_desk == on_page == on_api == EXPECTED
    assert [line["net_eur"] for line in single["lines"]] == [
        str(line.net_eur) for line in quote.lines] == ["24950.00", "291.66", "0.70"]


def test_a_sent_quote_keeps_its_frozen_rate_everywhere_when_the_rates_change(
    api: Callable[..., TestClient], auth: dict[str, str], seeded: SessionFactory
) -> None:
    """Sent at 19 %; the shop's rate for Germany then changes: the desk, the page and the API
    all still show the quote as sent (the rate frozen in it), none of them the new rate."""
    sent_with = api(vat_rates="DE=19,AT=20")
    reference, token = _sent_quote(sent_with, auth, seeded)
    client = api(vat_rates="DE=16,AT=20")
    later = VatPolicy(home_country="DE", rates={"DE": Decimal("16")})
    with seeded() as session:
        assert desk.get_quote(session, reference=reference, vat=later).totals.gross == EXPECTED[3]
    page = client.get(f"/q/{token}").text
    assert _cents(dict(AMOUNT.findall(page))["gross"]) == EXPECTED[3]
    api_totals = client.get(f"/api/v1/quote-requests/{reference}", headers=auth).json()["totals"]
    assert (api_totals["vat_rate_percent"], api_totals["gross_eur"]) == ("19.00", "30038.41")
