"""What the calculator's two modes (fine-tune at ``/``, serve at ``/serve``) do alike: size a
parsed form against the catalog with its errors beside their fields, and render the page (or,
for htmx, the result and the field errors).

One copy, so a change to how a sizing is refused or rendered (a status, a context key the
shared templates read) reaches both modes at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import groupby
from types import ModuleType
from typing import Any, TypeVar

from fastapi import Request
from fastapi.responses import HTMLResponse

from app.catalog import search as catalog_search
from app.catalog.schemas import Catalog, ModelRecord
from app.errors import InvalidInput, NotFound
from app.html import forms
from app.html.forms import N_, FieldErrors
from app.html.templating import render
from app.web import engine_errors, result_view

_View = TypeVar("_View")


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
    return render(
        request, template,
        {"calc": calc, "errors": errors.messages, "view": view, "catalog": catalog,
         "groups": model_groups(catalog.models) if groups is None else groups,
         "form": form, "search": search, "stock_labels": result_view.STOCK_LABELS,
         "derivatives": derivatives(catalog), "no_match": no_match},
        blocks=blocks, status_code=status or sized_status, headers=headers,
    )
