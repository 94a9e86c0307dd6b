"""Catalog editing: lists, create and edit forms with optimistic locking, archive/restore."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app import caches
from app.catalog import editing
from app.catalog import service as catalog_service
from app.catalog.schemas import GpuRecord, ModelRecord, SystemRecord
from app.errors import Conflict, InvalidInput, NotFound
from app.html import htmx
from app.html.forms import FieldErrors
from app.http.session import DbSession
from app.staff import catalog_forms
from app.staff import forms as staff_forms
from app.staff.deps import Principal, StaffForm, actor
from app.staff.views import page

router = APIRouter(prefix="/staff/catalog", include_in_schema=False)
LIST = "staff/catalog_list.html"
FORM = "staff/catalog_form.html"
KINDS: dict[str, editing.Kind] = {"gpus": "gpu", "systems": "system", "models": "model"}
FIELDS = {"gpu": catalog_forms.GPU, "system": catalog_forms.SYSTEM, "model": catalog_forms.MODEL}
Record = GpuRecord | SystemRecord | ModelRecord


def _kind(plural: str) -> editing.Kind:
    if plural not in KINDS:
        raise NotFound("no such catalog list")
    return KINDS[plural]


def _records(request: Request, session: DbSession, kind: editing.Kind) -> tuple[Record, ...]:
    catalog = catalog_service.get_catalog(session, caches.of(request).catalog,
                                          include_inactive=True, fresh=True)
    if kind == "gpu":
        return catalog.gpus
    return catalog.systems if kind == "system" else catalog.models


def _record(request: Request, session: DbSession, kind: editing.Kind, slug: str) -> Record:
    for record in _records(request, session, kind):
        if record.slug == slug:
            return record
    raise NotFound(f"{slug} not found", field=kind)


@router.get("/{plural}", response_class=HTMLResponse)
def catalog_list(request: Request, session: DbSession, plural: str) -> Response:
    """Every row, archived ones too (marked)."""
    kind = _kind(plural)
    return page(request, LIST, {"kind": kind, "plural": plural,
                                "records": _records(request, session, kind)})


def _form(request: Request, session: DbSession, plural: str, *, slug: str | None,
          values: dict[str, Any], version: int | None, errors: FieldErrors | None = None,
          conflict: bool = False, active: bool = True, status: int = 200) -> Response:
    kind = _kind(plural)
    gpus = [g.slug for g in _records(request, session, "gpu")]
    price = None
    if slug is not None and kind != "model":
        record = _record(request, session, kind, slug)
        price = {"indicative": getattr(record, "price_indicative", False),
                 "source": getattr(record, "price_source", None)}
    return page(request, FORM, {
        "kind": kind, "plural": plural, "slug": slug, "values": values, "version": version,
        "fields": FIELDS[kind], "slug_field": catalog_forms.SLUG, "active": active,
        "errors": (errors or FieldErrors()).messages, "conflict": conflict,
        "choices": {"gpu_slug": gpus}, "price": price,
    }, blocks=("catalog_form",), status_code=status)


def _current(record: Record) -> dict[str, Any]:
    data = asdict(record)
    return {key: ("" if value is None else value) for key, value in data.items()}


@router.get("/{plural}/new", response_class=HTMLResponse)
def new_form(request: Request, session: DbSession, plural: str) -> Response:
    if _kind(plural) == "model":
        return htmx.redirect(request, "/staff/models/import")
    return _form(request, session, plural, slug=None, values={}, version=None)


@router.post("/{plural}/new", response_class=HTMLResponse)
def create(request: Request, session: DbSession, principal: Principal, plural: str,
           body: StaffForm) -> Response:
    """Create a GPU or system; 422 with messages beside the fields, nothing written."""
    kind = _kind(plural)
    if kind == "model":
        raise NotFound("models are imported")
    errors = FieldErrors()
    slug = catalog_forms.parse(body.fields, (catalog_forms.SLUG,), errors)["slug"]
    values = _parse(request, session, kind, body.fields, errors)
    if not errors:
        try:
            editing.create(session, cache=caches.of(request).catalog, actor=actor(principal),
                           kind=kind, slug=slug, values=values)
        except InvalidInput as exc:
            session.rollback()
            staff_forms.domain_field_error(exc, errors, fallback="name")
    if errors:
        return _form(request, session, plural, slug=None, values=dict(body.fields),
                     version=None, errors=errors, status=422)
    return htmx.redirect(request, f"/staff/catalog/{plural}/{slug}?saved=1")


def _parse(request: Request, session: DbSession, kind: editing.Kind, data: dict[str, str],
           errors: FieldErrors) -> dict[str, Any]:
    gpus = [g.slug for g in _records(request, session, "gpu")]
    return catalog_forms.parse(data, FIELDS[kind], errors, choices={"gpu_slug": gpus})


@router.get("/{plural}/{slug}", response_class=HTMLResponse)
def edit_form(request: Request, session: DbSession, plural: str, slug: str,
              saved: str = "") -> Response:
    """The edit form, carrying the version it shows."""
    record = _record(request, session, _kind(plural), slug)
    response = _form(request, session, plural, slug=slug, values=_current(record),
                     version=record.version, active=record.active)
    return response


@router.post("/{plural}/{slug}", response_class=HTMLResponse)
def save(request: Request, session: DbSession, principal: Principal, plural: str, slug: str,
         body: StaffForm) -> Response:
    """Save an edit; a stale version is a 409 with the current values and nothing written."""
    kind = _kind(plural)
    record = _record(request, session, kind, slug)
    errors = FieldErrors()
    values = _parse(request, session, kind, body.fields, errors)
    if not errors:
        try:
            editing.update(session, cache=caches.of(request).catalog, actor=actor(principal),
                           kind=kind, slug=slug,
                           version=staff_forms.version(body.fields), values=values)
        except Conflict:
            return _conflict(request, session, plural, kind, slug)
        except InvalidInput as exc:
            session.rollback()
            staff_forms.domain_field_error(exc, errors, fallback="name")
    if errors:
        return _form(request, session, plural, slug=slug, values=dict(body.fields),
                     version=staff_forms.version(body.fields), errors=errors,
                     active=record.active, status=422)
    return htmx.redirect(request, f"/staff/catalog/{plural}/{slug}?saved=1")


@router.post("/{plural}/{slug}/archive", response_class=HTMLResponse)
def archive(request: Request, session: DbSession, principal: Principal, plural: str,
            slug: str, body: StaffForm) -> Response:
    return _set_active(request, session, principal, plural, slug, body.fields, active=False)


@router.post("/{plural}/{slug}/restore", response_class=HTMLResponse)
def restore(request: Request, session: DbSession, principal: Principal, plural: str,
            slug: str, body: StaffForm) -> Response:
    return _set_active(request, session, principal, plural, slug, body.fields, active=True)


def _conflict(request: Request, session: DbSession, plural: str, kind: editing.Kind,
              slug: str) -> Response:
    """The 409 form of a stale save, archive or restore: the failed write rolled back, the
    catalog cache dropped (somebody else changed the row) and the form shown again with the
    current values and version, so the staff member sees what changed before trying again."""
    session.rollback()
    caches.of(request).catalog.forget()
    current = _record(request, session, kind, slug)
    return _form(request, session, plural, slug=slug, values=_current(current),
                 version=current.version, conflict=True, active=current.active, status=409)


def _set_active(request: Request, session: DbSession, principal: Principal, plural: str,
                slug: str, data: dict[str, str], *, active: bool) -> Response:
    kind = _kind(plural)
    try:
        editing.set_active(session, cache=caches.of(request).catalog, actor=actor(principal),
                           kind=kind, slug=slug,
                           version=staff_forms.version(data), active=active)
    except Conflict:
        return _conflict(request, session, plural, kind, slug)
    return htmx.redirect(request, f"/staff/catalog/{plural}/{slug}?saved=1")
