"""Domain errors and HTTP errors as customer pages (docs/architecture.md rule 9, HTML surface).

These handlers never see a partner API request: the v1 sub-application mounted at ``/api/v1``
answers its own errors as problem+json (``app/api/v1/problems.py``), and ``app.api``'s handler,
registered after these, takes every other HTTP error on an ``/api`` path before it would reach
:func:`http_error`. So everything here renders a page (or FastAPI's plain answer for a status
that has no page).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import Response
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import text_input
from app.db.session import RETRY_AFTER_S, is_unavailable
from app.errors import DomainError
from app.html.htmx import is_htmx
from app.html.templating import render
from app.ops.middleware import route_label

logger = logging.getLogger(__name__)


def _wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "")


def _page(request: Request, status: int, detail: str | None,
          control_field: str = "") -> Response:
    return render(
        request, "errors/error.html",
        {"status": status, "detail": detail, "control_field": control_field},
        blocks=("message",), status_code=status,
    )


async def domain_error(request: Request, exc: Exception) -> Response:
    """The error page; a control character in a path or query parameter (or a /q/ token)
    names the parameter (``app/http/params.py``)."""
    assert isinstance(exc, DomainError)
    field = exc.field if exc.key == text_input.KEY else ""
    return _page(request, exc.status_code, None, control_field=field)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if (_wants_html(request) or is_htmx(request)) and exc.status_code in (404, 405):
        return _page(request, exc.status_code, None)
    if exc.status_code in (403, 415):  # a page's form sent from elsewhere, or as something else
        return _page(request, exc.status_code, None)
    return await http_exception_handler(request, exc)


async def database_error(request: Request, exc: Exception) -> Response:
    """A database outage is the service's problem, not the customer's: 503 and a retry hint,
    and the request's transaction was rolled back, so nothing half-written stays. (The partner
    API answers its own, as problem+json: :func:`app.api.v1.problems.on_database`.)"""
    if not is_unavailable(exc):
        raise exc
    logger.warning("database unavailable on %s %s", request.method, route_label(request.scope),
                   exc_info=exc)
    response = _page(request, 503, None)
    response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return response


def register(app: FastAPI) -> None:
    app.add_exception_handler(SQLAlchemyError, database_error)
    app.add_exception_handler(DomainError, domain_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
