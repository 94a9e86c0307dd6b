"""What the calculator's two modes (fine-tune at ``/``, serve at ``/serve``) do alike: size a
parsed form against the catalog with its errors beside their fields, and render the page (or,
for htmx, the result and the field errors).

One copy, so a change to how a sizing is refused or rendered (a status, a context key the
shared templates read) reaches both modes at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from itertools import groupby
from types import ModuleType
from typing import Any, Protocol, TypeVar

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app import caches
from app.catalog import hub
from app.catalog import search as catalog_search
from app.catalog import service as catalog_service
from app.catalog.hub import HubModel
from app.catalog.schemas import Catalog, ModelRecord
from app.config import Settings
from app.errors import DomainError, InvalidInput, NotFound, TooManyRequests, Unavailable
from app.html import forms, htmx
from app.html.forms import N_, FieldErrors
from app.html.fragments import Rendered
from app.html.templating import render
from app.http import cached as cached_path
from app.ops.clients import client_identity
from app.web import engine_errors, result_view

_View = TypeVar("_View")

MODEL_LIST_BLOCK = "model_options"
"""The one block that shows the model list (``groups``, ``derivatives``): an htmx answer
without it (a result, its field errors, the verdict bar) neither sorts the catalog's models
into families nor looks for its derivatives."""


class ModelChoosing(Protocol):
    """A mode's parsed form as far as naming a model goes: the model field, and where it names
    a Hugging Face repository, the config.json the page looked up for it."""

    model: str
    config: Mapping[str, Any] | None
    hub: HubModel | None

    @property
    def is_repo(self) -> bool: ...

    def url(self) -> str: ...


_Calc = TypeVar("_Calc", bound=ModelChoosing)


class Answering(ModelChoosing, Protocol):
    """A mode's parsed form as an async route answers it: a model and the shareable link of
    its fields (:class:`ModelChoosing`), and whether it is a pasted config.json."""

    @property
    def is_custom(self) -> bool: ...


async def answer(request: Request, calc: Answering, errors: FieldErrors, *,
                 page: Callable[..., HTMLResponse], sized_page: Callable[..., HTMLResponse],
                 status: int | None = None, headers: Mapping[str, str] | None = None,
                 remembered: Callable[[], None] = lambda: None) -> Response:
    """Either mode's POSTed form, for an async route (``page`` and ``sized_page``: the mode's
    own, with a session and with the catalog). An htmx result this process sent before,
    against the same catalog snapshot, in the same language and with the same status and
    headers, is sent again from the event loop: no thread, no query (the catalog from
    app/http/cached.py, the bytes from ``caches.of(request).fragments``), and ``remembered()``
    counts it. A result still to size and render goes to a thread once, as does a Hugging Face
    repository id (with a session: the Hub and the database); a form with errors, which
    sizes nothing, is rendered at once."""
    asked: dict[str, Any] = {"calc": calc, "errors": errors, "status": status,
                             "headers": headers}
    sized = partial(sized_page, request, **asked)
    if calc.is_repo and not errors:
        return await run_in_threadpool(
            cached_path.in_session, request, lambda session: page(request, session, {}, **asked))
    catalog = await cached_path.catalog(request)
    if errors:
        return sized(catalog)
    kept = caches.of(request).fragments
    kept_key = None if not htmx.is_htmx(request) or calc.is_custom else (
        calc.url(), request.state.lang, status, tuple(sorted((headers or {}).items())))
    if kept_key is not None:
        rendered = kept.get(catalog, kept_key)
        if rendered is not None:
            remembered()
            return rendered.response()
    response = await run_in_threadpool(sized, catalog)
    if kept_key is not None and response.status_code == 200:
        kept.put(catalog, kept_key, Rendered.of(response))
    return response


def choose_hub_model(request: Request, session: Session, catalog: Catalog,
                     calc: ModelChoosing, errors: FieldErrors,
                     headers: dict[str, str] | None = None) -> int | None:
    """A Hugging Face repository id in the model field (either mode): the catalog's model of
    that id, or the repository's config.json (``app/catalog/hub.py``); a refusal goes beside
    the model field, with the status it carries (and ``Retry-After`` into ``headers`` for a
    429 or a 503). A look-up that reaches the Hub counts against the client's
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
    """Count one anonymous Hub look-up against the client's limit per minute;
    :class:`TooManyRequests` (429) beyond it. ``app.state.hub_limiter`` counts, in
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


def searched_settings(form: ModuleType, params: Mapping[str, str], defaults: _Calc) -> _Calc:
    """The settings a search keeps: the mode's form fields it was sent with (without
    JavaScript the search box's form carries the page's settings, hidden), or the mode's
    ``defaults`` where one of them is refused (a search answers with a list, never an error)."""
    calc, errors = form.parse(params)
    return defaults if errors else calc


def search_models(request: Request, session: Session, template: str, *, form: ModuleType,
                  calc: _Calc, query: str, model: str,
                  size: Callable[[Catalog, _Calc], tuple[object, int]]) -> Response:
    """Search-as-you-type in either mode: the model list filtered (the template's
    ``model_options`` block, for htmx), with ``calc`` (the mode's defaults) choosing from it.

    The current model stays chosen when it matches; otherwise the first match is chosen and
    the ``models-filtered`` event makes the mode's form recalculate for it. A Hugging Face
    repository id is offered and chosen (the form then sizes it). A search that finds nothing
    says so beside the search box, leaves the list whole and the current model chosen, and
    asks for no recalculation: the result on screen stays what it was. Without JavaScript a
    Hub repository id goes (303) to the mode's page that sizes it, or says why it cannot."""
    catalog = catalog_service.get_catalog(session, caches.of(request).catalog)
    query = query[:catalog_search.MAX_QUERY_CHARS]
    groups = model_groups(catalog.models, query)
    headers = {"HX-Trigger-After-Settle": "models-filtered"}
    no_match = hub_id = False
    if not groups:
        groups, headers = model_groups(catalog.models), {}
        if hub.is_repo_id(query.strip()):  # a Hub id: offered, chosen and sized by the form
            calc.model, hub_id = query.strip(), True
            if not htmx.is_htmx(request):
                return Response(status_code=303, headers={"Location": calc.url()})
            headers = {"HX-Trigger-After-Settle": "models-filtered"}
        else:
            no_match = True
    slugs = [m.slug for _, models in groups for m in models]
    if slugs and not hub_id and not (no_match and calc.is_repo):
        calc.model = model if model in slugs else slugs[0]
    return render_sizing(
        request, template, calc=calc, errors=FieldErrors(), catalog=catalog, form=form,
        sized=(None, 200) if calc.is_repo else size(catalog, calc),
        blocks=(MODEL_LIST_BLOCK,), headers=headers, groups=groups, search=query,
        no_match=no_match)


def model_groups(models: tuple[ModelRecord, ...], query: str = "") -> list[tuple[str, list[Any]]]:
    """Catalog models by family, filtered by a search text: without one, families and models
    sorted; with one, best first (``app/catalog/search.py``), each family where its best match
    stands, so the list's first model is the one the search means."""
    chosen = catalog_search.search(models, query)
    if not catalog_search.terms(query):
        chosen.sort(key=lambda m: (m.family.lower(), m.params_total))
        return [(family, list(items))
                for family, items in groupby(chosen, key=lambda m: m.family)]
    families: dict[str, list[Any]] = {}
    for model in chosen:
        families.setdefault(model.family, []).append(model)
    return list(families.items())


def derivatives(catalog: Catalog) -> frozenset[str]:
    """The slugs of the catalog's derivatives (distills, fine-tunes), labelled in the list."""
    return frozenset(m.slug for m in catalog.models if catalog_search.is_derivative(m))


def size(catalog: Catalog, gpu: str, errors: FieldErrors, compute: Callable[[], _View], *,
         error_field: Callable[[str], str]) -> tuple[_View | None, int]:
    """``compute()`` (the mode's view of its sizing), or None with the status the errors call
    for: 404 for a model or card the catalog lacks, 422 for anything else. The service's
    refusal goes beside the form field ``error_field`` maps its field to."""
    if gpu and all(record.slug != gpu or record.comparison_only for record in catalog.gpus):
        errors.add("gpu", N_("No such card in our catalog."))
    if errors:
        missing = any(errors.messages[name].message != forms.CONTROL_MESSAGE
                      for name in ("model", "gpu") if name in errors.messages)
        return None, 404 if missing else 422
    try:
        return compute(), 200
    except NotFound as exc:
        errors.add(error_field(exc.field), N_("No such model in our catalog."))
        return None, 404
    except InvalidInput as exc:
        engine_errors.add(errors, error_field(exc.field), exc)
        return None, 422


def render_sizing(request: Request, template: str, *, calc: object, errors: FieldErrors,
                  sized: tuple[object, int], catalog: Catalog, form: ModuleType,
                  blocks: tuple[str, ...], status: int | None = None,
                  headers: Mapping[str, str] | None = None,
                  groups: list[tuple[str, list[Any]]] | None = None,
                  search: str = "", no_match: bool = False) -> HTMLResponse:
    """A calculator mode's page, or for htmx its ``blocks``: the form (``calc``, its ``form``
    module's labels, bounds and ``FIELDS``, the model list), the result view and the field
    errors, and ``no_match`` when a search found no model. ``sized`` is what :func:`size`
    gave (the view and its status); ``status``, when given, is sent instead (413 for a
    config.json too large)."""
    view, sized_status = sized
    context: dict[str, Any] = {
        "calc": calc, "errors": errors.messages, "view": view, "catalog": catalog,
        "form": form, "search": search, "stock_labels": result_view.STOCK_LABELS,
        "no_match": no_match}
    if MODEL_LIST_BLOCK in blocks or not (blocks and htmx.is_htmx(request)):
        context["groups"] = model_groups(catalog.models) if groups is None else groups
        context["derivatives"] = derivatives(catalog)
    return render(request, template, context, blocks=blocks,
                  status_code=status or sized_status, headers=headers)
