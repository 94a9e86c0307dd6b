"""The calculator's Serve mode at ``/serve``: the same URL serves the page, the htmx result
and shared links, as the fine-tuning calculator at ``/`` does.

* ``GET /serve?model=...&users=...`` renders the whole result on the server (a shareable
  link, no JavaScript needed); with ``HX-Request`` only the result and the field errors.
* ``POST /serve`` is the no-JavaScript form and the one that carries a pasted config.json
  (too big for a URL): a catalog model or a Hugging Face repository id is redirected (303) to
  its shareable GET URL; htmx gets the fragment plus ``HX-Push-Url`` so the address bar
  follows.
* ``GET /serve/models?q=`` is the search-as-you-type over the catalog, the fine-tune page's.

A model is named as on the fine-tune page: a catalog model, a Hugging Face repository id
(``owner/name@revision``, looked up through ``app/catalog/hub.py``) or a pasted config.json
(model ``custom``), with the same approximate marking for a type the engine does not count
exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from app import caches
from app.catalog import inline_config
from app.catalog import service as catalog_service
from app.catalog.schemas import Catalog
from app.estimates import serving as serving_service
from app.estimates.service import EstimateCache
from app.html import config_errors, htmx
from app.html.forms import FieldErrors, FormBody, read_form
from app.http.session import DbSession
from app.web import serving_form as form
from app.web import serving_view, sizing_page
from app.web.serving_form import ServeInput

router = APIRouter(include_in_schema=False)

TEMPLATE = "web/serve.html"
FRAGMENTS = ("result", "field_errors", "verdict_bar")
"""htmx gets the result, the field errors and the phone's verdict bar (both out of band)."""


def size(catalog: Catalog, calc: ServeInput, errors: FieldErrors, *,
         cache: EstimateCache) -> tuple[serving_view.ServeView | None, int]:
    """The serve view, or None with the status the errors call for (422, or 404)."""
    return sizing_page.size(
        catalog, calc.gpu, errors,
        lambda: serving_view.build(
            calc, catalog, serving_service.serving_sizing(catalog, calc.request(), cache=cache)),
        error_field=form.engine_error_field)


def page(request: Request, session: Session, data: Mapping[str, str], *,
         calc: ServeInput | None = None, errors: FieldErrors | None = None,
         status: int | None = None, headers: Mapping[str, str] | None = None) -> HTMLResponse:
    """Parse, size, render: the page or, for htmx, the result and the field errors. A Hugging
    Face repository id is looked up first (a refusal beside the model field, with its
    status)."""
    if calc is None or errors is None:
        calc, errors = form.parse(data)
    catalog = catalog_service.get_catalog(session, caches.of(request).catalog)
    retry: dict[str, str] = {}
    status = sizing_page.choose_hub_model(request, session, catalog, calc, errors,
                                          retry) or status
    return sized_page(request, catalog, calc=calc, errors=errors, status=status,
                      headers={**(headers or {}), **retry})


def sized_page(request: Request, catalog: Catalog, *, calc: ServeInput,
               errors: FieldErrors, status: int | None = None,
               headers: Mapping[str, str] | None = None) -> HTMLResponse:
    """Size against ``catalog`` and render (the whole page, or the fragments for htmx)."""
    return sizing_page.render_sizing(
        request, TEMPLATE, calc=calc, errors=errors, catalog=catalog, form=form,
        sized=size(catalog, calc, errors, cache=caches.of(request).estimates),
        blocks=FRAGMENTS, status=status, headers=headers)


async def result_page(request: Request, calc: ServeInput, errors: FieldErrors, *,
                      status: int | None = None,
                      headers: Mapping[str, str] | None = None) -> Response:
    """:func:`page` for an async route, as the fine-tune page's
    (:func:`app.web.sizing_page.answer`): one thread for a result still to size, where a sync
    route with a session took three (the session's start, the route, the session's end),
    none for one this process sent before."""
    return await sizing_page.answer(request, calc, errors, page=page, sized_page=sized_page,
                                    status=status, headers=headers)


@router.get("/serve", response_class=HTMLResponse)
def serve_page(request: Request, session: DbSession) -> HTMLResponse:
    """The Serve mode with the result for the query (defaults on first load)."""
    return page(request, session, request.query_params)


@router.post("/serve", response_class=HTMLResponse)
async def serve_submit(request: Request,
                       body: Annotated[FormBody, Depends(read_form)]) -> Response:
    """No-JavaScript submit goes to the shareable URL (a pasted config.json is sized at once:
    it fits no URL); htmx gets the fragment. A body over the form limit is refused beside the
    config field (413). Async: one thread for the sizing (:func:`result_page`)."""
    if body.too_large:
        calc, errors = ServeInput(model=form.CUSTOM_MODEL), FieldErrors()
        config_errors.add(errors, "config",
                          inline_config.size_error(inline_config.MAX_POSTED_BYTES))
        return await result_page(request, calc, errors, status=413)
    calc, errors = form.parse(body.fields)
    if not errors and not calc.is_custom and not htmx.is_htmx(request):
        return Response(status_code=303, headers={"Location": calc.url()})
    push = "false" if calc.is_custom else calc.url()
    return await result_page(request, calc, errors, headers={"HX-Push-Url": push})


@router.get("/serve/models", response_class=HTMLResponse)
def search_models(request: Request, session: DbSession, q: str = "",
                  model: str = "") -> Response:
    """Search-as-you-type in Serve mode: the fine-tune page's search
    (:func:`app.web.sizing_page.search_models`) over the same catalog."""
    return sizing_page.search_models(
        request, session, TEMPLATE, form=form,
        calc=sizing_page.searched_settings(form, request.query_params, ServeInput()),
        query=q, model=model,
        size=lambda catalog, calc: size(catalog, calc, FieldErrors(),
                                        cache=caches.of(request).estimates))
