"""The staff desk's queries on quote requests and their lines (the storefront's are in
``repository``). ORM rows handed out here stay inside the quotes domain."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from app.db.tables import Partner, QuoteLine, QuoteRequest
from app.quotes import validity
from app.quotes.repository import is_lookup_key


def list_rows(
    session: Session, *, status: str | None, spam: bool, before_id: int | None, limit: int
) -> list[tuple[QuoteRequest, str | None]]:
    """Requests newest (highest id) first with their partner's name (None for the
    storefront): the spam ones or the others, older than ``before_id`` when given."""
    query = (
        select(QuoteRequest, Partner.name)
        .outerjoin(Partner, QuoteRequest.partner_id == Partner.id)
        .where(QuoteRequest.spam == spam)
        .order_by(QuoteRequest.id.desc())
        .limit(limit)
    )
    if status:
        query = query.where(validity.status_is(status, validity.today()))
    if before_id is not None:
        query = query.where(QuoteRequest.id < before_id)
    return [(row, name) for row, name in session.execute(query).tuples()]


def get_row(session: Session, *, reference: str) -> QuoteRequest | None:
    """One request with its lines loaded."""
    if not is_lookup_key(reference):
        return None
    return session.scalars(
        select(QuoteRequest).options(selectinload(QuoteRequest.lines))
        .where(QuoteRequest.reference == reference)
    ).one_or_none()


def get_row_by_token(session: Session, *, token: str) -> QuoteRequest | None:
    if not is_lookup_key(token):
        return None
    return session.scalars(
        select(QuoteRequest).options(selectinload(QuoteRequest.lines))
        .where(QuoteRequest.token == token)
    ).one_or_none()


def partner_name(session: Session, partner_id: int | None) -> str | None:
    if partner_id is None:
        return None
    return session.scalar(select(Partner.name).where(Partner.id == partner_id))


def add_line(session: Session, row: QuoteRequest, line: QuoteLine) -> None:
    row.lines.append(line)
    session.flush()
