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
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from app import caches
from app.catalog import inline_config
from app.catalog import service as catalog_service
from app.catalog.schemas import Catalog
from app.estimates import service as estimates_service
from app.estimates.service import EstimateCache
from app.html import config_errors, htmx
from app.html.forms import N_, FieldErrors, FormBody, read_form
from app.http.session import DbSession
from app.ops import metrics
from app.web import calculator_form as form
from app.web import result_view, sizing_page
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


def page(request: Request, session: Session, data: Mapping[str, str], *,
         calc: CalculatorInput | None = None, errors: FieldErrors | None = None,
         status: int | None = None, headers: Mapping[str, str] | None = None) -> HTMLResponse:
    """Parse, size, render: the page or, for htmx, the result and the field errors."""
    if calc is None or errors is None:
        calc, errors = form.parse(data)
    catalog = catalog_service.get_catalog(session, caches.of(request).catalog)
    retry: dict[str, str] = {}
    status = sizing_page.choose_hub_model(request, session, catalog, calc, errors, retry) or status
    return sized_page(request, catalog, calc=calc, errors=errors, status=status,
                      headers={**(headers or {}), **retry})


async def result_page(request: Request, calc: CalculatorInput, errors: FieldErrors, *,
                      status: int | None = None,
                      headers: Mapping[str, str] | None = None) -> Response:
    """:func:`page` for an async route (:func:`app.web.sizing_page.answer`): a result this
    process sent before is sent again from the event loop, counted as ``sizing()`` counts a
    remembered one."""
    return await sizing_page.answer(request, calc, errors, page=page, sized_page=sized_page,
                                    status=status, headers=headers,
                                    remembered=lambda: metrics.ESTIMATES.labels(calc.method).inc())


def sized_page(request: Request, catalog: Catalog, *, calc: CalculatorInput,
               errors: FieldErrors, status: int | None = None,
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
        config_errors.add(errors, "config",
                          inline_config.size_error(inline_config.MAX_POSTED_BYTES))
        return await result_page(request, calc, errors, status=413)
    calc, errors = form.parse(body.fields)
    if not errors and not calc.is_custom and not htmx.is_htmx(request):
        return Response(status_code=303, headers={"Location": calc.url()})
    push = "false" if calc.is_custom else calc.url()
    return await result_page(request, calc, errors, headers={"HX-Push-Url": push})


@router.get("/models", response_class=HTMLResponse)
def search_models(
    request: Request, session: DbSession, q: str = "", model: str = ""
) -> Response:
    """Search-as-you-type: the model list filtered (htmx), or the calculator with it
    (:func:`app.web.sizing_page.search_models`, which the Serve mode shares)."""
    return sizing_page.search_models(
        request, session, TEMPLATE, form=form,
        calc=sizing_page.searched_settings(form, request.query_params, CalculatorInput()),
        query=q, model=model,
        size=lambda catalog, calc: size(catalog, calc, FieldErrors(),
                                        cache=caches.of(request).estimates))
