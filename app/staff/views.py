"""Rendering for staff pages: the shared render() plus who is signed in and the CSRF token."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse

from app.accounts.staff import StaffPrincipal
from app.html.templating import render

NO_STORE = {"Cache-Control": "no-store"}


def page(
    request: Request, template: str, context: Mapping[str, Any], *,
    blocks: Iterable[str] = (), status_code: int = 200,
) -> HTMLResponse:
    """A staff page (or its blocks for htmx); never cached, since it is personal."""
    principal: StaffPrincipal | None = getattr(request.state, "staff", None)
    return render(
        request, template,
        {"staff": principal, "csrf_token": principal.csrf_token if principal else "",
         **context},
        blocks=blocks, status_code=status_code, headers=NO_STORE,
    )
