"""Quote requests as a partner sees them: its own only, as the one priced view
(:mod:`app.quotes.view`) the desk and the customer's page show; the API shows the lines and
totals once the quote is sent.

Requests are the storefront's records (:func:`app.quotes.service.create_request`) marked with
the partner; partners name them by ``reference`` (``Q-XXXXXXXX``), never by the customer's
page token. Another partner's reference is NotFound, exactly like one that does not exist.
Services never commit.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from app.catalog.schemas import Catalog
from app.db.tables import QuoteRequest
from app.errors import InvalidInput, NotFound
from app.estimates.service import EstimateCache, EstimateRequest
from app.estimates.serving import ServingRequest
from app.quotes import repository, service, view
from app.quotes.pricing import VatPolicy
from app.quotes.repository import MAX_REFERENCE
from app.quotes.schemas import QUOTE_STATUSES, Contact, ItemKind
from app.quotes.view import Quote

LIST_LIMIT = 100
"""The most requests one page of the partner's list holds (the API's ``limit`` bound)."""


def get_request(session: Session, *, partner_id: int, reference: str,
                vat: VatPolicy) -> Quote:
    """The partner's request with this reference; NotFound for any other (or none)."""
    row = repository.row_by_reference(session, reference, partner_id=partner_id)
    if row is None:
        raise NotFound(f"quote request: no request {reference[:MAX_REFERENCE]!r} of yours")
    return view.quote(row, vat)


def list_requests(
    session: Session, *, partner_id: int, vat: VatPolicy, status: str | None = None,
    before_id: int | None = None, limit: int = 20,
) -> tuple[list[Quote], int | None]:
    """The partner's requests, newest first, ``limit`` at a time; and the row id to continue
    before (None on the last page). Only the partner's own; ``status`` filters."""
    if status is not None and status not in QUOTE_STATUSES:
        raise InvalidInput(f"must be one of {', '.join(QUOTE_STATUSES)}", field="status")
    if not 1 <= limit <= LIST_LIMIT:
        raise InvalidInput(f"from 1 to {LIST_LIMIT}", field="limit")
    rows = repository.page(session, where=QuoteRequest.partner_id == partner_id, status=status,
                           before_id=before_id, limit=limit + 1)
    page = rows[:limit]
    return [view.quote(row, vat) for row in page], page[-1].id if len(rows) > limit else None


def create_request(
    session: Session, *, partner_id: int, partner_reference: str | None, catalog: Catalog,
    estimate: EstimateRequest, estimates: EstimateCache, calculator_query: dict[str, str],
    item_kind: ItemKind, item_slug: str, contact: Contact, locale: str, vat: VatPolicy,
) -> Quote:
    """Store the storefront's record, marked with the partner; then its partner view."""
    record = service.create_request(
        session, catalog=catalog, estimate=estimate, estimates=estimates,
        calculator_query=calculator_query,
        item_kind=item_kind, item_slug=item_slug, contact=contact, locale=locale,
        partner_id=partner_id, partner_reference=partner_reference,
    )
    return get_request(session, partner_id=partner_id, reference=record.reference, vat=vat)


def create_serving_request(
    session: Session, *, partner_id: int, partner_reference: str | None, catalog: Catalog,
    serving: ServingRequest, estimates: EstimateCache, calculator_query: dict[str, str],
    item_kind: ItemKind, item_slug: str, contact: Contact, locale: str, vat: VatPolicy,
) -> Quote:
    """A serving job's request (the Serve page's record), marked with the partner; then its
    partner view."""
    record = service.create_serving_request(
        session, catalog=catalog, serving=serving, estimates=estimates,
        calculator_query=calculator_query, item_kind=item_kind, item_slug=item_slug,
        contact=contact, locale=locale, partner_id=partner_id,
        partner_reference=partner_reference,
    )
    return get_request(session, partner_id=partner_id, reference=record.reference, vat=vat)
