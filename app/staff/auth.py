"""Sign-in and sign-out. The sign-in form is CSRF-protected by a double-submit cookie (there is
no session yet); attempts are throttled per e-mail and client address, per e-mail and per
address, counted before the password is hashed, and the hashing is rationed (503 when every
slot is busy).

The client address is the TCP peer's, or the one a proxy named in
``SIZER_FORWARDED_ALLOW_IPS`` forwarded (``sizer serve`` tells uvicorn whom to trust), never
a header any client can set; an IPv6 address counts as its /64 (:mod:`app.ops.clients`)."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from app.accounts import staff as staff_accounts
from app.accounts.passwords import HashingBusy
from app.accounts.throttle import SignInThrottling
from app.config import Settings
from app.html import htmx
from app.html.forms import N_, FieldErrors, FormBody, no_control, read_form
from app.http.session import DbSession
from app.ops.clients import client_identity
from app.staff import deps
from app.staff.deps import Principal, StaffForbidden
from app.staff.views import page

public = APIRouter(prefix="/staff", include_in_schema=False)
router = APIRouter(prefix="/staff", include_in_schema=False)
TEMPLATE = "staff/sign_in.html"


def _throttle(request: Request) -> SignInThrottling:
    """The app's throttle (``app.state``, set by :func:`app.staff.routes.register`): one per
    app in-process, so two apps never share counts; in Redis, every app on it shares them."""
    throttle: SignInThrottling = request.app.state.staff_throttle
    return throttle


def _form(request: Request, *, email: str = "", next_url: str = "/staff/quotes",
          errors: FieldErrors | None = None, status: int = 200) -> Response:
    token = request.cookies.get(deps.SIGN_IN_COOKIE) or secrets.token_urlsafe(32)
    response = page(request, TEMPLATE, {
        "email": email, "next": next_url, "signin_token": token,
        "errors": (errors or FieldErrors()).messages,
    }, blocks=("sign_in_form",), status_code=status)
    response.set_cookie(deps.SIGN_IN_COOKIE, token, httponly=True, samesite="lax",
                        secure=deps.is_secure(request), path=deps.COOKIE_PATH)
    return response


@public.get("/sign-in", response_class=HTMLResponse)
def sign_in_page(request: Request, session: DbSession, next: str = "") -> Response:
    """The sign-in form; already signed in goes straight on."""
    token = request.cookies.get(deps.SESSION_COOKIE, "")
    if token and staff_accounts.resolve_session(session, token=token) is not None:
        return htmx.redirect(request, deps.safe_next(next))
    return _form(request, next_url=deps.safe_next(next))


@public.post("/sign-in", response_class=HTMLResponse)
def sign_in(
    request: Request, session: DbSession, body: Annotated[FormBody, Depends(read_form)]
) -> Response:
    """Check the double-submit token, the throttle and the password; start a session."""
    cookie = request.cookies.get(deps.SIGN_IN_COOKIE, "")
    sent = body.fields.get(deps.CSRF_FIELD, "")
    if not cookie or not secrets.compare_digest(cookie.encode(), sent.encode()):
        raise StaffForbidden("csrf")
    email = body.fields.get("email", "").strip()[:254]
    password = body.fields.get("password", "")[:1024]
    next_url = deps.safe_next(body.fields.get("next"))
    client = client_identity(request.client.host if request.client else None)  # IPv6: its /64
    errors = FieldErrors()
    if not no_control(body.fields, "email", errors):  # never a NUL into the query
        return _form(request, next_url=next_url, errors=errors, status=422)
    throttle = _throttle(request)
    admission = throttle.admit(email=email, client=client)  # counted before any hashing
    if not admission.allowed:
        errors.add("password", N_("Too many failed attempts. Try again in %(minutes)s minutes."),
                   minutes=max(1, (admission.retry_after_s + 59) // 60))
        response = _form(request, email=email, next_url=next_url, errors=errors, status=429)
        response.headers["Retry-After"] = str(admission.retry_after_s)
        return response
    try:
        user = staff_accounts.authenticate(session, email=email, password=password)
    except HashingBusy as busy:
        throttle.withdraw(admission)  # never checked: the attempt does not count
        errors.add("password", N_("Sign-in is busy. Try again in a few seconds."))
        response = _form(request, email=email, next_url=next_url, errors=errors, status=503)
        response.headers["Retry-After"] = str(busy.retry_after_s)
        return response
    if user is None:
        errors.add("password", N_("E-mail or password is wrong."))
        return _form(request, email=email, next_url=next_url, errors=errors, status=422)
    throttle.succeeded(admission)
    settings: Settings = request.app.state.settings
    token = staff_accounts.start_session(
        session, user_id=user.id, lifetime=timedelta(hours=settings.staff_session_hours)
    )
    response = htmx.redirect(request, next_url)
    response.set_cookie(
        deps.SESSION_COOKIE, token, max_age=settings.staff_session_hours * 3600, httponly=True,
        samesite="lax", secure=deps.is_secure(request), path=deps.COOKIE_PATH,
    )
    response.delete_cookie(deps.SIGN_IN_COOKIE, path=deps.COOKIE_PATH)
    return response


@router.post("/sign-out")
def sign_out(request: Request, session: DbSession, principal: Principal) -> Response:
    """End the session (its row is deleted) and forget the cookie."""
    staff_accounts.end_session(session, session_id=principal.session_id)
    response = htmx.redirect(request, "/staff/sign-in")
    response.delete_cookie(deps.SESSION_COOKIE, path=deps.COOKIE_PATH, httponly=True,
                           samesite="lax", secure=deps.is_secure(request))
    return response


@router.get("")
def home(request: Request) -> Response:
    """The desk opens on the quote list."""
    return htmx.redirect(request, "/staff/quotes")
