"""The only place the quotes domain talks SQL: the storefront's requests and the staff desk's
and the partner API's reads, one set of queries for all three.

Requests read as quotes come with their lines and partner loaded (both relationships are
``lazy="raise"``), so :mod:`app.quotes.view` prices them without a query. ORM rows handed out
here stay inside the quotes domain.
"""

from __future__ import annotations

import re

from sqlalchemy import ColumnElement, Select, select
from sqlalchemy.orm import Session, joinedload, selectinload

from app.db.tables import QuoteLine, QuoteRequest
from app.quotes import validity
from app.quotes.schemas import Contact, QuoteRequestRecord

LOOKUP_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a token (``secrets.token_urlsafe``) and a reference (``Q-XXXXXXXX``) are made of."""
MAX_REFERENCE = 16
"""``quote_request.reference`` is VARCHAR(16): a longer text is read as its first 16
characters (as the desk and the partner API always have)."""


def is_lookup_key(text: str) -> bool:
    """Whether ``text`` could name a stored request. Anything else never reaches the database,
    which may refuse it outright (PostgreSQL's text cannot hold a NUL)."""
    return LOOKUP_KEY.fullmatch(text) is not None


def to_record(row: QuoteRequest) -> QuoteRequestRecord:
    """The plain record of a loaded row."""
    return QuoteRequestRecord(
        token=row.token, reference=row.reference, created_at=row.created_at, locale=row.locale,
        contact=Contact(
            name=row.name, company=row.company, email=row.email, country=row.country,
            vat_id=row.vat_id, message=row.message, quantity=row.quantity,
        ),
        item_kind=row.item_kind, item_slug=row.item_slug, item_name=row.item_name,
        item_sku_price_eur_net=row.item_sku_price_eur_net,
        item_price_indicative=row.item_price_indicative,
        calculator_query=row.calculator_query, engine_version=row.engine_version,
        sizing=dict(row.sizing), workload="serving" if row.workload == "serving" else "training",
    )


def add(session: Session, row: QuoteRequest) -> QuoteRequestRecord:
    session.add(row)
    session.flush()
    return to_record(row)


def reference_taken(session: Session, reference: str) -> bool:
    found = session.scalars(
        select(QuoteRequest.id).where(QuoteRequest.reference == reference)
    ).first()
    return found is not None


def _quotes(*where: ColumnElement[bool]) -> Select[tuple[QuoteRequest]]:
    """Requests with their lines (in position order) and partner loaded."""
    return select(QuoteRequest).options(
        selectinload(QuoteRequest.lines), joinedload(QuoteRequest.partner)
    ).where(*where)


def _one(session: Session, *where: ColumnElement[bool]) -> QuoteRequest | None:
    return session.scalars(_quotes(*where)).one_or_none()


def row_by_token(session: Session, token: str) -> QuoteRequest | None:
    """The request behind a customer's ``/q/<token>`` page."""
    if not is_lookup_key(token):
        return None
    return _one(session, QuoteRequest.token == token)


def get_by_token(session: Session, token: str) -> QuoteRequestRecord | None:
    """The record behind a customer's ``/q/<token>`` page."""
    row = row_by_token(session, token)
    return to_record(row) if row is not None else None


def row_by_reference(session: Session, reference: str, *,
                     partner_id: int | None = None) -> QuoteRequest | None:
    """A request by its reference; only the partner's own when ``partner_id`` is given."""
    reference = reference[:MAX_REFERENCE]
    if not is_lookup_key(reference):
        return None
    if partner_id is None:
        return _one(session, QuoteRequest.reference == reference)
    return _one(session, QuoteRequest.reference == reference,
                QuoteRequest.partner_id == partner_id)


def page(session: Session, *, where: ColumnElement[bool], status: str | None,
         before_id: int | None, limit: int) -> list[QuoteRequest]:
    """Up to ``limit`` requests matching ``where``, newest (highest id) first: of the effective
    ``status`` when given, older than ``before_id`` when given. Callers ask for one more than
    they show, to learn whether another page follows."""
    query = _quotes(where).order_by(QuoteRequest.id.desc()).limit(limit)
    if status:
        query = query.where(validity.status_is(status, validity.today()))
    if before_id is not None:
        query = query.where(QuoteRequest.id < before_id)
    return list(session.scalars(query))


def add_line(session: Session, row: QuoteRequest, line: QuoteLine) -> None:
    row.lines.append(line)
    session.flush()
