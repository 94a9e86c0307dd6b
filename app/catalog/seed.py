"""Seed files -> catalog rows, in one transaction, idempotently.

The seed files in ``app/catalog/seed/`` are the versioned source of catalog
*facts* (memory, bandwidth, parameter counts, sources). Staff own the
commercial columns (``price_eur_net``, ``stock_status``, ``active``,
``product_url``): the seed sets them only when it inserts a row, so re-seeding
after a release never undoes a price a person typed in. The one exception is the
seed's indicative price (:data:`PRICE_FIELDS`): a public, dated price that a
re-seed keeps current until staff set or confirm a price of their own.

The whole seed is read and validated before the first write, and
:func:`seed_database` never commits: the caller's single transaction either
applies all of it or, on any error, none of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from app.catalog.inline_config import replace_non_finite, with_hf_quant_config
from app.catalog.schemas import (
    STOCK_STATUSES,
    SYSTEM_KINDS,
    Catalog,
    GpuRecord,
    ModelRecord,
    ParamCounts,
    SystemRecord,
)
from app.engine.architectures.registry import parse_config
from app.engine.shapes import ShapeError
from app.paths import SEED_DIR

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

Record = TypeVar("Record", GpuRecord, SystemRecord, ModelRecord)

GPU_FACTS: tuple[str, ...] = (
    "name",
    "architecture",
    "compute_capability",
    "memory_nominal_gb",
    "usable_bytes",
    "usable_basis",
    "memory_type",
    "memory_bandwidth_gbps",
    "bf16_dense_tflops",
    "fp8_dense_tflops",
    "fp4_dense_tflops",
    "interconnect",
    "interconnect_bandwidth_gbps",
    "max_power_w",
    "form_factor",
    "mig_instances",
    "sources",
)
SYSTEM_FACTS: tuple[str, ...] = (
    "name",
    "kind",
    "gpu_count",
    "gpu_interconnect",
    "host_ram_gb",
)
MODEL_FACTS: tuple[str, ...] = (
    "hf_id",
    "family",
    "config",
    "params_total",
    "params_active",
    "params_linear",
    "params_embedding",
    "params_lm_head",
    "params_norm",
    "params_other",
    "max_positions",
    "license",
    "gated",
)
STAFF_OWNED: tuple[str, ...] = ("price_eur_net", "stock_status", "active", "product_url")
"""Set from the seed on insert only; never overwritten by a re-seed (but see PRICE_FIELDS)."""
PRICE_FIELDS: tuple[str, ...] = ("price_eur_net", "price_indicative", "price_source",
                                 "price_date")
"""The seed's indicative price. Set on insert, and refreshed by a re-seed while the row's price
is still the seed's (``price_indicative``) or was never set (no ``price_source``); once staff
set or clear a price (``price_source`` "staff") a re-seed leaves all four alone."""
STAFF_PRICE = "staff"
"""``price_source`` of a price staff set, confirmed or cleared in the desk."""

_GPU_OPTIONAL = {
    "price": None,
    "stock_status": "on_request",
    "product_url": None,
    "active": True,
}
_SYSTEM_OPTIONAL = dict(_GPU_OPTIONAL)
GPU_OPTIONAL_FACTS: dict[str, Any] = {"comparison_only": False}
"""Facts a seed entry may leave out (a card the shop sells is no comparison card)."""


class SeedError(ValueError):
    """A seed file is missing, malformed, or names something that does not exist."""


@dataclass(frozen=True, slots=True)
class SeedData:
    """Everything the seed files say, validated, before any database work."""

    gpus: tuple[GpuRecord, ...]
    systems: tuple[SystemRecord, ...]
    models: tuple[ModelRecord, ...]


@dataclass(slots=True)
class SeedReport:
    """What a seed run did, per table: inserted / updated / unchanged slugs."""

    inserted: dict[str, list[str]] = field(default_factory=dict)
    updated: dict[str, list[str]] = field(default_factory=dict)
    unchanged: dict[str, list[str]] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """True when any row was inserted or updated."""
        return any(self.inserted.values()) or any(self.updated.values())

    def note(self, table: str, outcome: str, slug: str) -> None:
        """Record one row's outcome ("inserted", "updated" or "unchanged")."""
        getattr(self, outcome).setdefault(table, []).append(slug)

    def summary(self) -> str:
        """One line per table for the CLI."""
        tables = sorted({*self.inserted, *self.updated, *self.unchanged})
        return "\n".join(
            f"{table}: {len(self.inserted.get(table, []))} inserted, "
            f"{len(self.updated.get(table, []))} updated, "
            f"{len(self.unchanged.get(table, []))} unchanged"
            for table in tables
        )


# --- reading -----------------------------------------------------------------


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SeedError(f"{path}: seed file missing") from exc
    except json.JSONDecodeError as exc:
        raise SeedError(f"{path}: not valid JSON ({exc})") from exc


def _entries(path: Path, key: str) -> list[Mapping[str, Any]]:
    document = _load_json(path)
    entries = document.get(key) if isinstance(document, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise SeedError(f"{path}: expected {{{key!r}: [objects]}}")
    slugs = [entry.get("slug") for entry in entries]
    duplicates = sorted({s for s in slugs if slugs.count(s) > 1 and isinstance(s, str)})
    if duplicates:
        raise SeedError(f"{path}: duplicate slugs {duplicates}")
    return entries


def _check_keys(
    path: Path, entry: Mapping[str, Any], required: tuple[str, ...], optional: Mapping[str, Any],
    rates: Mapping[str, Mapping[str, str]],
) -> dict[str, Any]:
    name = entry.get("slug", "?")
    missing = [key for key in required if key not in entry]
    unknown = sorted(set(entry) - set(required) - set(optional) - {"slug"})
    if missing or unknown:
        raise SeedError(f"{path}: {name}: missing {missing}, unknown {unknown}")
    values = {**optional, **entry}
    if values["stock_status"] not in STOCK_STATUSES:
        raise SeedError(f"{path}: {name}: stock_status must be one of {STOCK_STATUSES}")
    values.update(_indicative_price(path, name, values.pop("price"), rates))
    return values


def _indicative_price(path: Path, name: str, price: Any,
                      rates: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """A seed entry's ``price`` (a public, dated price: ``amount``, ``currency``, ``date``,
    ``kind``, ``source``) as the four price columns: the amount in net EUR (converted at the
    seed file's stated, dated rate where it is not EUR, to the cent) and its provenance."""
    if price is None:
        return {"price_eur_net": None, "price_indicative": False, "price_source": None,
                "price_date": None}
    keys = {"amount", "currency", "date", "kind", "source"}
    if not isinstance(price, dict) or set(price) != keys:
        raise SeedError(f"{path}: {name}: price needs exactly {sorted(keys)}")
    amount, currency = Decimal(str(price["amount"])), str(price["currency"])
    note = f"{price['kind']}: {currency} {amount:,} ({price['date']}); {price['source']}"
    if currency != "EUR":
        rate = rates.get(currency)
        if rate is None:
            raise SeedError(f"{path}: {name}: no exchange rate for {currency}")
        per_eur = Decimal(str(rate["per_eur"]))
        amount = amount / per_eur
        note += (f"; converted at 1 EUR = {per_eur} {currency} ({rate['date']}, "
                 f"{rate['source']})")
    return {"price_eur_net": amount.quantize(Decimal("0.01")), "price_indicative": True,
            "price_source": note, "price_date": str(price["date"])}


def _rates(path: Path) -> dict[str, Mapping[str, str]]:
    """The seed file's ``exchange_rates``: currency -> {per_eur, date, source}."""
    document = _load_json(path)
    rates = document.get("exchange_rates", {}) if isinstance(document, dict) else {}
    if not isinstance(rates, dict) or not all(
        isinstance(r, dict) and {"per_eur", "date", "source"} <= set(r) for r in rates.values()
    ):
        raise SeedError(f"{path}: exchange_rates: each needs per_eur, date and source")
    return rates


def _read_gpus(seed_dir: Path) -> tuple[GpuRecord, ...]:
    path = seed_dir / "gpus.json"
    records, rates = [], _rates(path)
    for entry in _entries(path, "gpus"):
        values = _check_keys(path, entry, GPU_FACTS, {**_GPU_OPTIONAL, **GPU_OPTIONAL_FACTS},
                             rates)
        values["sources"] = tuple(values["sources"])
        records.append(GpuRecord(**values))
    return tuple(records)


def _read_systems(seed_dir: Path, gpu_slugs: set[str]) -> tuple[SystemRecord, ...]:
    path = seed_dir / "systems.json"
    records, rates = [], _rates(seed_dir / "gpus.json")  # one rate table for both files
    for entry in _entries(path, "systems"):
        values = _check_keys(path, entry, (*SYSTEM_FACTS, "gpu_slug"), _SYSTEM_OPTIONAL, rates)
        if values["kind"] not in SYSTEM_KINDS:
            raise SeedError(f"{path}: {values['slug']}: kind must be one of {SYSTEM_KINDS}")
        if values["gpu_slug"] not in gpu_slugs:
            raise SeedError(f"{path}: {values['slug']}: unknown gpu_slug {values['gpu_slug']!r}")
        records.append(SystemRecord(**values))
    return tuple(records)


def _read_models(seed_dir: Path) -> tuple[ModelRecord, ...]:
    """models.json names each config file; the engine computes the parameter split.

    Extra keys in an entry (provenance notes, expected counts) are allowed and
    ignored: that file is curated by hand with whatever helps review it.
    """
    path = seed_dir / "models.json"
    if not path.exists():
        return ()
    records = []
    for entry in _entries(path, "models"):
        slug = entry.get("slug", "?")
        missing = [
            k for k in ("slug", "hf_id", "family", "config", "license", "gated") if k not in entry
        ]
        if missing:
            raise SeedError(f"{path}: {slug}: missing {missing}")
        config_path = seed_dir / "models" / str(entry["config"])
        # NaN/Infinity (NVIDIA's Nemotron releases) as text, as a pasted or Hub config is
        # kept: PostgreSQL's JSON type has no such number
        config = replace_non_finite(_load_json(config_path))
        if not isinstance(config, dict):
            raise SeedError(f"{config_path}: expected a JSON object")
        config = with_hf_quant_config(config, entry.get("hf_quant_config"))
        try:
            shape = parse_config(config)
        except ShapeError as exc:
            raise SeedError(f"{config_path}: {exc}") from exc
        records.append(
            ModelRecord(
                slug=str(slug),
                hf_id=str(entry["hf_id"]),
                family=str(entry["family"]),
                config=config,
                **ParamCounts.of(shape).counts(),
                max_positions=shape.max_positions,
                license=str(entry["license"]),
                gated=bool(entry["gated"]),
                active=bool(entry.get("active", True)),
            )
        )
    return tuple(records)


def read_seed(seed_dir: Path = SEED_DIR) -> SeedData:
    """Read and validate every seed file (no database); raises SeedError."""
    gpus = _read_gpus(seed_dir)
    systems = _read_systems(seed_dir, {gpu.slug for gpu in gpus})
    return SeedData(gpus=gpus, systems=systems, models=_read_models(seed_dir))


def load_seed_catalog(seed_dir: Path | None = None) -> Catalog:
    """The catalog straight from the seed files (``SEED_DIR`` unless given), active rows only
    and in the database's order (by slug, as ``app/catalog/repository.py`` reads them): what a
    customer would see after seeding, for ``sizer estimate --offline`` and for tests, with the
    cards in the same order as with a database. Reading needs neither SQLAlchemy nor the
    settings (``benchmarks/test_cli_speed.py`` times the command)."""
    data = read_seed(SEED_DIR if seed_dir is None else seed_dir)
    return Catalog(revision=0, gpus=_by_slug(data.gpus), systems=_by_slug(data.systems),
                   models=_by_slug(data.models)).active_only()


def _by_slug(records: tuple[Record, ...]) -> tuple[Record, ...]:
    return tuple(sorted(records, key=lambda record: record.slug))


# --- writing -----------------------------------------------------------------


def _apply(row: Any, record: Any, facts: tuple[str, ...], values: Mapping[str, Any]) -> bool:
    """Set the fact columns that differ; True when anything changed.

    Comparing first (instead of assigning blindly) keeps a re-seed from bumping
    ``version`` and ``updated_at`` of rows whose facts did not change.
    """
    changed = False
    for name in facts:
        value = values[name] if name in values else getattr(record, name)
        if getattr(row, name) != value:
            setattr(row, name, value)
            changed = True
    return changed


def _staff_fields(record: GpuRecord | SystemRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in (*STAFF_OWNED, *PRICE_FIELDS)}


def _seed_price(row: Any, record: GpuRecord | SystemRecord) -> bool:
    """Refresh the seed's indicative price on a row staff have not priced; True if changed."""
    if row.price_source == STAFF_PRICE or not (row.price_indicative or row.price_source is None):
        return False
    return _apply(row, record, PRICE_FIELDS, {})


def seed_database(session: Session, *, seed_dir: Path = SEED_DIR) -> SeedReport:
    """Insert missing catalog rows and refresh facts of existing ones; never commits.

    Rows in the database that the seed does not mention are left alone (staff
    may have added them). The catalog revision is bumped only if something
    changed, so seeding twice changes nothing at all.
    """
    # The ORM only for writing: reading the seed files (above) must not import it.
    from app.catalog import repository, revision
    from app.db.tables import GpuSku, System

    data = read_seed(seed_dir)
    report = SeedReport()

    gpu_rows = repository.gpu_rows_by_slug(session)
    for gpu in data.gpus:
        facts = {"sources": list(gpu.sources)}
        existing = gpu_rows.get(gpu.slug)
        if existing is None:
            row = GpuSku(slug=gpu.slug, **_staff_fields(gpu))
            _apply(row, gpu, (*GPU_FACTS, *GPU_OPTIONAL_FACTS), facts)
            session.add(row)
            gpu_rows[gpu.slug] = row
            report.note("gpu_sku", "inserted", gpu.slug)
        else:
            changed = _apply(existing, gpu, (*GPU_FACTS, *GPU_OPTIONAL_FACTS), facts)
            changed = _seed_price(existing, gpu) or changed
            outcome = "updated" if changed else "unchanged"
            report.note("gpu_sku", outcome, gpu.slug)
    session.flush()  # systems need the GPU ids

    system_rows = repository.system_rows_by_slug(session)
    for system in data.systems:
        system_facts: dict[str, Any] = {"gpu_sku_id": gpu_rows[system.gpu_slug].id}
        existing_system = system_rows.get(system.slug)
        if existing_system is None:
            new_system = System(slug=system.slug, **_staff_fields(system))
            _apply(new_system, system, (*SYSTEM_FACTS, "gpu_sku_id"), system_facts)
            session.add(new_system)
            report.note("system", "inserted", system.slug)
        else:
            changed = _apply(existing_system, system, (*SYSTEM_FACTS, "gpu_sku_id"), system_facts)
            changed = _seed_price(existing_system, system) or changed
            report.note("system", "updated" if changed else "unchanged", system.slug)

    _seed_models(session, data, report)

    session.flush()
    if report.changed:
        # The revision alone: the seed runs in its own process (``sizer db seed``), whose
        # workers see the new revision at their next check. A process that seeds and then
        # reads through a CatalogCache of its own asks with ``fresh=True`` or forgets it.
        revision.bump(session)
    return report


def _seed_models(session: Session, data: SeedData, report: SeedReport) -> None:
    """Insert the seed's missing model cards and refresh the facts of existing ones."""
    from app.catalog import repository
    from app.db.tables import ModelCard

    model_rows = repository.model_rows_by_slug(session)
    for model in data.models:
        config = {"config": dict(model.config)}
        existing_model = model_rows.get(model.slug)
        if existing_model is None:
            new_model = ModelCard(slug=model.slug, active=model.active)
            _apply(new_model, model, MODEL_FACTS, config)
            session.add(new_model)
            report.note("model_card", "inserted", model.slug)
        else:
            changed = _apply(existing_model, model, MODEL_FACTS, config)
            report.note("model_card", "updated" if changed else "unchanged", model.slug)
