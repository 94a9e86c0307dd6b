"""How the staff desk answers a missing session (redirect to sign-in) and a refusal (403)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import Response

from app.html import htmx
from app.staff.deps import SignInRequired, StaffForbidden
from app.staff.views import page


async def sign_in_required(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SignInRequired)
    return htmx.redirect(request, exc.next_url)


async def forbidden(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StaffForbidden)
    return page(request, "staff/error.html", {"reason": exc.reason}, blocks=("message",),
                status_code=403)


def register(app: FastAPI) -> None:
    app.add_exception_handler(SignInRequired, sign_in_required)
    app.add_exception_handler(StaffForbidden, forbidden)
