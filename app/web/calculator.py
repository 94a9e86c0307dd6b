"""The calculator at ``/``: the same URL serves the page, the htmx result and shared links.

* ``GET /?model=...&method=...`` renders the whole result on the server (a shareable link,
  no JavaScript needed); with ``HX-Request`` only the result and the field errors.
* ``POST /`` is the no-JavaScript form and the one that carries a pasted config.json (too big
  for a URL). A catalog model is redirected (303) to its shareable GET URL; htmx gets the
  fragment plus ``HX-Push-Url`` so the address bar follows.
* ``GET /models?q=`` is the search-as-you-type over the catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app import caches
from app.catalog import hub
from app.catalog import search as catalog_search
from app.catalog import service as catalog_service
from app.catalog.schemas import Catalog
from app.config import Settings
from app.errors import DomainError, TooManyRequests, Unavailable
from app.estimates import service as estimates_service
from app.estimates.service import EstimateCache
from app.html import htmx
from app.html.forms import N_, FieldErrors, FormBody, read_form
from app.html.fragments import Rendered
from app.http import cached as cached_path
from app.http.session import DbSession
from app.ops import metrics
from app.ops.clients import client_identity
from app.web import calculator_form as form
from app.web import engine_errors, result_view, sizing_page
from app.web.calculator_form import CalculatorInput

router = APIRouter(include_in_schema=False)

TEMPLATE = "web/calculator.html"
FRAGMENTS = ("result", "field_errors", "verdict_bar")
"""htmx gets the result, the field errors and the phone's verdict bar (both out of band)."""


def size(catalog: Catalog, calc: CalculatorInput, errors: FieldErrors, *,
         cache: EstimateCache) -> tuple[Any, int]:
    """The result view, or None with the status the errors call for (422, or 404); the
    sizing is remembered in ``cache`` (the app's, ``caches.of(request).estimates``)."""
    def compute() -> result_view.ResultView:
        sizing = estimates_service.sizing(catalog, calc.estimate_request(), cache=cache)
        return result_view.build(calc, catalog, sizing)

    if calc.compare and all(g.slug != calc.compare or not g.comparison_only
                            for g in catalog.gpus):
        errors.add("compare", N_("No such comparison card in our catalog."))
    return sizing_page.size(catalog, calc.gpu, errors, compute,
                            error_field=form.engine_error_field)


def choose_hub_model(request: Request, session: Session, catalog: Catalog,
                     calc: CalculatorInput, errors: FieldErrors,
                     headers: dict[str, str] | None = None) -> int | None:
    """A Hugging Face repository id in the model field: the catalog's model of that id, or
    the repository's config.json (``app/catalog/hub.py``); a refusal goes beside the model
    field, with the status it carries (and ``Retry-After`` into ``headers`` for a 429 or a
    503). A look-up that reaches the Hub counts against the client's
    ``SIZER_HUB_LOOKUPS_PER_MINUTE`` (:func:`admit_hub_lookup`)."""
    if not calc.is_repo or errors:
        return None
    access = hub.HubAccess.of(request.app.state.settings, caches.of(request).hub,
                              admit=partial(admit_hub_lookup, request))
    try:
        choice = hub.choose_model(session, catalog, calc.model, access=access)
    except DomainError as exc:
        engine_errors.add(errors, "model", exc)
        if headers is not None and isinstance(exc, TooManyRequests):
            headers["Retry-After"] = str(exc.retry_after_s)
        elif headers is not None and isinstance(exc, Unavailable):
            headers["Retry-After"] = str(int(hub.OUTAGE_MEMORY_S))
        return exc.status_code
    if choice.slug is not None:
        calc.model = choice.slug
    else:
        calc.config, calc.hub = choice.config, choice.hub
    return None


def admit_hub_lookup(request: Request) -> None:
    """Count one anonymous Hub look-up against the client's limit per minute (issue 24,
    point 2); :class:`TooManyRequests` (429) beyond it. ``app.state.hub_limiter`` counts, in
    Redis when ``SIZER_REDIS_URL`` is set."""
    settings: Settings = request.app.state.settings
    client = client_identity(request.client.host if request.client else None)
    decision = request.app.state.hub_limiter.hit(client, limit=settings.hub_lookups_per_minute)
    if not decision.allowed:
        seconds = max(1, int(decision.reset_seconds))
        raise TooManyRequests(
            f"more than {decision.limit} Hugging Face look-ups a minute from this address; "
            f"try again in {seconds} s, or give the model's config.json instead",
            field="model", key="hub_rate_limited",
            params={"limit": decision.limit, "seconds": seconds}, retry_after_s=seconds)


def page(request: Request, session: Session, data: Mapping[str, str], *,
         calc: CalculatorInput | None = None, errors: FieldErrors | None = None,
         status: int | None = None, headers: Mapping[str, str] | None = None) -> HTMLResponse:
    """Parse, size, render: the page or, for htmx, the result and the field errors."""
    if calc is None or errors is None:
        calc, errors = form.parse(data)
    catalog = catalog_service.get_catalog(session, caches.of(request).catalog)
    retry: dict[str, str] = {}
    status = choose_hub_model(request, session, catalog, calc, errors, retry) or status
    return sized_page(request, catalog, calc, errors, status=status,
                      headers={**(headers or {}), **retry})


async def result_page(request: Request, calc: CalculatorInput, errors: FieldErrors, *,
                      status: int | None = None,
                      headers: Mapping[str, str] | None = None) -> Response:
    """:func:`page` for an async route (issue 19, point 4). An htmx result this process sent
    before, against the same catalog snapshot and in the same language, is sent again from the
    event loop: no thread, no query (the catalog from app/http/cached.py, the bytes from
    ``caches.of(request).fragments``). A result still to size and render goes to a thread
    once, as does a Hugging Face repository id (the Hub and the database); a form with
    errors, which sizes nothing, is rendered at once."""
    if calc.is_repo and not errors:
        return await run_in_threadpool(
            cached_path.in_session, request,
            lambda session: page(request, session, {}, calc=calc, errors=errors,
                                 status=status, headers=headers))
    catalog = await cached_path.catalog(request)
    if errors:
        return sized_page(request, catalog, calc, errors, status=status, headers=headers)
    kept = caches.of(request).fragments
    key = _fragment_key(request, calc, status, headers)
    if key is not None:
        rendered = kept.get(catalog, key)
        if rendered is not None:
            metrics.ESTIMATES.labels(calc.method).inc()  # as sizing() counts a remembered one
            return rendered.response()
    response = await run_in_threadpool(partial(sized_page, request, catalog, calc, errors,
                                               status=status, headers=headers))
    if key is not None and response.status_code == 200:
        kept.put(catalog, key, Rendered.of(response))
    return response


def _fragment_key(request: Request, calc: CalculatorInput, status: int | None,
                  headers: Mapping[str, str] | None) -> tuple[object, ...] | None:
    """What an htmx result depends on besides the catalog, or None when it is not kept (a
    whole page, a pasted config.json, a Hub repository)."""
    if not htmx.is_htmx(request) or calc.is_custom or calc.is_repo:
        return None
    return (request.state.lang, calc.url(), status, tuple(sorted((headers or {}).items())))


def sized_page(request: Request, catalog: Catalog, calc: CalculatorInput, errors: FieldErrors,
               *, status: int | None = None,
               headers: Mapping[str, str] | None = None) -> HTMLResponse:
    """Size against ``catalog`` and render (the whole page, or the fragments for htmx)."""
    return sizing_page.render_sizing(
        request, TEMPLATE, calc=calc, errors=errors, catalog=catalog, form=form,
        sized=size(catalog, calc, errors, cache=caches.of(request).estimates),
        blocks=FRAGMENTS, status=status, headers=headers)


@router.get("/", response_class=HTMLResponse)
def calculator(request: Request, session: DbSession) -> HTMLResponse:
    """The calculator with the result for the query (defaults on first load)."""
    return page(request, session, request.query_params)


@router.post("/", response_class=HTMLResponse)
async def calculate(request: Request, body: Annotated[FormBody, Depends(read_form)]) -> Response:
    """No-JavaScript submit and pasted configs; catalog models go to their shareable URL.
    Async: the htmx result for a job asked before costs no thread (:func:`result_page`)."""
    if body.too_large:
        calc, errors = CalculatorInput(model=form.CUSTOM_MODEL), FieldErrors()
        errors.add("config", N_("A config.json may be at most %(max)s KB."), max=256)
        return await result_page(request, calc, errors, status=413)
    calc, errors = form.parse(body.fields)
    if not errors and not calc.is_custom and not htmx.is_htmx(request):
        return Response(status_code=303, headers={"Location": calc.url()})
    push = "false" if calc.is_custom else calc.url()
    return await result_page(request, calc, errors, headers={"HX-Push-Url": push})


@router.get("/models", response_class=HTMLResponse)
def search_models(
    request: Request, session: DbSession, q: str = "", model: str = ""
) -> HTMLResponse:
    """Search-as-you-type: the model list filtered (htmx), or the calculator with it.

    The current model stays chosen when it matches; otherwise the first match is chosen and
    the ``models-filtered`` event makes the calculator form recalculate for it. A search that
    finds nothing says so beside the search box, leaves the list whole and the current model
    chosen, and asks for no recalculation: the result on screen stays what it was."""
    cached = caches.of(request)
    catalog = catalog_service.get_catalog(session, cached.catalog)
    calc = CalculatorInput()
    query = q[:catalog_search.MAX_QUERY_CHARS]
    groups = sizing_page.model_groups(catalog.models, query)
    headers = {"HX-Trigger-After-Settle": "models-filtered"}
    no_match = False
    if not groups:
        groups, headers = sizing_page.model_groups(catalog.models), {}
        if hub.is_repo_id(query.strip()):  # a Hub id: offered, chosen and sized by the form
            calc.model = query.strip()
            headers = {"HX-Trigger-After-Settle": "models-filtered"}
        else:
            no_match = True
    slugs = [m.slug for _, models in groups for m in models]
    if slugs and not calc.is_repo:
        calc.model = model if model in slugs else slugs[0]
    return sizing_page.render_sizing(
        request, TEMPLATE, calc=calc, errors=FieldErrors(), catalog=catalog, form=form,
        sized=(None, 200) if calc.is_repo else size(catalog, calc, FieldErrors(),
                                                    cache=cached.estimates),
        blocks=("model_options",), headers=headers, groups=groups, search=query,
        no_match=no_match)
