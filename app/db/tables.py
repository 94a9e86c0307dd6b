"""Catalog tables (typed ORM).

Units are in the column names. Bandwidths named ``*_gbps`` are gigaBYTES per
second (GB/s), as NVIDIA's datasheets print memory and NVLink bandwidth.
Relationships are ``lazy="raise"`` so that no template or service can trigger a
hidden query: whoever needs related rows loads them explicitly in the repository.

Staff-owned columns (``price_eur_net``, ``stock_status``, ``active``,
``product_url``) are only written by the seed on insert; everything else is a
fact the seed files own and refresh.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    Numeric,
    String,
    Text,
    func,
    true,
)
from sqlalchemy.orm import Mapped, declared_attr, mapped_column, relationship

from app.db.base import Base, utcnow

STOCK_STATUSES: tuple[str, ...] = ("in_stock", "on_order", "on_request")
SYSTEM_KINDS: tuple[str, ...] = ("workstation", "server", "appliance")


def _in(column: str, values: tuple[str, ...]) -> str:
    quoted = ", ".join(f"'{value}'" for value in values)
    return f"{column} IN ({quoted})"


class _Timestamped:
    """updated_at and the optimistic-locking version every catalog row carries."""

    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True),
        default=utcnow,
        onupdate=utcnow,
        server_default=func.now(),
    )
    # Bumped by SQLAlchemy on every UPDATE (version_id_col); a stale staff edit
    # then fails with StaleDataError instead of silently overwriting a newer one.
    version: Mapped[int] = mapped_column(Integer, nullable=False)

    @declared_attr.directive
    def __mapper_args__(cls) -> dict[str, Any]:
        return {"version_id_col": cls.version}


class GpuSku(_Timestamped, Base):
    """A card the shop sells, with the facts the engine needs and their sources."""

    __tablename__ = "gpu_sku"
    __table_args__ = (
        CheckConstraint(_in("stock_status", STOCK_STATUSES), name="stock_status"),
        CheckConstraint("usable_bytes > 0", name="usable_bytes_positive"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    architecture: Mapped[str] = mapped_column(String(200))
    compute_capability: Mapped[str] = mapped_column(String(8))
    memory_nominal_gb: Mapped[int] = mapped_column(Integer)
    usable_bytes: Mapped[int] = mapped_column(BigInteger)
    usable_basis: Mapped[str] = mapped_column(Text)
    memory_type: Mapped[str] = mapped_column(String(200))
    memory_bandwidth_gbps: Mapped[float] = mapped_column(Float)
    bf16_dense_tflops: Mapped[float | None] = mapped_column(Float)
    fp8_dense_tflops: Mapped[float | None] = mapped_column(Float)
    fp4_dense_tflops: Mapped[float | None] = mapped_column(Float)
    interconnect: Mapped[str] = mapped_column(String(32))
    interconnect_bandwidth_gbps: Mapped[float | None] = mapped_column(Float)
    max_power_w: Mapped[int | None] = mapped_column(Integer)
    form_factor: Mapped[str] = mapped_column(String(200))
    mig_instances: Mapped[int | None] = mapped_column(Integer)
    price_eur_net: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    stock_status: Mapped[str] = mapped_column(String(16), default="on_request")
    product_url: Mapped[str | None] = mapped_column(String(500))
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    sources: Mapped[list[Any]] = mapped_column(JSON, default=list)

    systems: Mapped[list[System]] = relationship(back_populates="gpu_sku", lazy="raise")


class System(_Timestamped, Base):
    """A bundle the shop configures: N cards of one SKU in a workstation, server or appliance."""

    __tablename__ = "system"
    __table_args__ = (
        CheckConstraint(_in("stock_status", STOCK_STATUSES), name="stock_status"),
        CheckConstraint(_in("kind", SYSTEM_KINDS), name="kind"),
        CheckConstraint("gpu_count > 0", name="gpu_count_positive"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(16))
    gpu_sku_id: Mapped[int] = mapped_column(
        ForeignKey("gpu_sku.id", ondelete="RESTRICT"), index=True
    )
    gpu_count: Mapped[int] = mapped_column(Integer)
    gpu_interconnect: Mapped[str] = mapped_column(String(200))
    host_ram_gb: Mapped[int | None] = mapped_column(Integer)
    price_eur_net: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    product_url: Mapped[str | None] = mapped_column(String(500))
    stock_status: Mapped[str] = mapped_column(String(16), default="on_request")
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())

    gpu_sku: Mapped[GpuSku] = relationship(back_populates="systems", lazy="raise")


class ModelCard(_Timestamped, Base):
    """A model customers can size: its real config.json and the engine's parameter split."""

    __tablename__ = "model_card"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    slug: Mapped[str] = mapped_column(String(100), unique=True)
    hf_id: Mapped[str] = mapped_column(String(200))
    family: Mapped[str] = mapped_column(String(64))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    params_total: Mapped[int] = mapped_column(BigInteger)
    params_active: Mapped[int] = mapped_column(BigInteger)
    params_linear: Mapped[int] = mapped_column(BigInteger)
    params_embedding: Mapped[int] = mapped_column(BigInteger)
    params_lm_head: Mapped[int] = mapped_column(BigInteger)
    params_norm: Mapped[int] = mapped_column(BigInteger)
    params_other: Mapped[int] = mapped_column(BigInteger)
    max_positions: Mapped[int | None] = mapped_column(Integer)
    license: Mapped[str] = mapped_column(String(100))
    gated: Mapped[bool] = mapped_column(Boolean)
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())


class CatalogRevision(Base):
    """The single row every catalog write bumps, so other workers drop their caches.

    ``token`` changes with every bump too: a worker that cached data read inside
    a transaction that was later rolled back can never mistake another worker's
    committed revision N+1 for its own phantom N+1.
    """

    __tablename__ = "catalog_revision"
    __table_args__ = (CheckConstraint("id = 1", name="single_row"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    revision: Mapped[int] = mapped_column(BigInteger)
    token: Mapped[str] = mapped_column(String(32))
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow, server_default=func.now()
    )


QUOTE_ITEM_KINDS: tuple[str, ...] = ("gpu", "system")


class QuoteRequest(Base):
    """A customer's request for a quote, with the sizing it was asked from (a snapshot).

    ``token`` is the unguessable key of the customer's permanent page ``/q/<token>``;
    ``reference`` is the short code people quote on the phone and the shop's quote URL
    carries. ``sizing`` is the whole estimate as it was shown (engine version included), so
    a later catalog or engine change never rewrites what the customer saw.
    """

    __tablename__ = "quote_request"
    __table_args__ = (
        CheckConstraint(_in("item_kind", QUOTE_ITEM_KINDS), name="item_kind"),
        CheckConstraint("quantity > 0", name="quantity_positive"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token: Mapped[str] = mapped_column(String(64), unique=True)
    reference: Mapped[str] = mapped_column(String(16), unique=True)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, server_default=func.now()
    )
    locale: Mapped[str] = mapped_column(String(8))
    name: Mapped[str] = mapped_column(String(200))
    company: Mapped[str] = mapped_column(String(200))
    email: Mapped[str] = mapped_column(String(254))
    country: Mapped[str] = mapped_column(String(2))
    vat_id: Mapped[str | None] = mapped_column(String(32))
    message: Mapped[str | None] = mapped_column(Text)
    quantity: Mapped[int] = mapped_column(Integer)
    item_kind: Mapped[str] = mapped_column(String(16))
    item_slug: Mapped[str] = mapped_column(String(64))
    item_name: Mapped[str] = mapped_column(String(200))
    item_sku_price_eur_net: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    calculator_query: Mapped[str] = mapped_column(Text)
    engine_version: Mapped[str] = mapped_column(String(32))
    sizing: Mapped[dict[str, Any]] = mapped_column(JSON)
