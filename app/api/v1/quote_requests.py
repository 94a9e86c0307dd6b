"""Quote requests a partner makes for its customers, named by their reference (Q-XXXXXXXX).

The record is the storefront's own (same table, same sizing snapshot), marked with the
partner; a partner sees only its own requests (any other reference is 404).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from app import caches
from app.api.v1 import schemas
from app.api.v1 import serving as serving_api
from app.api.v1.bodies import resolved
from app.api.v1.catalog import decode_cursor, encode_cursor
from app.api.v1.deps import Partner, require_partner
from app.api.v1.estimates import serve_query, storefront_query, to_request
from app.api.v1.json_body import BoundedJsonRoute
from app.api.v1.mappers import quote_request_out
from app.api.v1.problems import ApiProblem
from app.api.v1.responses import (
    AUTH_ERRORS,
    BAD_PARAMETER,
    HUB_UNAVAILABLE,
    INVALID,
    NOT_FOUND,
)
from app.catalog import service as catalog_service
from app.errors import InvalidInput
from app.http.session import DbSession
from app.quotes import partner as partner_quotes
from app.quotes.pricing import VatPolicy
from app.quotes.schemas import Contact, QuoteStatus

CONTACT_FIELDS = frozenset(schemas.ContactIn.model_fields)
REQUEST_FIELDS = frozenset(schemas.QuoteRequestIn.model_fields)


def body_location(field: str) -> str:
    """Where in the request body the field a service error names sits: contact fields under
    ``body.contact``, the job's under ``body.estimate``."""
    if field in CONTACT_FIELDS:
        return f"body.contact.{field}"
    if field in REQUEST_FIELDS:
        return f"body.{field}"
    return f"body.estimate.{field}"


router = APIRouter(tags=["quote requests"], dependencies=[Depends(require_partner)],
                   responses={**AUTH_ERRORS, **NOT_FOUND, **BAD_PARAMETER},
                   route_class=BoundedJsonRoute)  # a 5,000-digit number names its field


@router.post("/quote-requests", response_model=schemas.QuoteRequestOut, status_code=201,
             responses={**INVALID, **HUB_UNAVAILABLE}, summary="Request a quote for a customer")
def create_quote_request(request: Request, session: DbSession, partner: Partner,
                         response: Response,
                         body: schemas.QuoteRequestIn) -> schemas.QuoteRequestOut:
    """Store a quote request with the job's sizing, training or serving; the shop's staff
    price it."""
    c = body.contact
    cached = caches.of(request)
    catalog = catalog_service.get_catalog(session, cached.catalog)
    contact = Contact(name=c.name, company=c.company, email=c.email, country=c.country,
                      vat_id=c.vat_id or None, message=c.message or None,
                      quantity=body.quantity)
    common: dict[str, Any] = {
        "partner_id": partner.partner_id, "partner_reference": body.partner_reference,
        "catalog": catalog, "estimates": cached.estimates, "item_kind": body.item_kind,
        "item_slug": body.item_slug, "locale": body.locale, "contact": contact,
        "vat": VatPolicy.of(request.app.state.settings)}
    try:
        if isinstance(body.estimate, schemas.ServingInput):
            job = body.estimate
            if job.gpu_memory_bytes is not None:
                raise InvalidInput("a quote is for catalog cards; leave gpu_memory_bytes out",
                                   field="gpu_memory_bytes")
            view = partner_quotes.create_serving_request(
                session, serving=serving_api.to_request(resolved(request, session, catalog,
                                                                 job)),
                calculator_query=serve_query(job), **common)
        else:
            estimate = resolved(request, session, catalog, body.estimate)
            view = partner_quotes.create_request(
                session, estimate=to_request(estimate),
                calculator_query=storefront_query(estimate) or {"source": "api"}, **common)
    except InvalidInput as error:
        raise ApiProblem(422, error.detail, location=body_location(error.field)) from error
    response.headers["Location"] = f"/api/v1/quote-requests/{view.request.reference}"
    return quote_request_out(view)


@router.get("/quote-requests", response_model=schemas.QuoteRequestPage,
            responses=INVALID, summary="Your quote requests, newest first")
def list_quote_requests(
    request: Request, session: DbSession, partner: Partner,
    status: Annotated[QuoteStatus | None,
                      Query(description="Only requests in this status.")] = None,
    cursor: Annotated[str | None, Query(max_length=40, description="next_cursor of the "
                                        "previous page.")] = None,
    limit: Annotated[int, Query(ge=1, le=partner_quotes.LIST_LIMIT)] = 20,
) -> schemas.QuoteRequestPage:
    """Every request this key's partner made, with status and, once sent, lines and totals:
    what a partner polls to keep its own records current."""
    before = None
    if cursor is not None:
        decoded = decode_cursor(cursor)
        if not (decoded.isascii() and decoded.isdigit()) or len(decoded) > 18:
            raise ApiProblem(422, "not a cursor this API returned", location="query.cursor")
        before = int(decoded)
    views, next_before = partner_quotes.list_requests(
        session, partner_id=partner.partner_id, vat=VatPolicy.of(request.app.state.settings),
        status=status, before_id=before, limit=limit)
    return schemas.QuoteRequestPage(
        items=[quote_request_out(view) for view in views],
        next_cursor=encode_cursor(str(next_before)) if next_before is not None else None,
    )


@router.get("/quote-requests/{id}", response_model=schemas.QuoteRequestOut,
            summary="A quote request's status and lines")
def get_quote_request(
    request: Request, session: DbSession, partner: Partner,
    id: Annotated[str, Path(max_length=16, examples=["Q-7KX2M9PA"])],
) -> schemas.QuoteRequestOut:
    """Status, and once the quote is sent, its lines and totals (net, VAT, gross)."""
    return quote_request_out(
        partner_quotes.get_request(session, partner_id=partner.partner_id, reference=id,
                                   vat=VatPolicy.of(request.app.state.settings))
    )
