"""Application factory. Importing this module does nothing; calling create_app does.

``create_app(settings)`` takes its settings as an argument so tests build apps
on temporary databases without touching the environment; the ASGI server
uses :func:`create_app_from_env` (an import string, so several workers work).
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.staticfiles import StaticFiles

from app import api, shared_store
from app.api.v1.ratelimit import limiter_for
from app.caches import Caches
from app.config import STATIC_DIR, Settings, load_settings_or_exit
from app.db.session import make_engine, make_session_factory
from app.html import middleware as web_middleware
from app.http.params import refuse_control_characters
from app.ops import logs
from app.ops import router as ops_router
from app.ops.links import PublicRedirects
from app.ops.middleware import RequestContextMiddleware
from app.staff import routes as staff_routes
from app.web import calculator, health, pages, quotes, serving
from app.web import errors as web_errors

GZIP_LEVEL = 6
"""zlib's own default level for answers over 1 KB (see :func:`create_app`)."""


def freeze_start_up_heap() -> None:
    """Take what start-up built out of the cyclic garbage collector's sight (``gc.freeze``):
    modules, classes, functions, settings and routes live as long as the process, yet every
    collection of the oldest generation walked them all, about 167,000 objects and 98 ms of
    CPU on the development machine (2026-12-04), a pause for whichever request set it off.
    Garbage is collected first, so none is frozen with them. A standard server technique."""
    gc.collect()
    gc.freeze()


def create_app(settings: Settings, *, caches: Caches | None = None) -> FastAPI:
    """Build the app: engine, session factory and caches on ``app.state``, static files, routers.

    ``caches`` are new and empty unless given (tests hand in caches with a clock they step).

    The engine does not connect until the first query, so building an app is
    cheap and side-effect free (apart from creating a SQLite file's directory).
    """
    engine = make_engine(settings.database_url)
    store = shared_store.connect(settings)  # Redis for limits and throttling, or None

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        freeze_start_up_heap()
        yield
        gc.unfreeze()  # an app in a test process gives its objects back to the collector
        engine.dispose()
        if store is not None:
            store.close()

    app = FastAPI(title="GPU Sizer", lifespan=lifespan, docs_url=None, redoc_url=None,
                  dependencies=[Depends(refuse_control_characters)])
    app.state.settings = settings
    app.state.engine = engine
    app.state.session_factory = make_session_factory(engine)
    app.state.shared_store = store
    app.state.caches = caches or Caches()  # catalog, estimates, checked keys: see app.caches
    # POST /quote per client address, counted with the partner API's limiter (in Redis when set)
    app.state.quote_limiter = limiter_for(store, kind="quote", window_s=quotes.RATE_WINDOW_S)
    # anonymous Hugging Face look-ups per client address and minute
    app.state.hub_limiter = limiter_for(store, kind="hub", window_s=60)
    # check_dir=False: a missing static/ then fails only static requests and
    # never keeps the probes or the API from starting.
    app.mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static")
    api.mount(app, settings)  # partner JSON API at /api/v1
    app.include_router(health.router)
    app.include_router(ops_router.router)
    app.include_router(calculator.router)
    app.include_router(serving.router)
    app.include_router(quotes.router)
    app.include_router(pages.router)
    web_errors.register(app)
    api.register_errors(app)  # problem+json for /api paths, HTML pages elsewhere
    staff_routes.register(app)
    # zlib's level 6: a 31 KB result fragment compresses in half the time of Starlette's
    # level 9 (0.15 against 0.30 ms) and comes out 0.6 % larger.
    app.add_middleware(GZipMiddleware, minimum_size=1024, compresslevel=GZIP_LEVEL)
    # Starlette's own redirects (trailing slash) lead to SIZER_PUBLIC_BASE_URL, not the Host
    app.add_middleware(PublicRedirects, origin=settings.public_origin)
    app.add_middleware(RequestContextMiddleware)  # ids, timing, one log line
    web_middleware.install(app, settings)  # outermost, around Starlette's 500s too
    return app


def create_app_from_env() -> FastAPI:
    """ASGI factory for uvicorn (``app.main:create_app_from_env``): settings from SIZER_*.

    Each worker process configures its JSON logging here (spawned workers don't inherit the
    parent's logging setup)."""
    logs.configure()
    return create_app(load_settings_or_exit())
