"""The staff desk's quote workflow: list, open, price with lines, send. Services never commit.

A quote is the request plus staff-made lines (prices copied in, so later catalog changes never
alter it), notes, a validity date and a status (new -> in_progress -> sent -> accepted |
expired). Every mutating call names the quote ``version`` its form was rendered from: a stale
one is a Conflict and nothing is written. Once sent, lines, notes and validity are frozen and
the VAT rate is stored; only the status may still move to accepted or expired.

The list comes a page at a time (:data:`PAGE_SIZE`, newest first, continued with a cursor), so
no flood of requests can push the rest out of reach; staff can mark a request as spam, which
hides it from every list but the spam list and keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, Final

from sqlalchemy import CursorResult, or_, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.exc import StaleDataError

from app import text_input
from app.accounts import audit
from app.accounts.audit import Actor
from app.catalog.schemas import Catalog, GpuRecord
from app.db.base import utcnow
from app.db.tables import QuoteLine, QuoteRequest
from app.errors import Conflict, InvalidInput, NotFound
from app.quotes import pricing, repository, validity, view
from app.quotes.pricing import VatPolicy as VatPolicy  # the desk's callers name it desk.VatPolicy
from app.quotes.schemas import LINE_KINDS, QUOTE_STATUSES, SENT_STATUSES, AcceptedVia
from app.quotes.view import Quote

DEFAULT_VALIDITY_DAYS = 30
MAX_LINES = 100
MAX_QUANTITY = 10_000
MAX_PRICE = Decimal("9999999999.99")
PAGE_SIZE = 50
"""Requests per page of the desk's list: a screenful to triage; older ones are a click away."""
SPAM_FILTER = "spam"
"""The list filter that shows the requests marked as spam (and only those)."""
LIST_FILTERS: tuple[str, ...] = (*QUOTE_STATUSES, SPAM_FILTER)
MAX_CURSOR = 2**31
"""Cursors are row ids (32-bit INTEGER); a larger one names no row."""


@dataclass(frozen=True, slots=True)
class QuoteSummary:
    id: int
    reference: str
    created_at: datetime
    company: str
    name: str
    country: str
    item_name: str
    quantity: int
    status: str
    partner: str | None
    spam: bool
    is_sent: bool
    workload: str = "training"
    """Which calculator the request came from ("training" or "serving")."""


@dataclass(frozen=True, slots=True)
class QuotePage:
    """One page of the desk's list and the cursor of the next (older) one, None on the last."""

    quotes: list[QuoteSummary]
    next_before: int | None


@dataclass(frozen=True, slots=True)
class LineInput:
    """A line as staff entered it; ``unit_price_eur_net`` None means "the catalog price"."""

    item_kind: str
    item_slug: str | None
    description: str
    quantity: int
    unit_price_eur_net: Decimal | None
    discount_percent: Decimal


def _snapshot(row: QuoteRequest) -> dict[str, Any]:
    """What the audit log keeps of a quote."""
    return {
        "status": row.status, "staff_notes": row.staff_notes,
        "valid_until": row.valid_until.isoformat() if row.valid_until else None,
        "sent_at": row.sent_at.isoformat() if row.sent_at else None,
        "accepted_at": row.accepted_at.isoformat() if row.accepted_at else None,
        "vat_rate_percent": str(row.vat_rate_percent) if row.vat_rate_percent is not None
        else None,
        "lines": [
            {"kind": line.item_kind, "slug": line.item_slug, "description": line.description,
             "quantity": line.quantity, "unit_price_eur_net": str(line.unit_price_eur_net),
             "discount_percent": str(line.discount_percent)}
            for line in row.lines
        ],
    }


def list_quotes(session: Session, *, status: str | None = None, before: int | None = None,
                limit: int = PAGE_SIZE) -> QuotePage:
    """One page of the desk's list, newest first: requests of one status (any when None) not
    marked as spam, or with ``status="spam"`` those marked as spam; ``before`` continues from
    a page's ``next_before``."""
    if status is not None and status not in LIST_FILTERS:
        raise InvalidInput(f"must be one of {', '.join(LIST_FILTERS)}", field="status")
    if before is not None and not 0 < before <= MAX_CURSOR:
        raise InvalidInput(f"a row id from 1 to {MAX_CURSOR}", field="before")
    if not 1 <= limit <= PAGE_SIZE:
        raise InvalidInput(f"from 1 to {PAGE_SIZE}", field="limit")
    spam = status == SPAM_FILTER
    rows = repository.page(session, where=QuoteRequest.spam == spam,
                           status=None if spam else status, before_id=before, limit=limit + 1)
    page = [
        QuoteSummary(
            id=row.id, reference=row.reference, created_at=row.created_at,
            company=row.company, name=row.name, country=row.country, item_name=row.item_name,
            quantity=row.quantity, partner=row.partner.name if row.partner else None,
            spam=row.spam, is_sent=row.sent_at is not None, workload=row.workload,
            status=validity.effective_status(row.status, row.valid_until, validity.today()),
        )
        for row in rows[:limit]
    ]
    return QuotePage(page, page[-1].id if len(rows) > limit else None)


def mark_spam(session: Session, *, actor: Actor, reference: str, spam: bool) -> bool:
    """Mark a request as spam (hidden from the default list, kept) or take the mark back;
    whether that changed anything. Audited. A sent quote went to a real customer: refused."""
    row = _row(session, reference)
    if row.spam == spam:
        return False
    if spam and row.sent_at is not None:
        raise InvalidInput("a sent quote can't be marked as spam", field="spam")
    row.spam = spam
    _flush(session)
    audit.record(session, actor=actor, entity="quote", entity_key=reference,
                 action="mark_spam" if spam else "unmark_spam",
                 before={"spam": not spam}, after={"spam": spam})
    return True


def _row(session: Session, reference: str) -> QuoteRequest:
    row = repository.row_by_reference(session, reference)
    if row is None:
        raise NotFound("quote not found")
    return row


def get_quote(session: Session, *, reference: str, vat: VatPolicy) -> Quote:
    """One quote by its reference; NotFound otherwise."""
    return view.quote(_row(session, reference), vat)


def get_sent_quote(session: Session, *, token: str, vat: VatPolicy) -> Quote | None:
    """The priced quote for the customer's page, once sent (None before)."""
    row = repository.row_by_token(session, token)
    if row is None or row.sent_at is None:
        return None
    return view.quote(row, vat)


CUSTOMER = Actor(user_id=None, name="customer (/q/ page)")
"""Who the audit log names when a customer accepts their quote."""
ACCEPTED_VIA_LINK: Final[AcceptedVia] = "link"
ACCEPTED_VIA_DESK: Final[AcceptedVia] = "desk"
"""How an acceptance came (``QuoteRequest.accepted_via``): the customer on /q/, or staff."""


def accept(session: Session, *, token: str, today: date | None = None) -> str:
    """The customer accepts their sent, still valid quote on its /q/ page:
    status accepted with the moment and ``link``, audited in the same transaction. Returns the
    reference. NotFound for an unknown or unsent quote, Conflict once it expired.

    One conditional UPDATE does it, before anything is read: of two clicks at once, the second
    waits for the first's row lock (PostgreSQL) or write lock (SQLite), then matches no row and
    finds the quote accepted, so a double click records one acceptance and answers both alike.

    The token is checked first, as :func:`repository.row_by_token` checks it: a control
    character is a 422 on ``token`` and anything else that cannot be a token a 404, before
    the UPDATE (PostgreSQL refuses a NUL in text: a 500).
    """
    text_input.check(token, "token")
    if not repository.is_lookup_key(token):
        raise NotFound("no sent quote at this address", field="token")
    today = today or validity.today()
    now = utcnow()
    result = session.execute(
        update(QuoteRequest)
        .where(QuoteRequest.token == token, QuoteRequest.status == "sent",
               QuoteRequest.sent_at.is_not(None),
               or_(QuoteRequest.valid_until.is_(None), QuoteRequest.valid_until >= today))
        .values(status="accepted", accepted_at=now, accepted_via=ACCEPTED_VIA_LINK,
                updated_at=now, version=QuoteRequest.version + 1)
        .execution_options(synchronize_session=False)
    )
    moved = isinstance(result, CursorResult) and result.rowcount == 1
    session.expire_all()
    row = repository.row_by_token(session, token)
    if row is None or row.sent_at is None:
        raise NotFound("no sent quote at this address", field="token")
    if moved:
        after = _snapshot(row)
        audit.record(session, actor=CUSTOMER, entity="quote", entity_key=row.reference,
                     action="accept", after=after,
                     before={**after, "status": "sent", "accepted_at": None})
    elif row.status != "accepted":
        raise Conflict("this offer has expired", field="quote")
    return row.reference


def _editable(session: Session, reference: str, version: int) -> QuoteRequest:
    row = _row(session, reference)
    if row.version != version:
        raise Conflict("changed by someone else since you opened it", field="quote")
    if row.sent_at is not None:
        raise Conflict("already sent; its prices are frozen", field="quote")
    return row


def _flush(session: Session) -> None:
    """Write the change now; a row someone else changed meanwhile is a Conflict."""
    try:
        session.flush()
    except StaleDataError as exc:
        raise Conflict("changed by someone else since you opened it", field="quote") from exc


def _save(session: Session, row: QuoteRequest, *, actor: Actor, reference: str, action: str,
          before: dict[str, Any]) -> None:
    """Write a change to the quote, bumping its version (and updated_at) so forms rendered
    before are stale, and audit it in the same transaction."""
    row.updated_at = utcnow()
    _flush(session)
    audit.record(session, actor=actor, entity="quote", entity_key=reference,
                 action=action, before=before, after=_snapshot(row))


def _touch(session: Session, row: QuoteRequest, *, actor: Actor, reference: str, action: str,
           before: dict[str, Any]) -> None:
    """Save a change to the lines: a new request is in progress from then on."""
    if row.status == "new":
        row.status = "in_progress"
    _save(session, row, actor=actor, reference=reference, action=action, before=before)


def _price(catalog: Catalog, line: LineInput) -> tuple[Decimal, str]:
    """The unit price (given, else the catalog's) and the description (given, else the name)."""
    name = line.description
    price = line.unit_price_eur_net
    if line.item_kind in ("gpu", "system"):
        if not line.item_slug:
            raise InvalidInput("choose a card or system", field="item_slug")
        try:
            item = (catalog.gpu(line.item_slug) if line.item_kind == "gpu"
                    else catalog.system(line.item_slug))
        except NotFound as exc:
            raise InvalidInput("not in the catalog", field="item_slug") from exc
        if isinstance(item, GpuRecord) and item.comparison_only:
            raise InvalidInput("a comparison card, not sold by the shop", field="item_slug")
        name = name or item.name
        if price is None:
            price = item.price_eur_net
    if not name:
        raise InvalidInput("required", field="description")
    if price is None:
        raise InvalidInput("no catalog price; enter one", field="unit_price")
    return price, name


def _check_line(line: LineInput) -> None:
    if line.item_kind not in LINE_KINDS:
        raise InvalidInput("must be gpu, system or other", field="item_kind")
    if not 1 <= line.quantity <= MAX_QUANTITY:
        raise InvalidInput(f"must be from 1 to {MAX_QUANTITY}", field="quantity")
    price = line.unit_price_eur_net
    if price is not None and not Decimal(0) <= price <= MAX_PRICE:
        raise InvalidInput("must not be negative", field="unit_price")
    if not Decimal(0) <= line.discount_percent <= pricing.HUNDRED:
        raise InvalidInput("must be from 0 to 100", field="discount_percent")
    if len(line.description) > 200:
        raise InvalidInput("at most 200 characters", field="description")


def add_line(session: Session, *, actor: Actor, reference: str, version: int,
             catalog: Catalog, line: LineInput) -> None:
    """Add a priced line (catalog price unless one is given)."""
    _check_line(line)
    row = _editable(session, reference, version)
    if len(row.lines) >= MAX_LINES:
        raise InvalidInput(f"at most {MAX_LINES} lines", field="item_kind")
    before = _snapshot(row)
    price, description = _price(catalog, line)
    position = max((existing.position for existing in row.lines), default=0) + 1
    repository.add_line(session, row, QuoteLine(
        position=position, item_kind=line.item_kind,
        item_slug=line.item_slug if line.item_kind != "other" else None,
        description=description, quantity=line.quantity, unit_price_eur_net=pricing.money(price),
        discount_percent=line.discount_percent,
    ))
    _touch(session, row, actor=actor, reference=reference, action="add_line", before=before)


def _find_line(row: QuoteRequest, line_id: int) -> QuoteLine:
    for line in row.lines:
        if line.id == line_id:
            return line
    raise NotFound("quote line not found")


def update_line(session: Session, *, actor: Actor, reference: str, version: int,
                line_id: int, catalog: Catalog, line: LineInput) -> None:
    """Change a line's quantity, price, discount or description."""
    _check_line(line)
    row = _editable(session, reference, version)
    target = _find_line(row, line_id)
    before = _snapshot(row)
    price, description = _price(catalog, LineInput(
        item_kind=target.item_kind, item_slug=target.item_slug,
        description=line.description or target.description, quantity=line.quantity,
        unit_price_eur_net=line.unit_price_eur_net if line.unit_price_eur_net is not None
        else target.unit_price_eur_net, discount_percent=line.discount_percent,
    ))
    target.description = description
    target.quantity = line.quantity
    target.unit_price_eur_net = pricing.money(price)
    target.discount_percent = line.discount_percent
    _touch(session, row, actor=actor, reference=reference, action="update_line", before=before)


def remove_line(session: Session, *, actor: Actor, reference: str, version: int,
                line_id: int) -> None:
    row = _editable(session, reference, version)
    before = _snapshot(row)
    row.lines.remove(_find_line(row, line_id))
    _touch(session, row, actor=actor, reference=reference, action="remove_line", before=before)


def update_details(session: Session, *, actor: Actor, reference: str, version: int,
                   status: str, staff_notes: str | None, valid_until: date | None) -> None:
    """Notes, validity and status; after sending only the status (sent/accepted/expired)."""
    row = _row(session, reference)
    if row.version != version:
        raise Conflict("changed by someone else since you opened it", field="quote")
    before = _snapshot(row)
    if row.sent_at is not None:
        if status not in SENT_STATUSES:
            raise InvalidInput("a sent quote can only be accepted or expire", field="status")
        if row.status == "accepted" and status != "accepted":
            raise InvalidInput("an accepted quote is an order; it stays accepted",
                               field="status")
        if status == "accepted" and row.status != "accepted":
            row.accepted_at, row.accepted_via = utcnow(), ACCEPTED_VIA_DESK
        row.status = status
    else:
        if status not in ("new", "in_progress"):
            raise InvalidInput("send the quote first", field="status")
        if staff_notes is not None and len(staff_notes) > 5000:
            raise InvalidInput("at most 5000 characters", field="staff_notes")
        row.status = status
        row.staff_notes = staff_notes or None
        row.valid_until = valid_until
    _save(session, row, actor=actor, reference=reference, action="update", before=before)


def send(session: Session, *, actor: Actor, reference: str, version: int, vat: VatPolicy,
         today: date | None = None) -> None:
    """Freeze the quote: status sent, sent_at now, the VAT rate stored; validity defaults to
    30 days. Needs at least one line."""
    row = _editable(session, reference, version)
    if not row.lines:
        raise InvalidInput("add at least one line before sending", field="lines")
    today = today or datetime.now(UTC).date()
    if row.valid_until is not None and row.valid_until < today:
        raise InvalidInput("lies in the past", field="valid_until")
    before = _snapshot(row)
    row.vat_rate_percent = view.vat(row, vat).rate_percent
    row.valid_until = row.valid_until or today + timedelta(days=DEFAULT_VALIDITY_DAYS)
    row.sent_at = datetime.now(UTC)
    row.status = "sent"
    _save(session, row, actor=actor, reference=reference, action="send", before=before)
