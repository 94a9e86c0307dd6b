"""The desk's list a page at a time, and spam marks (issue 13, point 5), on SQLite and
PostgreSQL: no flood of requests can push a real one out of reach, a spam mark hides a request
from every list but the spam list, keeps it, and is audited."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.accounts.audit import Actor
from app.caches import Caches
from app.catalog import service as catalog_service
from app.db.base import utcnow
from app.db.tables import AuditLog, QuoteRequest
from app.engine import Job
from app.errors import InvalidInput
from app.estimates.service import EstimateRequest
from app.quotes import desk
from app.quotes import service as quotes_service
from app.quotes.schemas import Contact

STAFF = Actor(user_id=None, name="tests")
REQUEST = EstimateRequest(job=Job(), model_slug="llama-3.1-8b")


def _create(session: Session, company: str) -> str:
    """A storefront request through the real service; its reference."""
    caches = Caches()
    record = quotes_service.create_request(
        session, catalog=catalog_service.get_catalog(session, caches.catalog), estimate=REQUEST,
        estimates=caches.estimates,
        calculator_query={"model": "llama-3.1-8b"}, item_kind="gpu", item_slug="rtx-pro-4500",
        contact=Contact(name="Ada", company=company, email="ada@example.com", country="DE",
                        vat_id=None, message=None, quantity=1),
        locale="en",
    )
    return record.reference


def _all_pages(session: Session, *, status: str | None = None, limit: int) -> list[list[str]]:
    pages: list[list[str]] = []
    before: int | None = None
    while True:
        page = desk.list_quotes(session, status=status, before=before, limit=limit)
        pages.append([q.reference for q in page.quotes])
        if page.next_before is None:
            return pages
        before = page.next_before


def test_the_list_pages_through_every_request_newest_first(seeded_session: Session) -> None:
    references = [_create(seeded_session, f"Company {i}") for i in range(7)]
    pages = _all_pages(seeded_session, limit=3)
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [ref for page in pages for ref in page] == references[::-1]
    exact = _all_pages(seeded_session, limit=7)  # a full last page says there is no next one
    assert exact == [references[::-1]]


def test_a_spam_flood_no_longer_hides_the_real_requests(seeded_session: Session) -> None:
    """Regression: the desk showed the newest 500 and nothing else, so 500 spam requests
    pushed every real one out of view. Marked as spam they leave the list; and every request
    stays reachable page by page whether marked or not."""
    real = _create(seeded_session, "Real Customer GmbH")
    flood = [_create(seeded_session, "Spam") for _ in range(6)]
    assert real in [ref for page in _all_pages(seeded_session, limit=2) for ref in page]
    for reference in flood:
        assert desk.mark_spam(seeded_session, actor=STAFF, reference=reference, spam=True)
    first = desk.list_quotes(seeded_session, limit=2)
    assert [q.reference for q in first.quotes] == [real] and first.next_before is None
    assert _all_pages(seeded_session, status="new", limit=50) == [[real]]
    spam = desk.list_quotes(seeded_session, status="spam")
    assert [q.reference for q in spam.quotes] == flood[::-1]
    assert all(q.spam for q in spam.quotes)


def test_a_spam_mark_is_kept_audited_and_can_be_taken_back(seeded_session: Session) -> None:
    reference = _create(seeded_session, "Maybe Spam")
    assert desk.mark_spam(seeded_session, actor=STAFF, reference=reference, spam=True)
    assert not desk.mark_spam(seeded_session, actor=STAFF, reference=reference, spam=True)
    row = seeded_session.scalars(
        select(QuoteRequest).where(QuoteRequest.reference == reference)).one()
    assert row.spam and row.company == "Maybe Spam"  # kept, whole
    assert desk.get_quote(seeded_session, reference=reference, vat=desk.VatPolicy(
        home_country="DE", rates={})).spam
    assert desk.mark_spam(seeded_session, actor=STAFF, reference=reference, spam=False)
    assert [q.reference for q in desk.list_quotes(seeded_session).quotes] == [reference]
    audit = seeded_session.execute(
        select(AuditLog.action, AuditLog.entity, AuditLog.entity_key, AuditLog.before,
               AuditLog.after).order_by(AuditLog.id)).all()
    assert [tuple(a) for a in audit] == [
        ("mark_spam", "quote", reference, {"spam": False}, {"spam": True}),
        ("unmark_spam", "quote", reference, {"spam": True}, {"spam": False}),
    ]


def test_a_sent_quote_cannot_be_marked_as_spam(seeded_session: Session) -> None:
    reference = _create(seeded_session, "Real Customer GmbH")
    seeded_session.execute(update(QuoteRequest).where(QuoteRequest.reference == reference)
                           .values(sent_at=utcnow(), status="sent"))
    with pytest.raises(InvalidInput, match=r"^spam: a sent quote can't be marked as spam$"):
        desk.mark_spam(seeded_session, actor=STAFF, reference=reference, spam=True)
    assert seeded_session.scalars(select(AuditLog)).all() == []


@pytest.mark.parametrize(("arguments", "field"), [
    ({"before": 0}, "before"), ({"before": -5}, "before"), ({"before": 2**40}, "before"),
    ({"status": "deleted"}, "status"), ({"limit": 0}, "limit"),
    ({"limit": desk.PAGE_SIZE + 1}, "limit"),
])
def test_bad_list_arguments_name_their_field(
    seeded_session: Session, arguments: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidInput, match=f"^{field}: "):
        desk.list_quotes(seeded_session, **arguments)  # type: ignore[arg-type]
