"""Domain errors and HTTP errors as customer pages (ARCHITECTURE rule 6, HTML surface).

Paths under ``/api/`` are left to the partner API's own problem+json handling: for them these
handlers answer JSON, so registering the HTML surface never changes what partners get.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.errors import DomainError
from app.html.htmx import is_htmx
from app.html.templating import render


def _is_api(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def _wants_html(request: Request) -> bool:
    return not _is_api(request) and "text/html" in request.headers.get("accept", "")


def _page(request: Request, status: int, detail: str | None) -> Response:
    return render(
        request, "errors/error.html", {"status": status, "detail": detail},
        blocks=("message",), status_code=status,
    )


async def domain_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DomainError)
    if _is_api(request):
        return JSONResponse(
            {"type": "about:blank", "title": exc.code, "status": exc.status_code,
             "detail": exc.detail},
            status_code=exc.status_code, media_type="application/problem+json",
        )
    return _page(request, exc.status_code, None)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if (_wants_html(request) or is_htmx(request)) and exc.status_code in (404, 405):
        return _page(request, exc.status_code, None)
    return await http_exception_handler(request, exc)


def register(app: FastAPI) -> None:
    app.add_exception_handler(DomainError, domain_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
