"""Admin pages: the audit log (and partner API keys, in api_keys.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.accounts import audit
from app.accounts.audit import AuditEntry
from app.html.forms import N_
from app.http.session import DbSession
from app.staff.views import page

router = APIRouter(prefix="/staff", include_in_schema=False)
ENTITIES = ("gpu", "system", "model", "quote", "api_key")
ENTITY_LABELS = {
    "gpu": N_("GPU"), "system": N_("System"), "model": N_("Model"), "quote": N_("Quote"),
    "api_key": N_("API key"), "partner": N_("Partner"),
}
ACTION_LABELS = {
    "create": N_("created"), "update": N_("changed"), "import": N_("imported"),
    "restore": N_("restored"), "send": N_("sent"), "accept": N_("accepted by the customer"),
    "add_line": N_("line added"), "update_line": N_("line changed"),
    "remove_line": N_("line removed"), "mark_spam": N_("marked as spam"),
    "reinstate": N_("reinstated"), "issue": N_("issued"), "revoke": N_("revoked"),
}
"""The audit log's words in the reader's language; an action missing here
is shown as recorded."""


@dataclass(frozen=True)
class Change:
    field: str
    before: str
    after: str


def _shown(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def changes(entry: AuditEntry) -> list[Change]:
    """What an entry changed, field by field, before and after: only the
    fields whose value differs (every field of a record created or removed)."""
    before, after = entry.before or {}, entry.after or {}
    return [Change(name, _shown(before.get(name)), _shown(after.get(name)))
            for name in sorted(before.keys() | after.keys())
            if before.get(name) != after.get(name)]


@router.get("/audit", response_class=HTMLResponse)
def audit_log(request: Request, session: DbSession, entity: str = "") -> Response:
    """The newest 200 changes, optionally of one kind of thing."""
    chosen = entity if entity in ENTITIES else None
    entries = audit.list_entries(session, entity=chosen)
    return page(request, "staff/audit.html", {
        "entries": entries, "entity": chosen or "", "entities": ENTITIES,
        "entity_labels": ENTITY_LABELS, "action_labels": ACTION_LABELS, "changes": changes,
    }, blocks=("audit_table",))
