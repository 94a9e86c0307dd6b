"""Every catalog query lives here (with :mod:`app.catalog.revision`, the revision row).

Reads come back as plain records (``app.catalog.schemas``); the ORM rows handed
out by the ``*_rows_by_slug`` helpers stay inside the catalog domain, for the
seed and for staff edits that need optimistic locking.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.catalog.schemas import GpuRecord, ModelRecord, SystemRecord
from app.db.tables import GpuSku, ModelCard, System

_Record = TypeVar("_Record", GpuRecord, SystemRecord, ModelRecord)


def _copied(record_type: type[_Record], row: object, **given: Any) -> _Record:
    """A record whose every field not ``given`` is the ORM row's attribute of that name.

    The three record types mirror their tables column for column (a record has no field its
    table lacks), so one copy serves all three and a new column is added to the table and the
    record only; a record field the row lacks fails at once with ``AttributeError``."""
    copied = {f.name: getattr(row, f.name) for f in fields(record_type) if f.name not in given}
    return record_type(**copied, **given)


def gpu_record(row: GpuSku) -> GpuRecord:
    """Copy an ORM row into a record (sources as a tuple of strings, not the JSON list)."""
    return _copied(GpuRecord, row, sources=tuple(str(source) for source in row.sources))


def system_record(row: System, gpu_slug: str) -> SystemRecord:
    """Copy an ORM row into a record; the GPU is named by slug, not id."""
    return _copied(SystemRecord, row, gpu_slug=gpu_slug)


def model_record(row: ModelCard) -> ModelRecord:
    """Copy an ORM row into a record."""
    return _copied(ModelRecord, row)


def list_gpus(session: Session) -> list[GpuRecord]:
    """Every GPU, active or not, by slug."""
    rows = session.scalars(select(GpuSku).order_by(GpuSku.slug))
    return [gpu_record(row) for row in rows]


def list_systems(session: Session) -> list[SystemRecord]:
    """Every system with its GPU's slug, ordered for stable pages."""
    rows = session.execute(
        select(System, GpuSku.slug)
        .join(GpuSku, System.gpu_sku_id == GpuSku.id)
        .order_by(System.slug)
    )
    return [system_record(system, gpu_slug) for system, gpu_slug in rows.tuples()]


def list_models(session: Session) -> list[ModelRecord]:
    """Every model card, by slug."""
    rows = session.scalars(select(ModelCard).order_by(ModelCard.slug))
    return [model_record(row) for row in rows]


def gpu_rows_by_slug(session: Session) -> dict[str, GpuSku]:
    """ORM rows for writers (seed, staff edits)."""
    return {row.slug: row for row in session.scalars(select(GpuSku))}


def system_rows_by_slug(session: Session) -> dict[str, System]:
    """ORM rows for writers (seed, staff edits)."""
    return {row.slug: row for row in session.scalars(select(System))}


def model_rows_by_slug(session: Session) -> dict[str, ModelCard]:
    """ORM rows for writers (seed, staff edits)."""
    return {row.slug: row for row in session.scalars(select(ModelCard))}


def gpu_row(session: Session, slug: str) -> GpuSku | None:
    """One GPU row for a writer (staff edits), or None."""
    return session.scalars(select(GpuSku).where(GpuSku.slug == slug)).one_or_none()


def system_row(session: Session, slug: str) -> tuple[System, str] | None:
    """One system row with its GPU's slug, or None."""
    found = session.execute(
        select(System, GpuSku.slug).join(GpuSku, System.gpu_sku_id == GpuSku.id)
        .where(System.slug == slug)
    ).one_or_none()
    return None if found is None else (found[0], found[1])


def model_row(session: Session, slug: str) -> ModelCard | None:
    """One model card row for a writer, or None."""
    return session.scalars(select(ModelCard).where(ModelCard.slug == slug)).one_or_none()
