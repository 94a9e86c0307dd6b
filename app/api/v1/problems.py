"""RFC 9457 problem details for every error under /api (docs/architecture.md rule 9, JSON surface).

Each problem has a ``type`` that points at its entry on the docs page, a stable ``code``,
and for 422 one ``errors`` entry per invalid field (``location``, ``reason``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.db.session import RETRY_AFTER_S, is_unavailable
from app.errors import DomainError
from app.ops.middleware import route_label

logger = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"
DOCS = "/api/v1/docs"

TITLES: dict[int, tuple[str, str]] = {
    400: ("Bad request", "bad_request"),
    401: ("Unauthorized", "unauthorized"),
    404: ("Not found", "not_found"),
    405: ("Method not allowed", "method_not_allowed"),
    409: ("Conflict", "conflict"),
    413: ("Content too large", "content_too_large"),
    415: ("Unsupported media type", "unsupported_media_type"),
    422: ("Invalid input", "invalid_input"),
    429: ("Too many requests", "rate_limited"),
    500: ("Internal server error", "internal_error"),
    503: ("Service unavailable", "unavailable"),
}


class ApiProblem(Exception):
    """Raise from the API layer to answer with a problem; ``headers`` are sent along."""

    def __init__(self, status: int, detail: str, *, headers: Mapping[str, str] | None = None,
                 code: str | None = None, location: str | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = dict(headers or {})
        self.code = code
        self.location = location
        """For a 422: the one invalid field (``query.cursor``)."""


def problem(status: int, detail: str, *, code: str | None = None,
            errors: Sequence[Mapping[str, str]] | None = None,
            headers: Mapping[str, str] | None = None) -> JSONResponse:
    """The problem+json response for this status."""
    title, default_code = TITLES.get(status, ("Error", "error"))
    code = code or default_code
    body: dict[str, Any] = {
        "type": f"{DOCS}#problem-{code.replace('_', '-')}", "title": title, "status": status,
        "detail": detail, "code": code,
    }
    if errors is not None:
        body["errors"] = list(errors)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON,
                        headers=dict(headers or {}))


WORKLOAD_TAGS = ("training", "serving")
"""The tags of the job union (``schemas.JobInput``, the body of /recommendations and a quote
request's ``estimate``): Pydantic puts the chosen one after the union's own place in a
location, which names no field of the request."""
UNION_PLACES = ("body", "estimate")
"""Where the job union stands: the whole body, or a quote request's ``estimate``."""


def _location(loc: Sequence[Any]) -> str:
    parts = list(loc)
    parts = [part for i, part in enumerate(parts)
             if not (i > 0 and part in WORKLOAD_TAGS and parts[i - 1] in UNION_PLACES)]
    return ".".join(str(part) for part in parts) or "body"


def validation_errors(raw: Sequence[Any]) -> list[dict[str, str]]:
    """Pydantic's errors as one entry per field location (reasons of one field joined)."""
    by_location: dict[str, list[str]] = {}
    for error in raw:
        location = _location(error.get("loc", ()))
        reason = str(error.get("msg", "invalid"))
        if error.get("type") == "json_invalid":
            location, reason = "body", f"not valid JSON ({error.get('ctx', {}).get('error', '')})"
        reasons = by_location.setdefault(location, [])
        if reason not in reasons:
            reasons.append(reason)
    return [{"location": loc, "reason": "; ".join(reasons)} for loc, reasons in
            by_location.items()]


async def on_validation(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = validation_errors(exc.errors())
    count = len(errors)
    return problem(422, f"{count} field{'s are' if count != 1 else ' is'} invalid",
                   errors=errors)


async def on_http(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400:  # FastAPI could not read the body (not UTF-8, nested too deep)
        reason = "not a JSON document this API can read (UTF-8 JSON expected)"
        return problem(422, "1 field is invalid", errors=[{"location": "body", "reason": reason}])
    detail = exc.detail if isinstance(exc.detail, str) else TITLES.get(
        exc.status_code, ("Error", ""))[0]
    return problem(exc.status_code, detail, headers=exc.headers)


async def on_api_problem(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiProblem)
    errors = None
    if exc.location is not None:
        errors = [{"location": exc.location, "reason": exc.detail}]
    return problem(exc.status, exc.detail, code=exc.code, headers=exc.headers, errors=errors)


async def on_domain(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DomainError)
    status = exc.status_code
    if status == 422:
        errors = [{"location": f"body.{exc.field}" if exc.field else "body",
                   "reason": exc.reason}]
        return problem(422, exc.detail, errors=errors)
    return problem(status, exc.detail)


async def on_database(request: Request, exc: Exception) -> Response:
    """A database outage is 503 with Retry-After; any other database error is a 500."""
    if is_unavailable(exc):
        logger.warning("database unavailable on %s %s", request.method, route_label(request.scope),
                       exc_info=exc)
        return problem(503, "The database is briefly unavailable; nothing was stored. "
                       "Try again.", headers={"Retry-After": str(RETRY_AFTER_S)})
    return await on_unexpected(request, exc)


async def on_unexpected(request: Request, exc: Exception) -> Response:
    logger.exception("unhandled error on %s %s", request.method, route_label(request.scope),
                     exc_info=exc)
    return problem(500, "The server failed; the error was logged.")


def register(app: FastAPI) -> None:
    """Problem+json handlers for the partner API app."""
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(ApiProblem, on_api_problem)
    app.add_exception_handler(DomainError, on_domain)
    app.add_exception_handler(SQLAlchemyError, on_database)
    app.add_exception_handler(Exception, on_unexpected)
