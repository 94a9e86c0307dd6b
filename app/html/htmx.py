"""htmx request and response helpers."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response


def is_htmx(request: Request) -> bool:
    """A request htmx made to swap part of the page (not a history restore, which wants all)."""
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )


def redirect(request: Request, url: str) -> Response:
    """After a successful POST: ``HX-Redirect`` for htmx, 303 See Other for a plain form."""
    if is_htmx(request):
        return Response(status_code=200, headers={"HX-Redirect": url})
    return Response(status_code=303, headers={"Location": url})
