"""The priced quote, one shape for the staff desk, the customer's ``/q/`` page and the partner
API: its lines, the VAT decision and the totals are computed here and nowhere else, so the
three can never disagree on what a quote costs. Pure: the rows come
loaded from :mod:`app.quotes.repository`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from app.db.tables import QuoteLine, QuoteRequest
from app.quotes import pricing, validity
from app.quotes.pricing import Totals, VatDecision, VatPolicy
from app.quotes.repository import to_record
from app.quotes.schemas import QuoteRequestRecord


@dataclass(frozen=True, slots=True)
class LineRecord:
    """One priced line: the prices copied in when staff added it, and its net amount."""

    id: int
    position: int
    item_kind: str
    item_slug: str | None
    description: str
    quantity: int
    unit_price_eur_net: Decimal
    discount_percent: Decimal
    net_eur: Decimal


@dataclass(frozen=True, slots=True)
class Quote:
    """A request with its desk state, lines and totals. ``status`` is the effective one (a
    sent quote past its validity reads as expired)."""

    request: QuoteRequestRecord
    status: str
    version: int
    updated_at: datetime
    staff_notes: str | None
    valid_until: date | None
    sent_at: datetime | None
    accepted_at: datetime | None
    accepted_via: str | None
    partner: str | None
    partner_reference: str | None
    spam: bool
    lines: tuple[LineRecord, ...]
    vat: VatDecision
    totals: Totals

    @property
    def is_sent(self) -> bool:
        """Sent to the customer: lines, prices and the VAT rate are frozen, and shown."""
        return self.sent_at is not None


def _line(row: QuoteLine) -> LineRecord:
    return LineRecord(
        id=row.id, position=row.position, item_kind=row.item_kind, item_slug=row.item_slug,
        description=row.description, quantity=row.quantity,
        unit_price_eur_net=row.unit_price_eur_net, discount_percent=row.discount_percent,
        net_eur=pricing.line_net(quantity=row.quantity, unit_price_eur_net=row.unit_price_eur_net,
                                 discount_percent=row.discount_percent),
    )


def vat(row: QuoteRequest, policy: VatPolicy) -> VatDecision:
    """The VAT for the request's customer; once sent, at the rate frozen then."""
    decision = pricing.vat_for(country=row.country, vat_id=row.vat_id,
                               home_country=policy.home_country, rates=policy.rates)
    if row.vat_rate_percent is not None:
        return VatDecision(row.vat_rate_percent, decision.rule)
    return decision


def quote(row: QuoteRequest, policy: VatPolicy) -> Quote:
    """The priced quote of a request read with its lines and partner."""
    lines = tuple(_line(line) for line in row.lines)
    decision = vat(row, policy)
    return Quote(
        request=to_record(row), version=row.version, updated_at=row.updated_at,
        status=validity.effective_status(row.status, row.valid_until, validity.today()),
        staff_notes=row.staff_notes, valid_until=row.valid_until, sent_at=row.sent_at,
        accepted_at=row.accepted_at, accepted_via=row.accepted_via,
        partner=row.partner.name if row.partner is not None else None,
        partner_reference=row.partner_reference, spam=row.spam, lines=lines, vat=decision,
        totals=pricing.totals((line.net_eur for line in lines),
                              vat_rate_percent=decision.rate_percent),
    )
