"""Quote requests: the form from a result row, the stored request, its permanent page.

``GET /quote?item=gpu:<slug>&<calculator parameters>`` shows the short form with the sizing
it came from; ``POST /quote`` stores the request (sizing recomputed on the server) and sends
the customer to ``/q/<token>``, the permanent, unguessable page of that request.

``POST /quote`` stores at most ``SIZER_QUOTE_RATE_LIMIT_PER_HOUR`` requests per client address
and clock hour (``app.state.quote_limiter``: the partner API's fixed-window limiter, in Redis
when ``SIZER_REDIS_URL`` is set, so all workers share the count). Without it, 500 scripted
requests pushed every real one out of the staff desk's view. Only requests
that would be stored count: a customer correcting a typo spends nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from app import caches
from app.caches import Caches
from app.catalog import service as catalog_service
from app.catalog.schemas import Catalog
from app.config import Settings
from app.errors import Conflict, InvalidInput, NotFound
from app.estimates import serving as serving_service
from app.html import htmx
from app.html.forms import N_, FieldError, FieldErrors, FormBody, read_form
from app.html.templating import render
from app.http.session import DbSession
from app.ops.clients import client_identity
from app.quotes import desk
from app.quotes import service as quotes_service
from app.quotes.schemas import Contact, ItemKind, QuoteRequestRecord, Workload
from app.web import calculator, cross_site, quote_form, result_view, sizing_page
from app.web import calculator_form as calc_form
from app.web import serving_form as serve_form
from app.web.calculator_form import CalculatorInput
from app.web.cross_site import same_origin
from app.web.serving_form import ServeInput

router = APIRouter(include_in_schema=False)

FORM_TEMPLATE = "web/quote.html"
REQUEST_TEMPLATE = "web/quote_request.html"
RATE_WINDOW_S = 3600
"""The quote limit counts per clock hour: a customer asks for a handful of quotes in a sitting,
a script asks for hundreds; a minute window would let a script through 60 times as often."""


class _Decision(Protocol):
    """What the limiter answers (``app.api.v1.ratelimit.RateDecision``)."""

    @property
    def allowed(self) -> bool: ...
    @property
    def limit(self) -> int: ...
    @property
    def reset_seconds(self) -> int: ...


class QuoteLimiter(Protocol):
    """``app.state.quote_limiter``: counts one hit for a key against a limit per window."""

    def hit(self, key: str, *, limit: int) -> _Decision: ...


@dataclass(frozen=True)
class Limited:
    """A refused quote request, as the form shows it."""

    limit: int
    minutes: int


def client_key(request: Request) -> str:
    """Whom a quote request counts against: the client address (as the server resolved it,
    forwarded headers only from trusted proxies), an IPv6 one as its /64."""
    return client_identity(request.client.host if request.client else None)


def shop_quote_url(settings: Settings, record: QuoteRequestRecord) -> str | None:
    """The shop's own quote URL with SKU, quantity and reference filled in, if configured.

    Start-up refused a template with any other placeholder or a format these values cannot
    take (``app.config.QUOTE_URL_FIELDS``), so filling it in cannot fail here."""
    if not settings.quote_url_template:
        return None
    return settings.quote_url_template.format(
        sku=quote(record.item_slug, safe=""), quantity=record.contact.quantity,
        reference=quote(record.reference, safe=""),
    )


def item_label(catalog: Catalog, kind: str, slug: str) -> FieldError:
    """The card or system a quote is about, named as the result rows name it: a card by its
    name, a system in the page's language ("Server mit 4× NVIDIA H200 NVL und NVLink"), not
    by its catalog name, which the stored request keeps for the desk. NotFound if the catalog
    has no such item."""
    if kind == "gpu":
        return FieldError(catalog.gpu(slug).name)
    system = catalog.system(slug)
    gpu = next((gpu for gpu in catalog.gpus if gpu.slug == system.gpu_slug), None)
    return result_view.system_name(system, gpu)


def _stored_item_label(catalog: Catalog, record: QuoteRequestRecord) -> FieldError:
    """The customer page's name of the item asked for: as the result named it while the
    catalog still holds that item under the name the request stored, else the stored name."""
    try:
        current = (catalog.gpu(record.item_slug).name if record.item_kind == "gpu"
                   else catalog.system(record.item_slug).name)
    except NotFound:
        return FieldError(record.item_name)
    if current != record.item_name:
        return FieldError(record.item_name)
    return item_label(catalog, record.item_kind, record.item_slug)


@dataclass(frozen=True)
class _Asked:
    """What a quote form is about: the calculator input, the item, and its sizing.

    A fine-tuning request has the calculator's result ``view``; a serving one (``workload``
    "serving", from /serve) has ``item_fit``, the item's row of the serving sizing, or
    ``sizing_errors`` naming the Serve fields its link got wrong, shown on the form instead of
    an error page (the contact form is then left out: nothing can be quoted as asked)."""

    calc: CalculatorInput | ServeInput
    kind: ItemKind
    slug: str
    name: FieldError
    """What the result called the item (:func:`item_label`)."""
    catalog: Catalog
    query: dict[str, str]
    """The calculator's inputs the form carries along (hidden) and the request keeps."""
    back_url: str
    workload: Workload = "training"
    view: result_view.ResultView | None = None
    item_fit: dict[str, Any] = field(default_factory=dict)
    sizing_errors: FieldErrors = field(default_factory=FieldErrors)
    status: int = 200


def _resolve(request: Request, session: Session, cached: Caches,
             data: Mapping[str, str]) -> _Asked:
    """The item and sizing a form carries; NotFound / InvalidInput render as error pages.
    A Hugging Face repository id is looked up as the calculator looks it up."""
    item = quote_form.parse_item(data.get("item", ""))
    catalog = catalog_service.get_catalog(session, cached.catalog)
    if item is None:
        raise NotFound("no such card or system", field="item")
    kind, slug = item
    name = item_label(catalog, kind, slug)
    if data.get("workload") == "serving":
        return _resolve_serving(request, session, catalog, cached, data, kind, slug, name)
    calc, calc_errors = calc_form.parse(data)
    if calc.is_custom:
        raise InvalidInput("a pasted config.json cannot be carried into a quote link",
                           field="model")
    hub_status = sizing_page.choose_hub_model(request, session, catalog, calc, calc_errors)
    view, status = calculator.size(catalog, calc, calc_errors, cache=cached.estimates)
    status = hub_status or status
    if view is None:
        raise NotFound("not in the catalog", field="model") if status == 404 else InvalidInput(
            "the sizing parameters are not valid", field="calculator"
        )
    return _Asked(calc, kind, slug, name, catalog, query=calc.query(), back_url=calc.url(),
                  view=view)


def _resolve_serving(request: Request, session: Session, catalog: Catalog, cached: Caches,
                     data: Mapping[str, str], kind: ItemKind, slug: str,
                     name: FieldError) -> _Asked:
    """A quote link from /serve: every Serve input parsed as the Serve page parses it and the
    item's row of that serving sizing; a refused input is kept beside its field's name. A
    Hugging Face repository id is looked up as the Serve page looks it up."""
    calc, errors = serve_form.parse(data)
    if calc.is_custom:
        raise InvalidInput("a pasted config.json cannot be carried into a quote link",
                           field="model")
    hub_status = sizing_page.choose_hub_model(request, session, catalog, calc, errors)

    def item_fit() -> dict[str, Any]:
        sizing = serving_service.serving_sizing(catalog, calc.request(), cache=cached.estimates)
        return quotes_service.serving_item(catalog, sizing, calc.request(), kind, slug).fit

    fit, status = sizing_page.size(catalog, calc.gpu, errors, item_fit,
                                   error_field=serve_form.engine_error_field)
    status = hub_status or status
    return _Asked(calc, kind, slug, name, catalog,
                  query={"workload": "serving", **calc.quote_query()}, back_url=calc.url(),
                  workload="serving", item_fit=fit or {}, sizing_errors=errors, status=status)


def _form_page(request: Request, asked: _Asked, *, contact: Contact | None = None,
               errors: FieldErrors | None = None, status: int | None = None,
               limited: Limited | None = None,
               headers: Mapping[str, str] | None = None) -> HTMLResponse:
    model = next((m for m in asked.catalog.models if m.slug == asked.calc.model), None)
    return render(
        request, FORM_TEMPLATE,
        {"calc": asked.calc, "view": asked.view, "item": f"{asked.kind}:{asked.slug}",
         "item_kind": asked.kind, "item_slug": asked.slug, "item_name": asked.name,
         "workload": asked.workload, "query": asked.query, "back_url": asked.back_url,
         "model": model, "item_fit": asked.item_fit,
         "sizing_errors": asked.sizing_errors.messages,
         "contact": contact, "errors": (errors or FieldErrors()).messages,
         "countries": quote_form.countries(request.state.lang),
         "calc_labels": calc_form, "limited": limited},
        blocks=("quote_form",), status_code=status or asked.status, headers=headers,
    )


@router.get("/quote", response_class=HTMLResponse)
def quote_request_form(request: Request, session: DbSession) -> HTMLResponse:
    """The short form for the card or system of a result row."""
    asked = _resolve(request, session, caches.of(request), request.query_params)
    return _form_page(request, asked)


@router.post("/quote", response_class=HTMLResponse, dependencies=[Depends(same_origin)])
def submit_quote_request(
    request: Request, session: DbSession, body: Annotated[FormBody, Depends(read_form)]
) -> Response:
    """Store the request with its sizing; 303 (or HX-Redirect) to its permanent page."""
    if body.too_large:
        raise InvalidInput("too large", field="form")
    asked = _resolve(request, session, caches.of(request), body.fields)
    if asked.sizing_errors:
        return _form_page(request, asked)
    contact, errors = quote_form.parse_contact(body.fields)
    if errors:
        return _form_page(request, asked, contact=contact, errors=errors, status=422)
    settings: Settings = request.app.state.settings
    limiter: QuoteLimiter = request.app.state.quote_limiter
    decision = limiter.hit(client_key(request), limit=settings.quote_rate_limit_per_hour)
    if not decision.allowed:
        return _form_page(
            request, asked, contact=contact, status=429,
            limited=Limited(decision.limit, max(1, math.ceil(decision.reset_seconds / 60))),
            headers={"Retry-After": str(decision.reset_seconds)},
        )
    return htmx.redirect(request, f"/q/{_store(request, session, asked, contact).token}")


def _store(request: Request, session: Session, asked: _Asked,
           contact: Contact) -> QuoteRequestRecord:
    """The request stored with its sizing, recomputed by the service of its workload."""
    estimates = caches.of(request).estimates
    if isinstance(asked.calc, ServeInput):
        return quotes_service.create_serving_request(
            session, catalog=asked.catalog, serving=asked.calc.request(), estimates=estimates,
            calculator_query=asked.calc.quote_query(), item_kind=asked.kind,
            item_slug=asked.slug, contact=contact, locale=request.state.lang,
            model_name=asked.calc.model if asked.calc.hub is not None else None)
    return quotes_service.create_request(
        session, catalog=asked.catalog, estimate=asked.calc.estimate_request(),
        estimates=estimates, calculator_query=asked.calc.query(), item_kind=asked.kind,
        item_slug=asked.slug, contact=contact, locale=request.state.lang)


def _kind(value: str) -> ItemKind:
    return "system" if value == "system" else "gpu"


@router.get("/q/{token}", response_class=HTMLResponse)
def quote_request_page(request: Request, session: DbSession, token: str,
                       errors: FieldErrors | None = None, status: int = 200) -> HTMLResponse:
    """The customer's permanent page for one request (NotFound renders the 404 page)."""
    record = quotes_service.get_request(session, token=token)
    catalog = catalog_service.get_catalog(session, caches.of(request).catalog)
    settings: Settings = request.app.state.settings
    priced = desk.get_sent_quote(session, token=token, vat=desk.VatPolicy.of(settings))
    return render(
        request, REQUEST_TEMPLATE,
        {"record": record, "shop_url": shop_quote_url(settings, record),
         "item_label": _stored_item_label(catalog, record),
         "item_kind": _kind(record.item_kind),
         "result": record.sizing.get("result", {}), "item_fit": record.sizing.get("item_fit", {}),
         "workload": record.workload, "inputs": record.sizing.get("calculator", {}),
         "countries": dict(quote_form.countries(request.state.lang)), "quote": priced,
         "errors": (errors or FieldErrors()).messages,
         "accept_token": cross_site.accept_token(settings, token) if priced else ""},
        status_code=status,
        headers={"Cache-Control": "private, no-store", "X-Robots-Tag": "noindex"},
    )


@router.post("/q/{token}/accept", dependencies=[Depends(same_origin)])
def accept_quote(request: Request, session: DbSession, token: str,
                 body: Annotated[FormBody, Depends(read_form)]) -> Response:
    """The customer accepts the sent quote; the form's box confirms it.
    Accepting twice (a double click) answers like the first time; an expired offer is refused
    on its own page, saying so, with nothing recorded. The form must carry its page's token:
    without it the page is shown again (403), nothing recorded."""
    errors = FieldErrors()
    settings: Settings = request.app.state.settings
    priced = desk.get_sent_quote(session, token=token, vat=desk.VatPolicy.of(settings))
    if priced is None:
        raise NotFound("no sent quote at this address", field="token")
    if priced.status == "sent" and not cross_site.accept_token_ok(
            settings, token, body.fields.get("accept_token", "")):
        errors.add("confirm", N_("This page is out of date. Please reload it and accept "
                                 "the quote again."))
        return quote_request_page(request, session, token, errors=errors, status=403)
    if not body.fields.get("confirm"):
        errors.add("confirm", N_("Tick the box to accept the quote."))
        return quote_request_page(request, session, token, errors=errors, status=422)
    try:
        desk.accept(session, token=token)
    except Conflict:
        session.rollback()
        errors.add("quote", N_("This offer has expired and can no longer be accepted here; "
                               "ask your contact for a new one."))
        return quote_request_page(request, session, token, errors=errors, status=409)
    return htmx.redirect(request, f"/q/{token}?accepted=1")
