"""Admin pages: the audit log (and partner API keys, in api_keys.py)."""

from __future__ import annotations

import json

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.accounts import audit
from app.http.session import DbSession
from app.staff.views import page

router = APIRouter(prefix="/staff", include_in_schema=False)
ENTITIES = ("gpu", "system", "model", "quote", "api_key")


@router.get("/audit", response_class=HTMLResponse)
def audit_log(request: Request, session: DbSession, entity: str = "") -> Response:
    """The newest 200 changes, optionally of one kind of thing."""
    chosen = entity if entity in ENTITIES else None
    entries = audit.list_entries(session, entity=chosen)
    return page(request, "staff/audit.html", {
        "entries": entries, "entity": chosen or "", "entities": ENTITIES,
        "as_json": lambda value: json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False),
    }, blocks=("audit_table",))
