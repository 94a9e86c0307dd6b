"""Liveness and readiness probes for load balancers, Docker and `make run`.

/healthz answers as long as the process serves requests (restart me if not).
/readyz also proves the database is reachable and migrated to the code's head
(send me traffic only if so), and says in its body what is wrong when not; the migration
ids and the database's error text only to clients allowed to read the metrics.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from app.db.migrate import migration_state
from app.ops.access import may_read_internals

router = APIRouter(include_in_schema=False)


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is alive; touches nothing else on purpose."""
    return {"status": "ok"}


def _readiness(engine: Engine) -> tuple[int, dict[str, Any]]:
    try:
        state = migration_state(engine)
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return 503, {
            "status": "unavailable",
            "database": "unreachable",
            "detail": f"cannot connect to the database: {reason}",
        }
    body: dict[str, Any] = {
        "database": "reachable",
        "migration": {"current": state.current, "head": state.head},
    }
    if not state.at_head:
        body["status"] = "unavailable"
        body["detail"] = (
            f"database is at migration {state.current or 'none'}, code expects {state.head}; "
            "run `sizer db upgrade`"
        )
        return 503, body
    body["status"] = "ok"
    return 200, body


INTERNAL_FIELDS = ("migration", "detail")
"""What only allowed clients see (app/ops/access.py): the exact schema version and the
database's own error text. Everyone else gets status and database, all a load balancer needs."""


@router.get("/readyz")
def readyz(request: Request) -> JSONResponse:
    """200 when the database is reachable and at head; 503 naming the problem otherwise."""
    status_code, body = _readiness(request.app.state.engine)
    if not may_read_internals(request):
        body = {key: value for key, value in body.items() if key not in INTERNAL_FIELDS}
    return JSONResponse(body, status_code=status_code)
