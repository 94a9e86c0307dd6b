"""Create and read quote requests. Services never commit (the request's session does).

The sizing snapshot is computed here from the calculator request through the estimates
service, never taken from the browser, so what is stored is what the engine says.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import asdict
from decimal import Decimal
from typing import Any, NamedTuple
from urllib.parse import urlencode

from sqlalchemy.orm import Session

from app import text_input
from app.catalog.schemas import Catalog, GpuRecord, SystemRecord
from app.db.tables import QuoteRequest
from app.errors import InvalidInput, NotFound
from app.estimates import service as estimates_service
from app.estimates import serving as serving_service
from app.estimates.service import EstimateCache, EstimateRequest, Sizing
from app.estimates.serving import ServingRequest, ServingSizing
from app.quotes import repository
from app.quotes.schemas import Contact, ItemKind, QuoteRequestRecord, Workload

TOKEN_BYTES = 24
"""secrets.token_urlsafe(24): 192 random bits, 32 characters; unguessable."""
REFERENCE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
MAX_QUANTITY = 1000
_MARKUP = re.compile(r"[<>]")


def _reference(session: Session) -> str:
    while True:
        candidate = "Q-" + "".join(secrets.choice(REFERENCE_ALPHABET) for _ in range(8))
        if not repository.reference_taken(session, candidate):
            return candidate


def _check(contact: Contact, partner_reference: str | None = None) -> None:
    """Raise InvalidInput naming the first field that cannot be stored as given."""
    for name in ("name", "company", "email", "country"):
        if not getattr(contact, name):
            raise InvalidInput("required", field=name)
    for name in ("name", "company", "email", "country", "vat_id"):
        value = getattr(contact, name)
        text_input.check_optional(value, name)
        if value and _MARKUP.search(value):
            raise InvalidInput("must not contain markup", field=name)
    # free text (a message, a reference) may hold markup, which every page escapes
    text_input.check_optional(contact.message, "message", multiline=True)
    text_input.check_optional(partner_reference, "partner_reference")
    if not 1 <= contact.quantity <= MAX_QUANTITY:
        raise InvalidInput(f"must be from 1 to {MAX_QUANTITY}", field="quantity")


def sold_gpu(catalog: Catalog, slug: str) -> GpuRecord:
    """The catalog's card of ``slug`` if the shop sells it: a comparison card is
    never quoted. Raises NotFound / InvalidInput naming ``item_slug``."""
    gpu = catalog.gpu(slug)
    if gpu.comparison_only:
        raise InvalidInput("a comparison card, not sold by the shop", field="item_slug")
    return gpu


class Item(NamedTuple):
    """The card or system a customer asks for, as the page showed it: its name, its net
    price (None: on request), whether that price was the seed's public list price (shown
    "indicative") and its fit in the sizing (empty when the sizing holds no row for it)."""

    name: str
    price: Decimal | None
    indicative: bool
    fit: dict[str, Any]


def _item(catalog: Catalog, sizing: Sizing, kind: ItemKind, slug: str) -> Item:
    if kind == "gpu":
        gpu = sold_gpu(catalog, slug)
        fit = next((f for f in sizing.result.fits if f.gpu == slug), None)
        return Item(gpu.name, gpu.price_eur_net, _indicative(gpu.price_eur_net, gpu),
                    asdict(fit) if fit else {})
    system = catalog.system(slug)
    row = next((r for r in sizing.systems if r.system.slug == slug), None)
    fit_data: dict[str, Any] = {}
    if row is not None:
        fit_data = {
            "gpu": row.gpu.slug, "gpus": row.gpus, "sharding": row.sharding, "fits": row.fits,
            "total_bytes_per_gpu": row.total_bytes_per_gpu,
            "free_bytes_per_gpu": row.free_bytes_per_gpu, "max_batch_size": row.max_batch_size,
            "setup": asdict(row.setup) if row.setup is not None else None,
        }
    return Item(system.name, system.price_eur_net, _indicative(system.price_eur_net, system),
                fit_data)


def _indicative(price: Decimal | None, record: GpuRecord | SystemRecord) -> bool:
    """A price shown "indicative": there is one, and it is still the seed's list price."""
    return price is not None and record.price_indicative


def snapshot(sizing: Sizing, item_fit: dict[str, Any], query: dict[str, str]) -> dict[str, Any]:
    """The whole sizing as the customer saw it, JSON-ready."""
    return {
        "calculator": query,
        "item_fit": item_fit,
        "result": sizing.result.to_dict(),
        "systems": [
            {"slug": r.system.slug, "name": r.system.name, "gpu": r.gpu.slug, "gpus": r.gpus,
             "sharding": r.sharding, "fits": r.fits,
             "total_bytes_per_gpu": r.total_bytes_per_gpu,
             "free_bytes_per_gpu": r.free_bytes_per_gpu, "max_batch_size": r.max_batch_size,
             "setup": asdict(r.setup) if r.setup is not None else None}
            for r in sizing.systems
        ],
    }


def serving_item(catalog: Catalog, sizing: ServingSizing, request: ServingRequest,
                 kind: ItemKind, slug: str) -> Item:
    """The name, price and serving fit of the card or system asked for, as the Serve page
    showed its row: the card on as many cards as the customer set (``gpus``), or the system
    with all its cards tensor parallel; the fit is empty when the sizing holds no row for it
    (a card other than the one the customer checked)."""
    if kind == "gpu":
        gpu = sold_gpu(catalog, slug)
        fit = next((f for f in sizing.result.fits if f.gpu == slug), None)
        return Item(gpu.name, gpu.price_eur_net, _indicative(gpu.price_eur_net, gpu),
                    {**asdict(fit), "gpus": request.job.gpus} if fit is not None else {})
    system = catalog.system(slug)
    row = next((r for r in sizing.systems if r.system.slug == slug), None)
    return Item(system.name, system.price_eur_net, _indicative(system.price_eur_net, system),
                {**asdict(row.fit), "gpu": row.gpu.slug, "gpus": row.gpus}
                if row is not None else {})


def serving_snapshot(sizing: ServingSizing, item_fit: dict[str, Any], query: dict[str, str],
                     model_name: str) -> dict[str, Any]:
    """The whole serving sizing as the customer saw it on /serve, JSON-ready (with the
    model's Hub name, which pages show)."""
    return {
        "workload": "serving",
        "model_name": model_name,
        "calculator": query,
        "item_fit": item_fit,
        "result": sizing.result.to_dict(),
        "systems": [
            {"slug": r.system.slug, "name": r.system.name, "gpu": r.gpu.slug, "gpus": r.gpus,
             "fits": r.fit.fits, "max_concurrency": r.fit.max_concurrency,
             "total_bytes_per_gpu": r.fit.per_gpu_bytes.total}
            for r in sizing.systems
        ],
    }


def create_request(
    session: Session, *, catalog: Catalog, estimate: EstimateRequest,
    estimates: EstimateCache, calculator_query: dict[str, str], item_kind: ItemKind,
    item_slug: str, contact: Contact, locale: str, partner_id: int | None = None,
    partner_reference: str | None = None,
) -> QuoteRequestRecord:
    """Store a quote request with its sizing snapshot. Raises InvalidInput / NotFound.

    ``partner_id`` marks a request a partner made through the API for its customer; the
    sizing is remembered in (or taken from) ``estimates``, the calculator's answer cache."""
    _check(contact, partner_reference)
    sizing = estimates_service.sizing(catalog, estimate, cache=estimates)
    item = _item(catalog, sizing, item_kind, item_slug)
    return _store(
        session, workload="training", kind=(item_kind, item_slug), item=item,
        query=calculator_query, engine_version=sizing.result.engine_version,
        sizing=snapshot(sizing, item.fit, calculator_query), contact=contact, locale=locale,
        partner_id=partner_id, partner_reference=partner_reference)


def create_serving_request(
    session: Session, *, catalog: Catalog, serving: ServingRequest, estimates: EstimateCache,
    calculator_query: dict[str, str], item_kind: ItemKind, item_slug: str, contact: Contact,
    locale: str, partner_id: int | None = None, partner_reference: str | None = None,
    model_name: str | None = None,
) -> QuoteRequestRecord:
    """Store a quote request asked from the Serve page (or for a serving job through the
    partner API, ``partner_id`` set) with its serving sizing (recomputed here, never taken
    from the browser): workload "serving", the Serve page's inputs in ``calculator_query``.
    ``model_name`` is what the customer named a model the catalog lacks by (a Hugging Face
    repository id, as typed); the pages show it. Raises InvalidInput / NotFound naming the
    field."""
    _check(contact, partner_reference)
    sizing = serving_service.serving_sizing(catalog, serving, cache=estimates)
    item = serving_item(catalog, sizing, serving, item_kind, item_slug)
    return _store(
        session, workload="serving", kind=(item_kind, item_slug), item=item,
        query=calculator_query, engine_version=sizing.result.engine_version,
        sizing=serving_snapshot(sizing, item.fit, calculator_query,
                                model_name or _model_name(catalog, serving)),
        contact=contact, locale=locale, partner_id=partner_id,
        partner_reference=partner_reference)


MODEL_NAME_CHARS = 200
"""The most of a config.json's own name a serving request keeps (a Hub id is at most 96)."""


def _model_name(catalog: Catalog, serving: ServingRequest) -> str:
    """The catalog model's Hub name (a request from /serve always names a catalog model); for
    a partner's config.json its ``_name_or_path``, else its ``model_type``."""
    if serving.model_slug is None:
        config = serving.model_config or {}
        name = config.get("_name_or_path") or config.get("model_type") or ""
        return name[:MODEL_NAME_CHARS] if isinstance(name, str) else ""
    return estimates_service.find_model(catalog, serving.model_slug).hf_id


def _store(session: Session, *, workload: Workload, kind: tuple[ItemKind, str], item: Item,
           query: dict[str, str],
           engine_version: str, sizing: dict[str, Any], contact: Contact, locale: str,
           partner_id: int | None = None,
           partner_reference: str | None = None) -> QuoteRequestRecord:
    item_kind, slug = kind
    row = QuoteRequest(
        token=secrets.token_urlsafe(TOKEN_BYTES), reference=_reference(session), locale=locale,
        name=contact.name, company=contact.company, email=contact.email,
        country=contact.country, vat_id=contact.vat_id, message=contact.message,
        quantity=contact.quantity, item_kind=item_kind, item_slug=slug, item_name=item.name,
        item_sku_price_eur_net=item.price, item_price_indicative=item.indicative,
        calculator_query=urlencode(query),
        engine_version=engine_version, sizing=sizing, workload=workload,
        partner_id=partner_id, partner_reference=partner_reference,
    )
    return repository.add(session, row)


def get_request(session: Session, *, token: str) -> QuoteRequestRecord:
    """A stored request by its token; NotFound otherwise (no hint whether it ever existed), 422
    on ``token`` for a control character."""
    text_input.check(token, "token")
    if len(token) > 64:
        raise NotFound("quote request not found")
    record = repository.get_by_token(session, token)
    if record is None:
        raise NotFound("quote request not found")
    return record
