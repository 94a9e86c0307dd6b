"""Who may use /staff, and CSRF: the dependencies every staff router is protected with.

* ``require_staff``: the session cookie must name a live session, else the browser is sent to
  the sign-in page (303, or ``HX-Redirect`` for htmx) with ``next`` set.
* ``check_csrf`` (which needs ``require_staff``): every unsafe request must carry the
  session's CSRF token, as the ``csrf_token`` form field or the ``X-CSRF-Token`` header (htmx
  sends it from ``hx-headers`` on <body>); otherwise 403. SameSite=Lax cookies already stop
  most cross-site posts; the token covers the rest (old browsers, same-site subdomains).
* ``require_admin``: 403 for sales staff.
* The form of an unsafe request is read once here (urlencoded or multipart, bounded) and
  handed to the route by :func:`staff_form`.
"""

from __future__ import annotations

import secrets
from typing import Annotated
from urllib.parse import quote, urlsplit

from fastapi import Depends, Request
from starlette.datastructures import UploadFile

from app.accounts import staff as staff_accounts
from app.accounts.audit import Actor
from app.accounts.staff import StaffPrincipal
from app.html.forms import MAX_FORM_BYTES, FormBody, read_form
from app.html.return_paths import same_site_path
from app.http.session import DbSession

SESSION_COOKIE = "sizer_staff"
SIGN_IN_COOKIE = "sizer_staff_signin"
"""Double-submit token for the sign-in form itself (there is no session yet)."""
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
COOKIE_PATH = "/staff"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
MAX_UPLOAD_BYTES = 256 * 1024


class SignInRequired(Exception):
    """No (live) session: send the browser to the sign-in page."""

    def __init__(self, next_url: str) -> None:
        super().__init__(next_url)
        self.next_url = next_url


class StaffForbidden(Exception):
    """Signed in, but the request may not proceed (CSRF token missing, or not an admin)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def safe_next(value: str | None) -> str:
    """Only paths inside /staff are followed after sign-in, checked and rebuilt like every
    return path (app/html/return_paths.py: never another host, never a 500)."""
    path = same_site_path(value or "")
    if path is not None and path.startswith("/staff"):
        return path
    return "/staff/quotes"


def is_secure(request: Request) -> bool:
    """Served over TLS? uvicorn sets the scheme from X-Forwarded-Proto only for the proxies
    named in ``SIZER_FORWARDED_ALLOW_IPS`` (``sizer serve``), so the header itself is never
    read here."""
    return request.url.scheme == "https"


def require_staff(request: Request, session: DbSession) -> StaffPrincipal:
    """The signed-in staff member, or SignInRequired."""
    token = request.cookies.get(SESSION_COOKIE, "")
    principal = staff_accounts.resolve_session(session, token=token) if token else None
    if principal is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        if request.method not in SAFE_METHODS:  # come back to the page the form was on
            current = urlsplit(request.headers.get("HX-Current-URL", ""))
            target = current.path + (f"?{current.query}" if current.query else "")
        raise SignInRequired(f"/staff/sign-in?next={quote(safe_next(target), safe='/')}")
    request.state.staff = principal
    return principal


Principal = Annotated[StaffPrincipal, Depends(require_staff)]


async def _read_body(request: Request) -> FormBody:
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        return await read_form(request)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_FORM_BYTES:
        return FormBody(too_large=True)
    body = FormBody()
    async with request.form(max_files=2, max_fields=100, max_part_size=MAX_FORM_BYTES) as form:
        for name, value in form.multi_items():
            if isinstance(value, UploadFile):
                data = await value.read(MAX_UPLOAD_BYTES + 1)
                if len(data) > MAX_UPLOAD_BYTES:
                    body.too_large = True
                body.fields[name] = data.decode("utf-8", errors="replace")
            else:
                body.fields[name] = value
    return body


async def staff_form(request: Request) -> FormBody:
    """The request's form, read once (urlencoded or multipart, bounded)."""
    cached = getattr(request.state, "staff_form", None)
    if isinstance(cached, FormBody):
        return cached
    body = await _read_body(request) if request.method not in SAFE_METHODS else FormBody()
    request.state.staff_form = body
    return body


StaffForm = Annotated[FormBody, Depends(staff_form)]


async def check_csrf(request: Request, principal: Principal, form: StaffForm) -> None:
    """403 unless an unsafe request carries this session's CSRF token."""
    if request.method in SAFE_METHODS:
        return
    sent = request.headers.get(CSRF_HEADER) or form.fields.get(CSRF_FIELD, "")
    if not sent or not secrets.compare_digest(sent.encode(), principal.csrf_token.encode()):
        raise StaffForbidden("csrf")


def require_admin(principal: Principal) -> StaffPrincipal:
    """Admins only; 403 for sales."""
    if not principal.is_admin:
        raise StaffForbidden("admin")
    return principal


Admin = Annotated[StaffPrincipal, Depends(require_admin)]


def actor(principal: StaffPrincipal) -> Actor:
    """The audit log's name for the signed-in user."""
    return Actor(user_id=principal.user.id, name=principal.actor)
