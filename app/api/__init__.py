"""The partner JSON surface: versions mounted under /api, problem+json for anything else."""

from __future__ import annotations

import inspect

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.api.v1.app import create_api
from app.api.v1.problems import on_http
from app.config import Settings


def _is_api(path: str) -> bool:
    return path == "/api" or path.startswith("/api/")


def mount(app: FastAPI, settings: Settings) -> None:
    """Mount v1 at /api/v1, sharing the app's session factory, caches and shared store (Redis,
    or None). Call after ``app.state.session_factory``, ``caches`` and ``shared_store`` are
    set."""
    app.mount("/api/v1", create_api(settings, app.state.session_factory,
                                    caches=app.state.caches, store=app.state.shared_store))


def register_errors(app: FastAPI) -> None:
    """Answer HTTP errors the outer app raises for /api paths (an unknown version or path, a
    path no route can match) with problem+json; other paths keep the handler registered
    before (the storefront's HTML pages). Call after the storefront registered its own."""
    fallback = app.exception_handlers.get(StarletteHTTPException)

    async def handler(request: Request, exc: Exception) -> Response:
        if _is_api(request.url.path) or fallback is None:
            return await on_http(request, exc)
        response = fallback(request, exc)
        return await response if inspect.isawaitable(response) else response

    app.add_exception_handler(StarletteHTTPException, handler)
