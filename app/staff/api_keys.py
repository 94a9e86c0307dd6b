"""Partner API keys (admins): issue (the key is shown once), list, revoke; audited.

A key is issued for a partner picked explicitly: an existing one (``partner_id``) or a new one
(``partner_id=new`` and ``new_partner_name``). A new name that reads like an existing
partner's is refused beside the field, naming that partner."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app import caches
from app.accounts import api_keys, audit
from app.accounts.staff import StaffPrincipal
from app.errors import DomainError, NotFound
from app.html import forms, htmx
from app.html.forms import N_, FieldErrors
from app.http.session import DbSession
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


NEW_PARTNER = "new"
"""The ``partner_id`` choice that creates a partner from ``new_partner_name``."""


def _chosen_partner(data: dict[str, str], errors: FieldErrors) -> int | str | None:
    """The partner's id, or the new partner's name, from the form (None after an error)."""
    choice = data.get("partner_id", "").strip()
    new_name = forms.text(data, "new_partner_name", errors, max_length=200)
    if choice == NEW_PARTNER:
        if not new_name and "new_partner_name" not in errors.messages:
            errors.add("new_partner_name", N_("This field is required."))
        return new_name or None
    if not choice:
        errors.add("partner_id", N_("Choose a partner, or a new partner."))
        return None
    partner_id = staff_forms.row_id(choice)
    if partner_id is None:
        errors.add("partner_id", N_("Choose one of the offered values."))
        return None
    if new_name:
        errors.add("new_partner_name", N_("Leave this empty, or choose a new partner above."))
    return partner_id


def _check_existing(session: DbSession, partner_id: int, errors: FieldErrors) -> None:
    """The chosen partner must exist and be active (a suspended one's keys are refused)."""
    try:
        partner = api_keys.get_partner(session, partner_id=partner_id)
    except NotFound:
        errors.add("partner_id", N_("Choose one of the offered values."))
        return
    if not partner.active:
        errors.add("partner_id", N_("This partner is suspended. Reinstate it first."))


def _taken(exc: api_keys.PartnerNameTaken, errors: FieldErrors) -> None:
    if exc.existing_name is None:
        errors.add(exc.field, N_("A partner with a name like this was just created. Choose it "
                                 "in the list above."))
        return
    errors.add(exc.field, N_("%(asked)s reads like the existing partner %(existing)s. Choose "
                             "that partner above, or give a name that tells them apart."),
               asked=exc.name, existing=f"{exc.existing_name} ({exc.existing_slug})")


@router.post("", response_class=HTMLResponse)
def issue(request: Request, session: DbSession, principal: Admin, body: StaffForm) -> Response:
    """Issue a key for the chosen (or a new) partner; the answer is the only place its
    plaintext ever appears. Partner, key and audit rows commit together or not at all."""
    data = body.fields
    errors = FieldErrors()
    chosen = _chosen_partner(data, errors)
    label = forms.text(data, "label", errors, max_length=200)
    limit_raw = data.get("rate_limit_per_minute", "").strip()
    limit = forms.integer(data, "rate_limit_per_minute", errors, default=0, minimum=1,
                          maximum=1_000_000) if limit_raw else None
    if isinstance(chosen, int) and not errors:
        _check_existing(session, chosen, errors)
    if not errors and chosen is not None:
        try:
            if isinstance(chosen, str):
                partner = api_keys.create_partner(session, name=chosen)
                audit.record(session, actor=actor(principal), entity="partner",
                             entity_key=partner.slug, action="create", before=None,
                             after={"id": partner.id, "name": partner.name})
                chosen = partner.id
            record, plaintext = api_keys.issue_key(
                session, partner_id=chosen, label=label, rate_limit_per_minute=limit)
        except api_keys.PartnerNameTaken as exc:
            session.rollback()
            _taken(exc, errors)
        except DomainError as exc:
            session.rollback()
            staff_forms.domain_field_error(exc, errors, fallback="partner_id")
        else:
            audit.record(session, actor=actor(principal), entity="api_key",
                         entity_key=record.prefix, action="issue", before=None,
                         after={"partner_id": record.partner_id, "partner": record.partner_slug,
                                "label": record.label,
                                "rate_limit_per_minute": record.rate_limit_per_minute})
            return _page(request, session, issued=plaintext)
    return _page(request, session, values=dict(data), errors=errors, status=422)


@router.post("/{prefix}/revoke", response_class=HTMLResponse)
def revoke(request: Request, session: DbSession, principal: Admin, prefix: str,
           body: StaffForm) -> Response:
    record = api_keys.revoke_key(session, prefix=prefix, checked=caches.of(request).key_checks)
    audit.record(session, actor=actor(principal), entity="api_key", entity_key=record.prefix,
                 action="revoke", before={"revoked": False}, after={"revoked": True})
    return htmx.redirect(request, "/staff/api-keys")


@router.post("/partners/{partner_id}/suspend", response_class=HTMLResponse)
def suspend_partner(request: Request, session: DbSession, principal: Admin, partner_id: str,
                    body: StaffForm) -> Response:
    """Every key of the partner is refused until reinstated; its quote requests stay."""
    return _set_active(request, session, principal, partner_id, active=False)


@router.post("/partners/{partner_id}/reinstate", response_class=HTMLResponse)
def reinstate_partner(request: Request, session: DbSession, principal: Admin,
                      partner_id: str, body: StaffForm) -> Response:
    return _set_active(request, session, principal, partner_id, active=True)


def _set_active(request: Request, session: DbSession, principal: StaffPrincipal, raw_id: str,
                *, active: bool) -> Response:
    partner_id = staff_forms.row_id(raw_id)
    if partner_id is None:
        raise NotFound("no such partner", field="partner")
    if api_keys.set_partner_active(session, partner_id=partner_id, active=active,
                                   checked=caches.of(request).key_checks):
        slug = api_keys.get_partner(session, partner_id=partner_id).slug
        audit.record(session, actor=actor(principal), entity="partner", entity_key=slug,
                     action="reinstate" if active else "suspend",
                     before={"active": not active}, after={"active": active, "id": partner_id})
    return htmx.redirect(request, "/staff/api-keys")
