"""Every catalog query lives here (with :mod:`app.catalog.revision`, the revision row).

Reads come back as plain records (``app.catalog.schemas``); the ORM rows handed
out by the ``*_rows_by_slug`` helpers stay inside the catalog domain, for the
seed and for staff edits that need optimistic locking.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.catalog.schemas import GpuRecord, ModelRecord, SystemRecord
from app.db.tables import GpuSku, ModelCard, System


def gpu_record(row: GpuSku) -> GpuRecord:
    """Copy an ORM row into a record."""
    return GpuRecord(
        slug=row.slug,
        name=row.name,
        architecture=row.architecture,
        compute_capability=row.compute_capability,
        memory_nominal_gb=row.memory_nominal_gb,
        usable_bytes=row.usable_bytes,
        usable_basis=row.usable_basis,
        memory_type=row.memory_type,
        memory_bandwidth_gbps=row.memory_bandwidth_gbps,
        bf16_dense_tflops=row.bf16_dense_tflops,
        fp8_dense_tflops=row.fp8_dense_tflops,
        fp4_dense_tflops=row.fp4_dense_tflops,
        interconnect=row.interconnect,
        interconnect_bandwidth_gbps=row.interconnect_bandwidth_gbps,
        max_power_w=row.max_power_w,
        form_factor=row.form_factor,
        mig_instances=row.mig_instances,
        price_eur_net=row.price_eur_net,
        stock_status=row.stock_status,
        product_url=row.product_url,
        active=row.active,
        sources=tuple(str(source) for source in row.sources),
        updated_at=row.updated_at,
        version=row.version,
    )


def system_record(row: System, gpu_slug: str) -> SystemRecord:
    """Copy an ORM row into a record; the GPU is named by slug, not id."""
    return SystemRecord(
        slug=row.slug,
        name=row.name,
        kind=row.kind,
        gpu_slug=gpu_slug,
        gpu_count=row.gpu_count,
        gpu_interconnect=row.gpu_interconnect,
        host_ram_gb=row.host_ram_gb,
        price_eur_net=row.price_eur_net,
        product_url=row.product_url,
        stock_status=row.stock_status,
        active=row.active,
        updated_at=row.updated_at,
        version=row.version,
    )


def model_record(row: ModelCard) -> ModelRecord:
    """Copy an ORM row into a record."""
    return ModelRecord(
        slug=row.slug,
        hf_id=row.hf_id,
        family=row.family,
        config=row.config,
        params_total=row.params_total,
        params_active=row.params_active,
        params_linear=row.params_linear,
        params_embedding=row.params_embedding,
        params_lm_head=row.params_lm_head,
        params_norm=row.params_norm,
        params_other=row.params_other,
        max_positions=row.max_positions,
        license=row.license,
        gated=row.gated,
        active=row.active,
        updated_at=row.updated_at,
        version=row.version,
    )


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
