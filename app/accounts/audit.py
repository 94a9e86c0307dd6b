"""The audit log: who changed what, when, before and after. Written in the caller's
transaction, so a change and its audit row commit together or not at all."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.tables import AuditLog


@dataclass(frozen=True, slots=True)
class Actor:
    """Who makes a change: a staff user (id and e-mail) or a tool (id None)."""

    user_id: int | None
    name: str


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: int
    at: datetime
    actor: str
    entity: str
    entity_key: str
    action: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None


def record(
    session: Session, *, actor: Actor, entity: str, entity_key: str, action: str,
    before: dict[str, Any] | None, after: dict[str, Any] | None,
) -> None:
    """Add one audit row (flushed, not committed)."""
    session.add(AuditLog(
        staff_user_id=actor.user_id, actor=actor.name[:254], entity=entity,
        entity_key=entity_key[:100], action=action, before=before, after=after,
    ))
    session.flush()


def list_entries(
    session: Session, *, limit: int = 200, entity: str | None = None
) -> list[AuditEntry]:
    """The newest entries first."""
    query = select(AuditLog).order_by(AuditLog.at.desc(), AuditLog.id.desc()).limit(limit)
    if entity:
        query = query.where(AuditLog.entity == entity)
    return [
        AuditEntry(
            id=row.id, at=row.at if row.at.tzinfo else row.at.replace(tzinfo=UTC),
            actor=row.actor, entity=row.entity, entity_key=row.entity_key, action=row.action,
            before=row.before, after=row.after,
        )
        for row in session.scalars(query)
    ]
