"""The partner API v1 as its own ASGI app, mounted at /api/v1 by :func:`app.api.mount`.

Its own app gives it its own OpenAPI document (/api/v1/openapi.json), its own error handlers
(problem+json only), the body limit and the rate limiter, without touching the storefront.
"""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi

from app.api.v1 import catalog, docs, estimates, problems, quote_requests, serving
from app.api.v1.limits import BodyLimitMiddleware
from app.api.v1.ratelimit import RateLimiter, RateLimitHeaders, limiter_for
from app.caches import Caches
from app.config import Settings
from app.db.session import SessionFactory
from app.http.params import refuse_control_characters_in_api
from app.shared_store import SharedStore

DESCRIPTION = (
    "Size fine-tuning jobs with the shop's engine, read the catalog, and request quotes for "
    "your customers. Authenticate with `Authorization: Bearer <key>`. Errors are RFC 9457 "
    "application/problem+json. Catalog reads carry ETag and Cache-Control. Each key may make "
    "a number of requests per minute (RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset; "
    "429 with Retry-After). Estimates and recommendations carry engine_version: when it "
    "changes, the arithmetic changed. Human-readable reference: /api/v1/docs."
)


def create_api(settings: Settings, session_factory: SessionFactory, *, caches: Caches,
               rate_limiter: RateLimiter | None = None,
               store: SharedStore | None = None) -> FastAPI:
    """The v1 app, holding the outer app's ``caches``. Its rate limiter counts in ``store``
    (Redis) when there is one."""
    api = FastAPI(
        title="GPU Sizer partner API", version="1", description=DESCRIPTION,
        openapi_url="/openapi.json", docs_url=None, redoc_url=None,
        servers=[{"url": "/api/v1"}], root_path_in_servers=False,
        dependencies=[Depends(refuse_control_characters_in_api)],
    )
    api.state.settings = settings
    api.state.session_factory = session_factory
    api.state.caches = caches
    api.state.rate_limiter = rate_limiter or limiter_for(store)
    api.include_router(catalog.router)
    api.include_router(estimates.router)
    api.include_router(serving.router)
    api.include_router(quote_requests.router)
    api.include_router(docs.router)
    problems.register(api)
    api.openapi = lambda: _openapi(api)  # type: ignore[method-assign]
    api.add_middleware(RateLimitHeaders)
    api.add_middleware(BodyLimitMiddleware)
    return api


def _openapi(api: FastAPI) -> dict[str, Any]:
    """FastAPI's document, with every error response's schema under application/problem+json
    (FastAPI files a response ``model`` under application/json)."""
    if api.openapi_schema is None:
        document = get_openapi(
            title=api.title, version=api.version, description=api.description,
            routes=api.routes, servers=api.servers,
        )
        for operations in document.get("paths", {}).values():
            for operation in operations.values():
                for status, response in operation.get("responses", {}).items():
                    content = response.get("content", {})
                    if status.startswith(("4", "5")) and "application/json" in content:
                        content["application/problem+json"] = content.pop("application/json")
        api.openapi_schema = document
    return api.openapi_schema
