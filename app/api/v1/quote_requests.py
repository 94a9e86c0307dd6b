"""Quote requests a partner makes for its customers, named by their reference (Q-XXXXXXXX).

The record is the storefront's own (same table, same sizing snapshot), marked with the
partner; a partner sees only its own requests (any other reference is 404).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Response

from app.api.v1 import schemas
from app.api.v1.deps import Partner, require_partner
from app.api.v1.estimates import storefront_query, to_request
from app.api.v1.mappers import quote_request_out
from app.api.v1.problems import ApiProblem
from app.api.v1.responses import AUTH_ERRORS, BAD_PARAMETER, INVALID, NOT_FOUND
from app.catalog import service as catalog_service
from app.db.session import DbSession
from app.errors import InvalidInput
from app.quotes import partner as partner_quotes
from app.quotes.schemas import Contact

CONTACT_FIELDS = frozenset(schemas.ContactIn.model_fields)
REQUEST_FIELDS = frozenset(schemas.QuoteRequestIn.model_fields)


def body_location(detail: str) -> str:
    """Where in the request body the field a service error names (``"name: ..."``) sits:
    contact fields under ``body.contact``, the job's under ``body.estimate``."""
    field = detail.partition(":")[0].strip()
    if field in CONTACT_FIELDS:
        return f"body.contact.{field}"
    if field in REQUEST_FIELDS:
        return f"body.{field}"
    return f"body.estimate.{field}"


router = APIRouter(tags=["quote requests"], dependencies=[Depends(require_partner)],
                   responses={**AUTH_ERRORS, **NOT_FOUND, **BAD_PARAMETER})


@router.post("/quote-requests", response_model=schemas.QuoteRequestOut, status_code=201,
             responses=INVALID, summary="Request a quote for a customer")
def create_quote_request(session: DbSession, partner: Partner, response: Response,
                         body: schemas.QuoteRequestIn) -> schemas.QuoteRequestOut:
    """Store a quote request with the job's sizing; the shop's staff price it."""
    c = body.contact
    try:
        view = partner_quotes.create_request(
            session, partner_id=partner.partner_id, partner_reference=body.partner_reference,
            catalog=catalog_service.get_catalog(session), estimate=to_request(body.estimate),
            calculator_query=storefront_query(body.estimate) or {"source": "api"},
            item_kind=body.item_kind, item_slug=body.item_slug, locale=body.locale,
            contact=Contact(name=c.name, company=c.company, email=c.email, country=c.country,
                            vat_id=c.vat_id or None, message=c.message or None,
                            quantity=body.quantity),
        )
    except InvalidInput as error:
        raise ApiProblem(422, error.detail, location=body_location(error.detail)) from error
    response.headers["Location"] = f"/api/v1/quote-requests/{view.reference}"
    return quote_request_out(view)


@router.get("/quote-requests/{id}", response_model=schemas.QuoteRequestOut,
            summary="A quote request's status and lines")
def get_quote_request(
    session: DbSession, partner: Partner,
    id: Annotated[str, Path(max_length=16, examples=["Q-7KX2M9PA"])],
) -> schemas.QuoteRequestOut:
    """Status, and once the quote is sent, its lines and totals (net, VAT, gross)."""
    return quote_request_out(
        partner_quotes.get_request(session, partner_id=partner.partner_id, reference=id)
    )
