"""Domain errors and HTTP errors as customer pages (docs/architecture.md rule 9, HTML surface).

Paths under ``/api/`` are left to the partner API's own problem+json handling: for them these
handlers answer JSON, so registering the HTML surface never changes what partners get.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.db.session import RETRY_AFTER_S, is_unavailable
from app.errors import DomainError
from app.html.htmx import is_htmx
from app.html.templating import render

logger = logging.getLogger(__name__)


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
    if exc.status_code == 415 and not _is_api(request):  # only pages read forms
        return _page(request, exc.status_code, None)
    return await http_exception_handler(request, exc)


async def database_error(request: Request, exc: Exception) -> Response:
    """A database outage is the service's problem, not the customer's: 503 and a retry hint,
    and the request's transaction was rolled back, so nothing half-written stays. (The partner
    API answers its own, as problem+json: :func:`app.api.v1.problems.on_database`.)"""
    if not is_unavailable(exc):
        raise exc
    logger.warning("database unavailable on %s %s", request.method, request.url.path,
                   exc_info=exc)
    response = _page(request, 503, None)
    response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return response


def register(app: FastAPI) -> None:
    app.add_exception_handler(SQLAlchemyError, database_error)
    app.add_exception_handler(DomainError, domain_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
