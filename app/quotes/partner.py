"""Quote requests as a partner sees them: its own only, with the priced lines once sent.

Requests are the storefront's records (:func:`app.quotes.service.create_request`) marked with
the partner; partners name them by ``reference`` (``Q-XXXXXXXX``), never by the customer's
page token. Another partner's reference is NotFound, exactly like one that does not exist.
Services never commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.catalog.schemas import Catalog
from app.db.tables import QUOTE_STATUSES, QuoteLine, QuoteRequest
from app.errors import InvalidInput, NotFound
from app.estimates.service import EstimateCache, EstimateRequest
from app.quotes import pricing, repository, service, validity
from app.quotes.schemas import Contact, ItemKind

PRICED_STATUSES: tuple[str, ...] = ("sent", "accepted", "expired")
"""Lines are shown once the quote was sent; before that they are staff's draft."""


@dataclass(frozen=True, slots=True)
class PartnerLine:
    position: int
    item_kind: str
    item_slug: str | None
    description: str
    quantity: int
    unit_price_eur_net: Decimal
    discount_percent: Decimal
    net_eur: Decimal


@dataclass(frozen=True, slots=True)
class PartnerTotals:
    net_eur: Decimal
    vat_rate_percent: Decimal | None
    vat_eur: Decimal | None
    gross_eur: Decimal | None


@dataclass(frozen=True, slots=True)
class PartnerQuoteRequest:
    reference: str
    status: str
    created_at: datetime
    updated_at: datetime
    partner_reference: str | None
    item_kind: str
    item_slug: str
    item_name: str
    quantity: int
    company: str
    country: str
    engine_version: str
    valid_until: date | None
    sent_at: datetime | None
    lines: tuple[PartnerLine, ...] | None
    totals: PartnerTotals | None


def line_net(line: QuoteLine) -> Decimal:
    """The staff desk's arithmetic: quantity x unit price, less the discount, in cents."""
    return pricing.line_net(quantity=line.quantity, unit_price_eur_net=line.unit_price_eur_net,
                            discount_percent=line.discount_percent or Decimal(0))


def _view(row: QuoteRequest, lines: list[QuoteLine]) -> PartnerQuoteRequest:
    shown: tuple[PartnerLine, ...] | None = None
    totals: PartnerTotals | None = None
    if row.status in PRICED_STATUSES:
        shown = tuple(
            PartnerLine(
                position=line.position, item_kind=line.item_kind, item_slug=line.item_slug,
                description=line.description, quantity=line.quantity,
                unit_price_eur_net=pricing.money(line.unit_price_eur_net),
                discount_percent=line.discount_percent or Decimal(0), net_eur=line_net(line),
            )
            for line in lines
        )
        rate = row.vat_rate_percent
        summed = pricing.totals((line.net_eur for line in shown),
                                vat_rate_percent=rate if rate is not None else Decimal(0))
        totals = PartnerTotals(
            net_eur=summed.net, vat_rate_percent=rate,
            vat_eur=summed.vat if rate is not None else None,
            gross_eur=summed.gross if rate is not None else None,
        )
    return PartnerQuoteRequest(
        reference=row.reference, created_at=row.created_at,
        status=validity.effective_status(row.status, row.valid_until, validity.today()),
        updated_at=row.updated_at, partner_reference=row.partner_reference,
        item_kind=row.item_kind, item_slug=row.item_slug, item_name=row.item_name,
        quantity=row.quantity, company=row.company, country=row.country,
        engine_version=row.engine_version, valid_until=row.valid_until,
        sent_at=row.sent_at,
        lines=shown, totals=totals,
    )


def get_request(session: Session, *, partner_id: int, reference: str) -> PartnerQuoteRequest:
    """The partner's request with this reference; NotFound for any other (or none)."""
    row = session.scalars(
        select(QuoteRequest).where(
            QuoteRequest.reference == reference[:16], QuoteRequest.partner_id == partner_id
        )
    ).one_or_none() if repository.is_lookup_key(reference[:16]) else None
    if row is None:
        raise NotFound(f"quote request: no request {reference[:16]!r} of yours")
    lines = list(session.scalars(
        select(QuoteLine).where(QuoteLine.quote_request_id == row.id)
        .order_by(QuoteLine.position, QuoteLine.id)
    ))
    return _view(row, lines)


LIST_LIMIT = 100


def list_requests(
    session: Session, *, partner_id: int, status: str | None = None,
    before_id: int | None = None, limit: int = 20,
) -> tuple[list[PartnerQuoteRequest], int | None]:
    """The partner's requests, newest first, ``limit`` at a time; and the row id to continue
    before (None on the last page). Only the partner's own; ``status`` filters."""
    if status is not None and status not in QUOTE_STATUSES:
        raise InvalidInput(f"status: must be one of {', '.join(QUOTE_STATUSES)}")
    if not 1 <= limit <= LIST_LIMIT:
        raise InvalidInput(f"limit: from 1 to {LIST_LIMIT}")
    query = select(QuoteRequest).where(QuoteRequest.partner_id == partner_id)
    if status is not None:
        query = query.where(validity.status_is(status, validity.today()))
    if before_id is not None:
        query = query.where(QuoteRequest.id < before_id)
    rows = list(session.scalars(query.order_by(QuoteRequest.id.desc()).limit(limit + 1)))
    page, more = rows[:limit], len(rows) > limit
    lines: dict[int, list[QuoteLine]] = {row.id: [] for row in page}
    priced = [row.id for row in page if row.status in PRICED_STATUSES]
    if priced:
        for line in session.scalars(
            select(QuoteLine).where(QuoteLine.quote_request_id.in_(priced))
            .order_by(QuoteLine.position, QuoteLine.id)
        ):
            lines[line.quote_request_id].append(line)
    views = [_view(row, lines[row.id]) for row in page]
    return views, page[-1].id if more and page else None


def create_request(
    session: Session, *, partner_id: int, partner_reference: str | None, catalog: Catalog,
    estimate: EstimateRequest, estimates: EstimateCache, calculator_query: dict[str, str],
    item_kind: ItemKind, item_slug: str, contact: Contact, locale: str,
) -> PartnerQuoteRequest:
    """Store the storefront's record, marked with the partner; then its partner view."""
    record = service.create_request(
        session, catalog=catalog, estimate=estimate, estimates=estimates,
        calculator_query=calculator_query,
        item_kind=item_kind, item_slug=item_slug, contact=contact, locale=locale,
        partner_id=partner_id, partner_reference=partner_reference,
    )
    return get_request(session, partner_id=partner_id, reference=record.reference)
