"""Documented error responses, shared by the routers (OpenAPI only; handlers in problems)."""

from __future__ import annotations

from typing import Any

from app.api.v1.schemas import Problem

PROBLEM_CONTENT: dict[str, Any] = {"application/problem+json": {}}


def _problem(description: str) -> dict[str, Any]:
    return {"model": Problem, "description": description, "content": PROBLEM_CONTENT}


AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: _problem("No key, or an unknown or revoked key (WWW-Authenticate: Bearer)."),
    429: _problem("The key's per-minute limit is used up (Retry-After, RateLimit-*)."),
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: _problem("No such slug or id.")}
INVALID: dict[int | str, dict[str, Any]] = {
    413: _problem("The body is over 4,160 KB, or model_config over 256 KB once its "
                  "quantization_config is summarised."),
    422: _problem("Invalid input: one entry per invalid field in `errors`."),
}
BAD_PARAMETER: dict[int | str, dict[str, Any]] = {
    422: _problem("An invalid query or path parameter: one entry per field in `errors`."),
}
HUB_UNAVAILABLE: dict[int | str, dict[str, Any]] = {
    503: _problem("A Hugging Face repository id in `model` could not be looked up now (the Hub "
                  "unreachable, slower than the timeout, or busy); send `model_config` instead."),
}
