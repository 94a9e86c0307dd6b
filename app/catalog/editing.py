"""Staff edits of the catalog: create, edit, archive/restore GPUs, systems and model cards.

* Optimistic locking: every edit names the ``version`` its form was rendered from; a stale one
  raises Conflict before anything is written (and SQLAlchemy's version check catches the
  race between two flushes).
* Every change writes an audit row (before/after) in the same transaction and bumps the
  catalog revision, so every worker's cached catalog reloads; the caller's ``cache`` (this
  process's :class:`app.catalog.service.CatalogCache`) is dropped at once.
* Rows are never deleted: archiving sets ``active`` False (quotes and history keep pointing
  at them).
* Field problems raise ``InvalidInput(reason, field=...)``; services never commit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Literal

from sqlalchemy.orm import Session
from sqlalchemy.orm.exc import StaleDataError

from app.accounts import audit
from app.accounts.audit import Actor
from app.catalog import inline_config, repository
from app.catalog import service as catalog_service
from app.catalog.schemas import STOCK_STATUSES, SYSTEM_KINDS, ParamCounts
from app.catalog.seed import STAFF_PRICE
from app.catalog.service import CatalogCache
from app.db.tables import GpuSku, ModelCard, System
from app.engine.architectures.registry import parse_config
from app.engine.shapes import ShapeError
from app.errors import Conflict, InvalidInput, NotFound

Kind = Literal["gpu", "system", "model"]
SLUG = re.compile(r"^[a-z0-9][a-z0-9.-]{0,63}$")
MAX_PRICE = Decimal("9999999999.99")
STALE = "version: changed by someone else since you opened it"

GPU_FIELDS: tuple[str, ...] = (
    "name", "architecture", "compute_capability", "memory_nominal_gb", "usable_bytes",
    "usable_basis", "memory_type", "memory_bandwidth_gbps", "bf16_dense_tflops",
    "fp8_dense_tflops", "fp4_dense_tflops", "interconnect", "interconnect_bandwidth_gbps",
    "max_power_w", "form_factor", "mig_instances", "price_eur_net", "stock_status",
    "product_url",
)
SYSTEM_FIELDS: tuple[str, ...] = (
    "name", "kind", "gpu_slug", "gpu_count", "gpu_interconnect", "host_ram_gb",
    "price_eur_net", "stock_status", "product_url",
)
MODEL_FIELDS: tuple[str, ...] = ("hf_id", "family", "license", "gated")
PRICE_STATE: tuple[str, ...] = ("price_indicative", "price_source", "price_date")
"""Where a price comes from (audited with it): the seed's indicative price, or staff's."""

REQUIRED_TEXT = {"name", "architecture", "compute_capability", "usable_basis", "memory_type",
                 "interconnect", "form_factor", "gpu_interconnect", "hf_id", "family",
                 "license"}
POSITIVE = {"memory_nominal_gb", "usable_bytes", "memory_bandwidth_gbps", "gpu_count"}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    return value


def _state(row: GpuSku | System | ModelCard, fields: tuple[str, ...],
           extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    names = (*fields, *PRICE_STATE) if "price_eur_net" in fields else fields
    state = {name: _plain(getattr(row, name)) for name in names if hasattr(row, name)}
    state.update({"active": row.active, "version": row.version, **(extra or {})})
    return state


def _check(kind: Kind, values: Mapping[str, Any]) -> None:
    """Domain rules on submitted values (the form has parsed the types already)."""
    for name in REQUIRED_TEXT:
        if name in values and not str(values[name] or "").strip():
            raise InvalidInput("required", field=name)
    for name in POSITIVE:
        if name in values and (values[name] is None or values[name] <= 0):
            raise InvalidInput("must be greater than 0", field=name)
    for name, value in values.items():
        if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool) and value < 0:
            raise InvalidInput("must not be negative", field=name)
    price = values.get("price_eur_net")
    if price is not None and price > MAX_PRICE:
        raise InvalidInput("too large", field="price_eur_net")
    if "stock_status" in values and values["stock_status"] not in STOCK_STATUSES:
        raise InvalidInput("choose one of the offered values", field="stock_status")
    if kind == "system" and "kind" in values and values["kind"] not in SYSTEM_KINDS:
        raise InvalidInput("choose one of the offered values", field="kind")
    url = values.get("product_url")
    if url and not str(url).startswith(("https://", "http://")):
        raise InvalidInput("must start with https://", field="product_url")


def _check_slug(session: Session, kind: Kind, slug: str) -> None:
    if not SLUG.match(slug):
        raise InvalidInput("lower-case letters, digits, dots and dashes only", field="slug")
    taken = {
        "gpu": repository.gpu_row, "model": repository.model_row,
        "system": repository.system_row,
    }[kind](session, slug)
    if taken is not None:
        raise InvalidInput("already taken", field="slug")


def _gpu_id(session: Session, gpu_slug: Any) -> int:
    gpu = repository.gpu_row(session, str(gpu_slug or ""))
    if gpu is None:
        raise InvalidInput("not in the catalog", field="gpu_slug")
    return gpu.id


def _flush(session: Session) -> None:
    try:
        session.flush()
    except StaleDataError as exc:
        raise Conflict(STALE) from exc


def _written(session: Session, cache: CatalogCache, *, actor: Actor, kind: Kind, slug: str,
             action: str, before: dict[str, Any] | None, after: dict[str, Any]) -> None:
    audit.record(session, actor=actor, entity=kind, entity_key=slug, action=action,
                 before=before, after=after)
    catalog_service.record_catalog_write(session, cache)


def create(session: Session, *, cache: CatalogCache, actor: Actor,
           kind: Literal["gpu", "system"], slug: str, values: Mapping[str, Any]) -> None:
    """A new GPU or system (model cards come from :func:`import_model`)."""
    _check(kind, values)
    _check_slug(session, kind, slug)
    row: GpuSku | System
    extra: dict[str, Any] = {}
    if kind == "gpu":
        row = GpuSku(slug=slug, sources=[], active=True,
                     **{name: values.get(name) for name in GPU_FIELDS})
        fields = GPU_FIELDS
    else:
        data = {name: values.get(name) for name in SYSTEM_FIELDS if name != "gpu_slug"}
        row = System(slug=slug, active=True, gpu_sku_id=_gpu_id(session, values.get("gpu_slug")),
                     **data)
        fields, extra = SYSTEM_FIELDS, {"gpu_slug": values.get("gpu_slug")}
    _staff_price(row)
    session.add(row)
    _flush(session)
    _written(session, cache, actor=actor, kind=kind, slug=slug, action="create", before=None,
             after=_state(row, fields, extra))


def _load(session: Session, kind: Kind, slug: str) -> tuple[GpuSku | System | ModelCard,
                                                             tuple[str, ...], dict[str, Any]]:
    row: GpuSku | System | ModelCard | None
    extra: dict[str, Any] = {}
    if kind == "gpu":
        row, fields = repository.gpu_row(session, slug), GPU_FIELDS
    elif kind == "model":
        row, fields = repository.model_row(session, slug), MODEL_FIELDS
    else:
        found = repository.system_row(session, slug)
        row, fields = (found[0] if found else None), SYSTEM_FIELDS
        if found:
            extra = {"gpu_slug": found[1]}
    if row is None:
        raise NotFound(f"{slug} not found", field=kind)
    return row, fields, extra


def update(session: Session, *, cache: CatalogCache, actor: Actor, kind: Kind, slug: str,
           version: int, values: Mapping[str, Any]) -> None:
    """Change a row's editable fields; Conflict (nothing written) if ``version`` is stale."""
    _check(kind, values)
    row, fields, extra = _load(session, kind, slug)
    if row.version != version:
        raise Conflict(STALE)
    before = _state(row, fields, extra)
    if isinstance(row, (GpuSku, System)) and "price_eur_net" in values and (
        values.get("price_confirm") or _differs(row.price_eur_net, values["price_eur_net"])
    ):
        _staff_price(row)
    for name in fields:
        if name == "gpu_slug":
            if name in values and values[name] != extra.get("gpu_slug"):
                row.gpu_sku_id = _gpu_id(session, values[name])  # type: ignore[union-attr]
                extra = {"gpu_slug": values[name]}
        elif name in values:
            setattr(row, name, values[name])
    _flush(session)
    after = _state(row, fields, extra)
    if after == before:
        return
    _written(session, cache, actor=actor, kind=kind, slug=slug, action="update", before=before,
             after=after)


def _differs(stored: Decimal | None, given: Any) -> bool:
    if stored is None or given is None:
        return stored is not given
    return Decimal(stored) != Decimal(given)


def _staff_price(row: GpuSku | System) -> None:
    """The price is staff's from now on (set, confirmed or cleared): no longer indicative,
    and a re-seed leaves it alone. Dated the day staff saved it (UTC)."""
    row.price_indicative = False
    row.price_source = STAFF_PRICE
    row.price_date = datetime.now(UTC).date().isoformat()


def set_active(session: Session, *, cache: CatalogCache, actor: Actor, kind: Kind, slug: str,
               version: int, active: bool) -> None:
    """Archive (active False) or restore a row; customers no longer see archived ones."""
    row, fields, extra = _load(session, kind, slug)
    if row.version != version:
        raise Conflict(STALE)
    before = _state(row, fields, extra)
    row.active = active
    _flush(session)
    _written(session, cache, actor=actor, kind=kind, slug=slug,
             action="restore" if active else "archive", before=before,
             after=_state(row, fields, extra))


@dataclass(frozen=True, slots=True)
class ModelPreview(ParamCounts):
    """What the engine reads from a config.json: the counts shown before saving."""

    model_type: str
    num_layers: int
    hidden_size: int
    max_positions: int | None
    is_moe: bool


def preview_model(*, config: Mapping[str, Any]) -> ModelPreview:
    """Parse a config.json with the engine; ``InvalidInput`` on field ``config`` if it can't.

    The document is held to the bounds of every config.json first (the surfaces read it with
    :func:`app.catalog.inline_config.read_config_text`; this service is the last stop
    before the database): a NaN, a huge integer or a lone surrogate stored in a card would
    fail PostgreSQL's jsonb, or every later read of the card."""
    try:
        inline_config.check_values(config)
        inline_config.check_size(config)
    except inline_config.ConfigValueError as exc:
        raise InvalidInput(str(exc), field="config") from exc
    try:
        shape = parse_config(config)
    except ShapeError as exc:  # the config field named in the reason, the engine's key kept
        raise InvalidInput(f"{exc.field}: {exc.reason}", field="config", key=exc.key,
                           params={"field": exc.field, **exc.params}) from exc
    return ModelPreview(
        model_type=shape.model_type, **ParamCounts.of(shape).counts(),
        num_layers=shape.num_layers, hidden_size=shape.hidden_size,
        max_positions=shape.max_positions, is_moe=shape.is_moe,
    )


def import_model(session: Session, *, cache: CatalogCache, actor: Actor, slug: str,
                 config: Mapping[str, Any], values: Mapping[str, Any]) -> ModelPreview:
    """A new model card from its config.json; the counts are the engine's."""
    _check("model", values)
    preview = preview_model(config=config)
    _check_slug(session, "model", slug)
    row = ModelCard(
        slug=slug, config=dict(config), active=True, **preview.counts(),
        max_positions=preview.max_positions,
        **{name: values.get(name) for name in MODEL_FIELDS},
    )
    session.add(row)
    _flush(session)
    _written(session, cache, actor=actor, kind="model", slug=slug, action="import", before=None,
             after=_state(row, (*MODEL_FIELDS, "params_total", "params_active")))
    return preview
