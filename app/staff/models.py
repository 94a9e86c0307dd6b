"""Model import: paste or upload a config.json, see the engine's counts, then save the card."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from app import caches
from app.catalog import editing, hub, inline_config
from app.errors import DomainError, InvalidInput
from app.html import config_errors, forms, htmx, hub_errors
from app.html.forms import N_, FieldErrors
from app.http.session import DbSession
from app.staff import catalog_forms
from app.staff import forms as staff_forms
from app.staff.deps import Principal, StaffForm, actor
from app.staff.views import page

router = APIRouter(prefix="/staff/models", include_in_schema=False)
TEMPLATE = "staff/model_import.html"


def _page(request: Request, data: Mapping[str, str], *, errors: FieldErrors | None = None,
          preview: editing.ModelPreview | None = None, status: int = 200) -> Response:
    return page(request, TEMPLATE, {
        "values": dict(data), "fields": catalog_forms.MODEL, "preview": preview,
        "errors": (errors or FieldErrors()).messages,
    }, status_code=status)


@router.get("/import", response_class=HTMLResponse)
def import_form(request: Request) -> Response:
    return _page(request, {"license": "apache-2.0"})


def _fetched(request: Request, session: Session, data: dict[str, str],
             errors: FieldErrors) -> dict[str, Any] | None:
    """The config.json of the Hugging Face repository in ``hub_id`` (``app/catalog/hub.py``,
    the calculator's service: kept with its commit), or None with the refusal beside
    ``hub_id``. Fills in the Hugging Face ID when it is empty."""
    access = hub.HubAccess.of(request.app.state.settings, caches.of(request).hub)
    try:
        found = hub.hub_model(session, hub.parse_ref(data["hub_id"].strip()), access=access)
    except DomainError as exc:
        hub_errors.add(errors, "hub_id", exc)
        return None
    data["hf_id"] = data.get("hf_id", "").strip() or found.repo_id
    return dict(found.config)


def _config(data: Mapping[str, str], errors: FieldErrors) -> dict[str, Any] | None:
    """The uploaded file wins over the pasted text; read as every surface reads a config.json
    (:func:`app.catalog.inline_config.read_config_text`: a JSON object, at most 256 KB,
    nothing a database or a response cannot hold)."""
    text = data.get("config_file", "").strip() or data.get("config", "").strip()
    if not text:
        errors.add("config", N_("Paste a config.json or choose the file."))
        return None
    return config_errors.read(text, errors, "config")


@router.post("/import", response_class=HTMLResponse)
def import_model(request: Request, session: DbSession, principal: Principal,
                 body: StaffForm) -> Response:
    """``action=preview`` shows the engine's counts; ``action=save`` stores the card."""
    data = dict(body.fields)
    errors = FieldErrors()
    if body.too_large:
        config_errors.add(errors, "config", inline_config.size_error())
        return _page(request, data, errors=errors, status=422)
    for name, multiline in (("config", True), ("config_file", True), ("hub_id", False)):
        forms.no_control(data, name, errors, multiline=multiline)
    if errors:
        return _page(request, data, errors=errors, status=422)
    pasted = data.get("config_file", "").strip() or data.get("config", "").strip()
    if not pasted and data.get("hub_id", "").strip():
        config = _fetched(request, session, data, errors)
    else:
        config = _config(data, errors)
    if config is not None:  # keep what was uploaded in the text area for the next step
        data["config"] = json.dumps(config, indent=2)
    data.pop("config_file", None)
    preview = None
    if config is not None:
        try:
            preview = editing.preview_model(config=config)
        except InvalidInput as exc:
            staff_forms.domain_field_error(exc, errors, fallback="config")
    if data.get("action") != "save" or errors:
        return _page(request, data, errors=errors, preview=preview,
                     status=422 if errors else 200)
    slug = catalog_forms.parse(data, (catalog_forms.SLUG,), errors)["slug"]
    values = catalog_forms.parse(data, catalog_forms.MODEL, errors)
    if not errors and config is not None:
        try:
            editing.import_model(session, cache=caches.of(request).catalog,
                                 actor=actor(principal), slug=slug, config=config, values=values)
        except InvalidInput as exc:
            session.rollback()
            staff_forms.domain_field_error(exc, errors, fallback="config")
    if errors:
        return _page(request, data, errors=errors, preview=preview, status=422)
    return htmx.redirect(request, f"/staff/catalog/models/{slug}?saved=1")
