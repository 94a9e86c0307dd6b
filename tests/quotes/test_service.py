"""The quotes service: stores a request with a server-computed snapshot, never commits."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.caches import Caches
from app.catalog import service as catalog_service
from app.db.session import SessionFactory
from app.db.tables import QuoteRequest
from app.engine import Job
from app.errors import InvalidInput, NotFound
from app.estimates.service import EstimateRequest
from app.quotes import service as quotes_service
from app.quotes.schemas import Contact

CONTACT = Contact(name="Ada", company="Engines", email="ada@example.com", country="DE",
                  vat_id=None, message=None, quantity=1)
REQUEST = EstimateRequest(job=Job(), model_slug="llama-3.1-8b")


def _create(session: Session, contact: Contact = CONTACT, kind: str = "gpu",
            slug: str = "rtx-pro-4500") -> str:
    caches = Caches()
    record = quotes_service.create_request(
        session, catalog=catalog_service.get_catalog(session, caches.catalog), estimate=REQUEST,
        estimates=caches.estimates,
        calculator_query={"model": "llama-3.1-8b"}, item_kind=kind,  # type: ignore[arg-type]
        item_slug=slug, contact=contact, locale="en",
    )
    return record.token


def test_a_request_is_stored_with_its_snapshot(seeded_session: Session) -> None:
    token = _create(seeded_session)
    record = quotes_service.get_request(seeded_session, token=token)
    assert len(token) == 32 and record.reference.startswith("Q-")
    assert record.item_name == "NVIDIA RTX PRO 4500 Blackwell"
    assert record.sizing["item_fit"]["fits"] is False
    assert record.sizing["result"]["engine_version"] == record.engine_version


def test_a_system_can_be_asked_for(seeded_session: Session) -> None:
    token = _create(seeded_session, kind="system", slug="srv-2x-h200-nvl")
    record = quotes_service.get_request(seeded_session, token=token)
    assert record.item_kind == "system" and record.sizing["item_fit"]["gpus"] == 2


def test_tokens_and_references_are_unique(seeded_session: Session) -> None:
    tokens = {_create(seeded_session) for _ in range(5)}
    assert len(tokens) == 5
    references = seeded_session.scalars(select(QuoteRequest.reference)).all()
    assert len(set(references)) == 5


def test_the_service_never_commits(seeded_session: Session,
                                   session_factory: SessionFactory) -> None:
    _create(seeded_session)
    seeded_session.rollback()
    with session_factory() as other:
        assert other.scalar(select(func.count()).select_from(QuoteRequest)) == 0


@pytest.mark.parametrize("change", [
    {"name": "<b>Ada</b>"}, {"email": ""}, {"quantity": 0}, {"quantity": 1001},
])
def test_bad_contacts_are_refused(seeded_session: Session, change: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        _create(seeded_session, replace(CONTACT, **change))  # type: ignore[arg-type]


def test_unknown_items_and_tokens_are_not_found(seeded_session: Session) -> None:
    with pytest.raises(NotFound):
        _create(seeded_session, slug="no-such-card")
    with pytest.raises(NotFound):
        quotes_service.get_request(seeded_session, token="x" * 32)
    with pytest.raises(NotFound):
        quotes_service.get_request(seeded_session, token="x" * 500)


def test_the_request_keeps_the_setup_the_card_fits_with(seeded_session: Session) -> None:
    """Issue 27, point 5: staff see what was assumed. LoRA Llama-3.1-8B at batch 4 does not
    fit the RTX PRO 4500 as set; the stored request keeps the setup it fits with and the
    recommendation."""
    caches = Caches()
    record = quotes_service.create_request(
        seeded_session, catalog=catalog_service.get_catalog(seeded_session, caches.catalog),
        estimate=replace(REQUEST, job=Job(batch_size=4), checkpointing="auto"),
        estimates=caches.estimates, calculator_query={"model": "llama-3.1-8b", "batch": "4"},
        item_kind="gpu", item_slug="rtx-pro-4500", contact=CONTACT, locale="en")
    stored = quotes_service.get_request(seeded_session, token=record.token).sizing
    assert stored["item_fit"]["fits"] is False
    setup = stored["item_fit"]["setup"]
    assert setup["changes"]["gradient_checkpointing"] is True
    assert setup["total_bytes"] <= stored["item_fit"]["usable_bytes"]
    # the cheapest priced offer that fits: the DGX Spark at its indicative list price
    assert stored["result"]["recommendation"]["slug"] == "dgx-spark"
    assert stored["result"]["recommendation"]["price_indicative"] is True
