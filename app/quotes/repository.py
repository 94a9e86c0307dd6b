"""The only place the quotes domain talks SQL."""

from __future__ import annotations

import re

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.tables import QuoteRequest
from app.quotes.schemas import Contact, QuoteRequestRecord

LOOKUP_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a token (``secrets.token_urlsafe``) and a reference (``Q-XXXXXXXX``) are made of."""


def is_lookup_key(text: str) -> bool:
    """Whether ``text`` could name a stored request. Anything else never reaches the database,
    which may refuse it outright (PostgreSQL's text cannot hold a NUL)."""
    return LOOKUP_KEY.fullmatch(text) is not None


def _record(row: QuoteRequest) -> QuoteRequestRecord:
    return QuoteRequestRecord(
        token=row.token, reference=row.reference, created_at=row.created_at, locale=row.locale,
        contact=Contact(
            name=row.name, company=row.company, email=row.email, country=row.country,
            vat_id=row.vat_id, message=row.message, quantity=row.quantity,
        ),
        item_kind=row.item_kind, item_slug=row.item_slug, item_name=row.item_name,
        item_sku_price_eur_net=row.item_sku_price_eur_net,
        calculator_query=row.calculator_query, engine_version=row.engine_version,
        sizing=dict(row.sizing),
    )


def add(session: Session, row: QuoteRequest) -> QuoteRequestRecord:
    session.add(row)
    session.flush()
    return _record(row)


def get_by_token(session: Session, token: str) -> QuoteRequestRecord | None:
    if not is_lookup_key(token):
        return None
    row = session.scalars(select(QuoteRequest).where(QuoteRequest.token == token)).one_or_none()
    return _record(row) if row is not None else None


def reference_taken(session: Session, reference: str) -> bool:
    found = session.scalars(
        select(QuoteRequest.id).where(QuoteRequest.reference == reference)
    ).first()
    return found is not None


def to_record(row: QuoteRequest) -> QuoteRequestRecord:
    """The plain record of a loaded row (for the staff desk's service)."""
    return _record(row)
