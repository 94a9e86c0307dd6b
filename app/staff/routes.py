"""Every staff router, protected once: a live session for all but sign-in, CSRF on every
unsafe request, and admin for the admin pages (docs/architecture.md rule 8)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, FastAPI

from app.accounts.throttle import throttle_for
from app.staff import admin as admin_pages
from app.staff import api_keys, auth, catalog, errors, models, quotes
from app.staff.deps import check_csrf, require_admin


def build_routers() -> tuple[APIRouter, APIRouter]:
    """(public, protected): only the sign-in form is public."""
    protected = APIRouter(dependencies=[Depends(check_csrf)])
    protected.include_router(auth.router)
    protected.include_router(quotes.router)
    protected.include_router(catalog.router)
    protected.include_router(models.router)
    admin = APIRouter(dependencies=[Depends(require_admin)])
    admin.include_router(admin_pages.router)
    admin.include_router(api_keys.router)
    protected.include_router(admin)
    return auth.public, protected


def register(app: FastAPI) -> None:
    """Add the staff desk to the app: routers, its two error answers and the sign-in throttle
    (in Redis when ``app.state.shared_store`` holds one). Call after it is set."""
    public, protected = build_routers()
    app.include_router(public)
    app.include_router(protected)
    errors.register(app)
    app.state.staff_throttle = throttle_for(app.state.shared_store)
