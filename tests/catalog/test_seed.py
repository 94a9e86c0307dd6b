"""Seeding: complete, idempotent, respectful of staff edits, all-or-nothing."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from app.catalog import revision
from app.catalog import seed as seed_module
from app.catalog.seed import SeedError, read_seed, seed_database
from app.config import SEED_DIR
from app.db.session import SessionFactory
from app.db.tables import CatalogRevision, GpuSku, ModelCard, System
from app.engine.architectures.registry import parse_config
from tests.catalog.conftest import TINY_LLAMA

MiB = 1024**2
COMPARISON_GPUS = {
    "h200-sxm", "h100-sxm", "h100-nvl", "a100-80gb", "l40s", "rtx-5090", "rtx-6000-ada",
}
"""Cards the shop does not sell, for comparison only (issue 26)."""
INDICATIVE_GPUS = {"dgx-spark", "rtx-pro-6000"}
"""Cards with a public, dated list price in the seed (issue 27, point 4)."""
SHOP_GPUS = {
    "dgx-spark",
    "rtx-pro-6000",
    "rtx-pro-6000-max-q",
    "rtx-pro-6000-server",
    "rtx-pro-5000-48gb",
    "rtx-pro-5000-72gb",
    "rtx-pro-4500",
    "h200-nvl",
}


def _snapshot(session: Session) -> dict[str, Any]:
    """Everything a seed could touch, including versions and timestamps."""
    session.expire_all()
    tables = {}
    for table in (GpuSku, System, ModelCard, CatalogRevision):
        rows = session.execute(select(table.__table__)).mappings().all()
        tables[table.__tablename__] = sorted((dict(row) for row in rows), key=lambda r: r["id"])
    return tables


def _seed(factory: SessionFactory, seed_files: Any) -> seed_module.SeedReport:
    with factory.begin() as session:
        return seed_database(session, seed_dir=seed_files.dir)


def test_seed_loads_every_card_system_and_model(
    session_factory: SessionFactory, session: Session, seed_files: Any
) -> None:
    report = _seed(session_factory, seed_files)

    gpus = {gpu.slug: gpu for gpu in session.scalars(select(GpuSku))}
    assert {slug for slug, gpu in gpus.items() if not gpu.comparison_only} == SHOP_GPUS
    assert {slug for slug, gpu in gpus.items() if gpu.comparison_only} == COMPARISON_GPUS
    assert gpus["h200-sxm"].usable_bytes == 143771 * MiB
    assert gpus["h200-sxm"].bf16_dense_tflops == 989.5
    assert report.inserted["gpu_sku"] and report.inserted["system"]
    assert gpus["rtx-pro-6000"].usable_bytes == 97887 * MiB == 102_641_958_912
    assert gpus["h200-nvl"].usable_bytes == 143771 * MiB
    # DGX Spark: CUDA total less the 8 GiB OS reserve, and the basis says so.
    assert gpus["dgx-spark"].usable_bytes == 128_538_451_968 - 8 * 1024**3
    assert "8 GiB" in gpus["dgx-spark"].usable_basis
    # Public list prices where the seed has one (indicative), the rest price on request
    priced = {slug: gpu for slug, gpu in gpus.items() if gpu.price_eur_net is not None}
    assert set(priced) == INDICATIVE_GPUS
    assert all(gpu.price_indicative and gpu.price_source for gpu in priced.values())
    assert all(gpu.stock_status == "on_request" for gpu in gpus.values())
    assert all(gpu.sources for gpu in gpus.values())

    systems = {system.slug: system for system in session.scalars(select(System))}
    assert len(systems) == 11
    cluster = systems["dgx-spark-2x-cluster"]
    assert (cluster.kind, cluster.gpu_count, cluster.gpu_interconnect) == (
        "appliance",
        2,
        "ConnectX-7 200 GbE",
    )
    assert cluster.gpu_sku_id == gpus["dgx-spark"].id

    moe = session.scalars(select(ModelCard).where(ModelCard.slug == "tiny-mixtral")).one()
    shape = parse_config(moe.config)
    assert (moe.params_total, moe.params_active) == (shape.total_params, shape.active_params)
    assert moe.params_active < moe.params_total
    assert (
        moe.params_linear
        + moe.params_embedding
        + moe.params_lm_head
        + moe.params_norm
        + moe.params_other
        == moe.params_total
    )
    assert moe.max_positions == 4096

    revision = session.get(CatalogRevision, 1)
    assert revision is not None and revision.revision == 1


def test_seeding_twice_changes_nothing(
    session_factory: SessionFactory, session: Session, seed_files: Any
) -> None:
    _seed(session_factory, seed_files)
    before = _snapshot(session)

    report = _seed(session_factory, seed_files)

    assert not report.changed
    assert _snapshot(session) == before  # not even version, updated_at or the revision


def test_staff_edits_survive_a_reseed_while_facts_refresh(
    session_factory: SessionFactory, session: Session, seed_files: Any
) -> None:
    _seed(session_factory, seed_files)
    with session_factory.begin() as staff:
        gpu = staff.scalars(select(GpuSku).where(GpuSku.slug == "rtx-pro-6000")).one()
        gpu.price_eur_net = Decimal("8990.00")  # as the desk saves a price (editing.update)
        gpu.price_indicative, gpu.price_source = False, seed_module.STAFF_PRICE
        gpu.stock_status = "in_stock"
        gpu.product_url = "https://shop.example/rtx-pro-6000"
        system = staff.scalars(select(System).where(System.slug == "srv-2x-h200-nvl")).one()
        system.active = False
        system.price_eur_net = Decimal("71000.50")
        system.price_source = seed_module.STAFF_PRICE
    seed_files.edit_gpu("rtx-pro-6000", memory_bandwidth_gbps=1800.0)

    report = _seed(session_factory, seed_files)

    assert report.updated == {"gpu_sku": ["rtx-pro-6000"]}
    session.expire_all()
    gpu = session.scalars(select(GpuSku).where(GpuSku.slug == "rtx-pro-6000")).one()
    assert gpu.price_eur_net == Decimal("8990.00")
    assert gpu.stock_status == "in_stock"
    assert gpu.product_url == "https://shop.example/rtx-pro-6000"
    assert gpu.memory_bandwidth_gbps == 1800.0  # facts follow the seed files
    assert gpu.version == 3  # insert, staff edit, fact refresh
    system = session.scalars(select(System).where(System.slug == "srv-2x-h200-nvl")).one()
    assert system.active is False
    assert system.price_eur_net == Decimal("71000.50")


def test_rows_staff_added_are_left_alone(
    session_factory: SessionFactory, session: Session, seed_files: Any, make_gpu: Any
) -> None:
    make_gpu(session, slug="staff-added")
    session.commit()

    _seed(session_factory, seed_files)

    assert session.scalars(select(GpuSku).where(GpuSku.slug == "staff-added")).one()


@pytest.mark.parametrize("fail_after", [3, 12, 21])
def test_an_interrupted_seed_leaves_the_database_as_it_was(
    session_factory: SessionFactory,
    session: Session,
    seed_files: Any,
    monkeypatch: pytest.MonkeyPatch,
    fail_after: int,
) -> None:
    _seed(session_factory, seed_files)
    seed_files.edit_gpu("h200-nvl", name="NVIDIA H200 NVL (renamed)")
    seed_files.edit_gpu("dgx-spark", max_power_w=240)
    seed_files.write_models(
        [
            seed_files.model_entry("tiny-llama", "tiny-llama.json", license="mit"),
            seed_files.model_entry("tiny-mixtral", "tiny-mixtral.json"),
            seed_files.model_entry("another-llama", "tiny-llama.json"),
        ]
    )
    before = _snapshot(session)
    session.commit()

    real_apply = seed_module._apply
    calls = 0

    def failing_apply(*args: Any, **kwargs: Any) -> bool:
        nonlocal calls
        calls += 1
        if calls == fail_after:
            raise RuntimeError("injected failure half-way through the seed")
        return real_apply(*args, **kwargs)

    monkeypatch.setattr(seed_module, "_apply", failing_apply)
    with pytest.raises(RuntimeError, match="injected"):
        _seed(session_factory, seed_files)

    assert _snapshot(session) == before


def test_an_interrupted_first_seed_leaves_an_empty_catalog(
    session_factory: SessionFactory,
    session: Session,
    seed_files: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fail(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("injected failure before the revision bump")

    monkeypatch.setattr(revision, "bump", fail)  # the module seed calls it through
    with pytest.raises(RuntimeError, match="injected"):
        _seed(session_factory, seed_files)

    for table in ("gpu_sku", "system", "model_card"):
        assert session.execute(text(f"SELECT count(*) FROM {table}")).scalar_one() == 0


def test_a_broken_seed_file_is_refused_before_any_write(
    session_factory: SessionFactory, session: Session, seed_files: Any
) -> None:
    seed_files.write_models([seed_files.model_entry("ghost", "does-not-exist.json")])

    with pytest.raises(SeedError, match=r"does-not-exist\.json"):
        _seed(session_factory, seed_files)

    assert session.execute(text("SELECT count(*) FROM gpu_sku")).scalar_one() == 0


def test_an_unknown_gpu_field_is_refused(seed_files: Any) -> None:
    seed_files.edit_gpu("h200-nvl", memory_gb=141)
    with pytest.raises(SeedError, match="unknown \\['memory_gb'\\]"):
        read_seed(seed_files.dir)


def test_a_model_config_the_engine_rejects_names_the_file(seed_files: Any) -> None:
    (seed_files.dir / "models" / "bad.json").write_text('{"model_type": "llama"}')
    seed_files.write_models([seed_files.model_entry("bad", "bad.json")])
    with pytest.raises(SeedError, match=r"bad\.json: .*missing"):
        read_seed(seed_files.dir)


def test_the_shipped_gpu_and_system_seed_is_valid() -> None:
    data = read_seed(SEED_DIR)
    assert {gpu.slug for gpu in data.gpus} == SHOP_GPUS | COMPARISON_GPUS
    for gpu in data.gpus:
        assert gpu.stock_status == "on_request"
        assert (gpu.price_eur_net is not None) is (gpu.slug in INDICATIVE_GPUS)
        if gpu.slug != "dgx-spark":  # driver-reported framebuffer, whole MiB
            assert gpu.usable_bytes % MiB == 0
        # "96 GB" GDDR is 96 GiB; the A100 80GB reports all of its 81,920 MiB (80 GiB)
        assert gpu.usable_bytes <= gpu.memory_nominal_gb * 1024**3
    assert {system.kind for system in data.systems} == {"workstation", "server", "appliance"}


def test_the_shipped_model_seed_is_valid() -> None:
    if not (SEED_DIR / "models.json").exists():
        pytest.skip("app/catalog/seed/models.json is not written yet")
    models = read_seed(SEED_DIR).models
    assert len(models) >= 30
    assert all(model.params_total > 0 for model in models)


def test_a_seed_config_with_infinity_is_stored_as_a_pasted_one_is(
    session_factory: SessionFactory, session: Session, seed_files: Any
) -> None:
    """NVIDIA's Nemotron releases write ``"time_step_limit": [0.0, Infinity]`` (the shipped
    Nemotron 3 Super and Ultra seed configs copy it); PostgreSQL's JSON type has no Infinity,
    so the seed stores it as text, as the config reader does for a pasted or Hub config
    (``inline_config.NON_FINITE_TOKENS``); the engine ignores the field either way."""
    (seed_files.dir / "models" / "tiny-llama.json").write_text(
        json.dumps({**TINY_LLAMA, "time_step_limit": [0.0, math.inf]}), encoding="utf-8")
    _seed(session_factory, seed_files)
    card = session.scalars(select(ModelCard).where(ModelCard.slug == "tiny-llama")).one()
    assert card.config["time_step_limit"] == [0.0, "Infinity"]
    assert card.params_total == parse_config(TINY_LLAMA).total_params
