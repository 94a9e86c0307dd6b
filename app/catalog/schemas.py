"""Plain, immutable catalog records: what leaves the catalog domain.

No ORM object ever leaves the repository, so a template or an estimate cannot
trigger a lazy load or mutate a row by accident, and cached snapshots can be
shared between threads safely.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from app.errors import NotFound

# The catalog's vocabularies, from app/vocabularies.py (below the tables, whose CHECK
# constraints are built from them); named here, where the domain's users import them.
from app.vocabularies import STOCK_STATUSES as STOCK_STATUSES
from app.vocabularies import SYSTEM_KINDS as SYSTEM_KINDS
from app.vocabularies import StockStatus as StockStatus
from app.vocabularies import SystemKind as SystemKind

if TYPE_CHECKING:
    from app.engine.shapes import ModelShape


@dataclass(frozen=True, slots=True)
class GpuRecord:
    """One GPU SKU. Bandwidths are GB/s; ``price_eur_net`` None means price on request."""

    slug: str
    name: str
    architecture: str
    compute_capability: str
    memory_nominal_gb: int
    usable_bytes: int
    usable_basis: str
    memory_type: str
    memory_bandwidth_gbps: float
    bf16_dense_tflops: float | None
    fp8_dense_tflops: float | None
    fp4_dense_tflops: float | None
    interconnect: str
    interconnect_bandwidth_gbps: float | None
    max_power_w: int | None
    form_factor: str
    mig_instances: int | None
    price_eur_net: Decimal | None
    stock_status: str
    product_url: str | None
    active: bool
    sources: tuple[str, ...]
    updated_at: datetime | None = None
    version: int = 0
    comparison_only: bool = False
    """Not sold by the shop: a card to compare with, named on purpose only."""
    price_indicative: bool = False
    """``price_eur_net`` is the seed's public, dated price, not yet confirmed by staff."""
    price_source: str | None = None
    """Where the price comes from: the seed's source (amount, currency, rate), or "staff"."""
    price_date: str | None = None
    """When that price was published (seed, ``YYYY-MM``) or set by staff (``YYYY-MM-DD``)."""


@dataclass(frozen=True, slots=True)
class SystemRecord:
    """A configured bundle: ``gpu_count`` cards of ``gpu_slug``."""

    slug: str
    name: str
    kind: str
    gpu_slug: str
    gpu_count: int
    gpu_interconnect: str
    host_ram_gb: int | None
    price_eur_net: Decimal | None
    product_url: str | None
    stock_status: str
    active: bool
    updated_at: datetime | None = None
    version: int = 0
    price_indicative: bool = False
    """As :attr:`GpuRecord.price_indicative`."""
    price_source: str | None = None
    price_date: str | None = None


@dataclass(frozen=True, slots=True)
class ParamCounts:
    """A model's parameter counts as the catalog holds them: the engine's split
    (:class:`app.engine.shapes.ParamSplit`), the total and the count active per token (MoE).

    A stored card (:class:`ModelRecord`) and the staff import page's preview
    (``app.catalog.editing.ModelPreview``) both carry them; one definition, and one
    mapping from the engine's shape (:meth:`of`), keeps the two and the seed in step."""

    params_total: int
    params_active: int
    params_linear: int
    params_embedding: int
    params_lm_head: int
    params_norm: int
    params_other: int

    @staticmethod
    def of(shape: ModelShape) -> ParamCounts:
        """The counts of a parsed config.json."""
        return ParamCounts(
            params_total=shape.total_params, params_active=shape.active_params,
            params_linear=shape.split.linear, params_embedding=shape.split.embedding,
            params_lm_head=shape.split.lm_head, params_norm=shape.split.norm,
            params_other=shape.split.other,
        )

    def counts(self) -> dict[str, Any]:
        """The counts alone, by field name (also of a subclass), as keyword arguments for a
        record, a preview or the ORM row."""
        return {f.name: getattr(self, f.name) for f in fields(ParamCounts)}


@dataclass(frozen=True, slots=True)
class ModelRecord(ParamCounts):
    """A model card; parameter counts (:class:`ParamCounts`) are the engine's split of
    ``config``.

    ``config`` is the real Hugging Face config.json; it is shared by every
    reader of a cached snapshot, so treat it as read-only.
    """

    slug: str
    hf_id: str
    family: str
    config: Mapping[str, Any]
    max_positions: int | None
    license: str
    gated: bool
    active: bool
    updated_at: datetime | None = None
    version: int = 0


@dataclass(frozen=True, slots=True)
class Catalog:
    """A consistent snapshot of the whole catalog at one revision."""

    revision: int
    gpus: tuple[GpuRecord, ...]
    systems: tuple[SystemRecord, ...]
    models: tuple[ModelRecord, ...]

    def active_only(self) -> Catalog:
        """Only what customers may see: active rows, and systems whose GPU is active."""
        active_gpus = tuple(gpu for gpu in self.gpus if gpu.active)
        active_slugs = {gpu.slug for gpu in active_gpus}
        return replace(
            self,
            gpus=active_gpus,
            systems=tuple(s for s in self.systems if s.active and s.gpu_slug in active_slugs),
            models=tuple(model for model in self.models if model.active),
        )

    def gpu(self, slug: str) -> GpuRecord:
        """The GPU with this slug; NotFound otherwise."""
        for gpu in self.gpus:
            if gpu.slug == slug:
                return gpu
        raise NotFound(f"no GPU {slug!r} in the catalog")

    def system(self, slug: str) -> SystemRecord:
        """The system with this slug; NotFound otherwise."""
        for system in self.systems:
            if system.slug == slug:
                return system
        raise NotFound(f"no system {slug!r} in the catalog")

    def model(self, slug: str) -> ModelRecord:
        """The model with this slug; NotFound otherwise."""
        for model in self.models:
            if model.slug == slug:
                return model
        raise NotFound(f"no model {slug!r} in the catalog")
