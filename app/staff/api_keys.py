"""Partner API keys (admins): issue (the key is shown once), list, revoke; audited."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.accounts import api_keys, audit
from app.accounts.staff import StaffPrincipal
from app.db.session import DbSession
from app.errors import DomainError
from app.html import forms, htmx
from app.html.forms import FieldErrors
from app.staff import forms as staff_forms
from app.staff.deps import Admin, StaffForm, actor
from app.staff.views import page

router = APIRouter(prefix="/staff/api-keys", include_in_schema=False)
TEMPLATE = "staff/api_keys.html"


def _page(request: Request, session: DbSession, *, issued: str | None = None,
          values: dict[str, str] | None = None, errors: FieldErrors | None = None,
          status: int = 200) -> Response:
    return page(request, TEMPLATE, {
        "keys": api_keys.list_keys(session), "partners": api_keys.list_partners(session),
        "issued": issued, "values": values or {},
        "errors": (errors or FieldErrors()).messages,
    }, status_code=status)


@router.get("", response_class=HTMLResponse)
def key_list(request: Request, session: DbSession) -> Response:
    return _page(request, session)


@router.post("", response_class=HTMLResponse)
def issue(request: Request, session: DbSession, principal: Admin, body: StaffForm) -> Response:
    """Issue a key; the answer is the only place its plaintext ever appears."""
    data = body.fields
    errors = FieldErrors()
    partner = forms.text(data, "partner_name", errors, required=True, max_length=200)
    label = forms.text(data, "label", errors, max_length=200)
    limit_raw = data.get("rate_limit_per_minute", "").strip()
    limit = forms.integer(data, "rate_limit_per_minute", errors, default=0, minimum=1,
                          maximum=1_000_000) if limit_raw else None
    if not errors:
        try:
            record, plaintext = api_keys.issue_key(
                session, partner_name=partner, label=label, rate_limit_per_minute=limit)
        except DomainError as exc:
            session.rollback()
            staff_forms.domain_field_error(exc, errors, fallback="partner_name")
        else:
            audit.record(session, actor=actor(principal), entity="api_key",
                         entity_key=record.prefix, action="issue", before=None,
                         after={"partner": record.partner_slug, "label": record.label,
                                "rate_limit_per_minute": record.rate_limit_per_minute})
            return _page(request, session, issued=plaintext)
    return _page(request, session, values=dict(data), errors=errors, status=422)


@router.post("/{prefix}/revoke", response_class=HTMLResponse)
def revoke(request: Request, session: DbSession, principal: Admin, prefix: str,
           body: StaffForm) -> Response:
    record = api_keys.revoke_key(session, prefix=prefix)
    audit.record(session, actor=actor(principal), entity="api_key", entity_key=record.prefix,
                 action="revoke", before={"revoked": False}, after={"revoked": True})
    return htmx.redirect(request, "/staff/api-keys")


@router.post("/partners/{slug}/suspend", response_class=HTMLResponse)
def suspend_partner(request: Request, session: DbSession, principal: Admin, slug: str,
                    body: StaffForm) -> Response:
    """Every key of the partner is refused until reinstated; its quote requests stay."""
    return _set_active(request, session, principal, slug, active=False)


@router.post("/partners/{slug}/reinstate", response_class=HTMLResponse)
def reinstate_partner(request: Request, session: DbSession, principal: Admin, slug: str,
                      body: StaffForm) -> Response:
    return _set_active(request, session, principal, slug, active=True)


def _set_active(request: Request, session: DbSession, principal: StaffPrincipal, slug: str,
                *, active: bool) -> Response:
    if api_keys.set_partner_active(session, slug=slug, active=active):
        audit.record(session, actor=actor(principal), entity="partner", entity_key=slug,
                     action="reinstate" if active else "suspend",
                     before={"active": not active}, after={"active": active})
    return htmx.redirect(request, "/staff/api-keys")
