"""The quote desk: list and filter requests a page at a time, open one, price it with lines,
send, print; mark a request as spam (hidden from the list, kept, audited)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app import caches
from app.catalog import service as catalog_service
from app.catalog.schemas import Catalog
from app.errors import Conflict, InvalidInput
from app.html import forms, htmx
from app.html.forms import N_, FieldErrors
from app.http.session import DbSession
from app.quotes import desk
from app.quotes.desk import LineInput, VatPolicy
from app.quotes.schemas import LINE_KINDS, QUOTE_STATUSES
from app.staff import forms as staff_forms
from app.staff.deps import Principal, StaffForm, actor
from app.staff.views import page

router = APIRouter(prefix="/staff/quotes", include_in_schema=False)
LIST = "staff/quotes.html"
DETAIL = "staff/quote.html"
PRINT = "staff/quote_print.html"


def vat_policy(request: Request) -> VatPolicy:
    return VatPolicy.of(request.app.state.settings)


@router.get("", response_class=HTMLResponse)
def quote_list(request: Request, session: DbSession, status: str = "",
               before: str = "") -> Response:
    """Requests not marked as spam, newest first, :data:`desk.PAGE_SIZE` a page; ``?status=``
    filters (``spam`` shows the spam), ``?before=`` continues to older ones (the filter is an
    htmx swap too). A cursor that is no row id is refused beside the pager (422)."""
    chosen = status if status in desk.LIST_FILTERS else None
    errors = FieldErrors()
    cursor = staff_forms.row_id(before) if before else None
    if before and (cursor is None or not 0 < cursor <= desk.MAX_CURSOR):
        errors.add("before", N_("This link to older requests is not valid. The list starts "
                                "again from the newest."))
        cursor = None
    quotes = desk.list_quotes(session, status=chosen, before=cursor, limit=desk.PAGE_SIZE)
    return page(request, LIST, {"quotes": quotes.quotes, "next_before": quotes.next_before,
                                "before": cursor, "status": chosen or "",
                                "statuses": QUOTE_STATUSES, "errors": errors.messages},
                blocks=("quote_table",), status_code=422 if errors else 200)


def _catalog(request: Request, session: DbSession) -> Catalog:
    """The current catalog (revision asked now: the desk prices what it shows)."""
    return catalog_service.get_catalog(session, caches.of(request).catalog, fresh=True)


def _detail(request: Request, session: DbSession, reference: str, *,
            errors: FieldErrors | None = None, form: dict[str, str] | None = None,
            conflict: bool = False, status: int = 200) -> Response:
    quote = desk.get_quote(session, reference=reference, vat=vat_policy(request))
    catalog = _catalog(request, session)
    return page(request, DETAIL, {
        "quote": quote, "errors": (errors or FieldErrors()).messages, "form": form or {},
        "conflict": conflict, "systems": catalog.systems,
        "gpus": tuple(g for g in catalog.gpus if not g.comparison_only),  # sold cards only
    }, status_code=status)


@router.get("/{reference}", response_class=HTMLResponse)
def quote_detail(request: Request, session: DbSession, reference: str) -> Response:
    """One request: contact, sizing snapshot, lines, totals, send."""
    return _detail(request, session, reference)


@router.get("/{reference}/print", response_class=HTMLResponse)
def quote_print(request: Request, session: DbSession, reference: str) -> Response:
    """The printable quote: lines, totals, sizing breakdown, terms."""
    quote = desk.get_quote(session, reference=reference, vat=vat_policy(request))
    return page(request, PRINT, {"quote": quote})


def _line_input(data: dict[str, str], errors: FieldErrors) -> LineInput:
    kind = forms.choice(data, "item_kind", errors, choices=LINE_KINDS, default="other")
    item = data.get("item_slug", "").strip() if forms.no_control(data, "item_slug",
                                                                  errors) else ""
    if ":" in item:  # the add form's single select carries "gpu:slug" / "system:slug"
        kind, _, item = item.partition(":")
    return LineInput(
        item_kind=kind, item_slug=item or None,
        description=forms.text(data, "description", errors, max_length=200),
        quantity=forms.integer(data, "quantity", errors, default=1, minimum=1,
                               maximum=desk.MAX_QUANTITY),
        unit_price_eur_net=staff_forms.decimal(data, "unit_price", errors),
        discount_percent=staff_forms.decimal(data, "discount_percent", errors,
                                             maximum=Decimal(100)) or Decimal(0),
    )


def _apply(request: Request, session: DbSession, reference: str, data: dict[str, str],
           errors: FieldErrors, action: Callable[[], None], *, fallback: str) -> Response:
    """Run a desk action; field errors re-render with 422, a stale form with 409."""
    if not errors:
        try:
            action()
        except Conflict:
            session.rollback()
            return _detail(request, session, reference, form=data, conflict=True, status=409)
        except InvalidInput as exc:
            session.rollback()
            staff_forms.domain_field_error(exc, errors, fallback=fallback)
    if errors:
        return _detail(request, session, reference, errors=errors, form=data, status=422)
    return htmx.redirect(request, f"/staff/quotes/{reference}")



@router.post("/{reference}/lines")
def add_line(request: Request, session: DbSession, principal: Principal, reference: str,
             body: StaffForm) -> Response:
    """Add a line; the unit price defaults to the catalog's."""
    errors = FieldErrors()
    line = _line_input(body.fields, errors)
    return _apply(request, session, reference, body.fields, errors, lambda: desk.add_line(
        session, actor=actor(principal), reference=reference,
        version=staff_forms.version(body.fields),
        catalog=_catalog(request, session), line=line), fallback="item_kind")


@router.post("/{reference}/lines/{line_id}")
def update_line(request: Request, session: DbSession, principal: Principal, reference: str,
                line_id: int, body: StaffForm) -> Response:
    """Change a line's quantity, unit price, discount or description."""
    errors = FieldErrors()
    line = _line_input(body.fields, errors)
    return _apply(request, session, reference, body.fields, errors, lambda: desk.update_line(
        session, actor=actor(principal), reference=reference,
        version=staff_forms.version(body.fields), line_id=line_id,
        catalog=_catalog(request, session), line=line), fallback="quantity")


@router.post("/{reference}/lines/{line_id}/delete")
def remove_line(request: Request, session: DbSession, principal: Principal, reference: str,
                line_id: int, body: StaffForm) -> Response:
    return _apply(request, session, reference, body.fields, FieldErrors(), lambda: (
        desk.remove_line(session, actor=actor(principal), reference=reference,
                         version=staff_forms.version(body.fields), line_id=line_id)),
        fallback="lines")


@router.post("/{reference}")
def update_details(request: Request, session: DbSession, principal: Principal,
                   reference: str, body: StaffForm) -> Response:
    """Status, notes and validity date."""
    errors = FieldErrors()
    data = body.fields
    status = forms.choice(data, "status", errors, choices=QUOTE_STATUSES, default="in_progress")
    notes = forms.text(data, "staff_notes", errors, max_length=5000, multiline=True)
    valid_until = staff_forms.day(data, "valid_until", errors)
    return _apply(request, session, reference, data, errors, lambda: desk.update_details(
        session, actor=actor(principal), reference=reference,
        version=staff_forms.version(data), status=status, staff_notes=notes or None,
        valid_until=valid_until), fallback="status")


@router.post("/{reference}/send")
def send_quote(request: Request, session: DbSession, principal: Principal, reference: str,
               body: StaffForm) -> Response:
    """Freeze and send: the customer's /q/ page shows the priced quote from now on. The form's
    confirmation box must be ticked: sending cannot be undone."""
    errors = FieldErrors()
    if not forms.flag(body.fields, "confirm"):
        errors.add("confirm", N_("Tick the box to confirm: once sent, the prices are frozen."))
    return _apply(request, session, reference, body.fields, errors, lambda: desk.send(
        session, actor=actor(principal), reference=reference,
        version=staff_forms.version(body.fields), vat=vat_policy(request)), fallback="lines")


@router.post("/{reference}/spam")
def mark_spam(request: Request, session: DbSession, principal: Principal, reference: str,
              body: StaffForm) -> Response:
    """Mark as spam (``spam=1``) or take the mark back (``spam=0``); back to the list when
    the form came from there (``back=list``), else to the request."""
    spam = forms.flag(body.fields, "spam")
    errors = FieldErrors()
    try:
        desk.mark_spam(session, actor=actor(principal), reference=reference, spam=spam)
    except InvalidInput as exc:
        session.rollback()
        staff_forms.domain_field_error(exc, errors, fallback="spam")
        return _detail(request, session, reference, errors=errors, form=body.fields,
                       status=422)
    if body.fields.get("back") == "list":
        return htmx.redirect(request, "/staff/quotes")
    return htmx.redirect(request, f"/staff/quotes/{reference}")
