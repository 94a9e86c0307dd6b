"""Indicative seed prices (issue 27, point 4), on SQLite and PostgreSQL: the seed carries public,
dated list prices converted at its stated rate; a re-seed keeps them current until staff set,
confirm or clear a price in the desk, which is audited; migration 20261204_0009 marks prices
already in a database as staff's."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from app.accounts.audit import Actor
from app.catalog import editing
from app.catalog.schemas import GpuRecord, SystemRecord
from app.catalog.seed import STAFF_PRICE, read_seed, seed_database
from app.catalog.service import CatalogCache
from app.config import SEED_DIR
from app.db import migrate
from app.db.session import SessionFactory, make_engine, make_session_factory
from app.db.tables import AuditLog, GpuSku, System

STAFF = Actor(user_id=None, name="tests")


def _seed_price(slug: str) -> tuple[Decimal, dict[str, Any], dict[str, Any]]:
    """The shipped seed's price of a card: (net EUR as the seed computes it, its entry, rate)."""
    document = json.loads((SEED_DIR / "gpus.json").read_text(encoding="utf-8"))
    (entry,) = [gpu["price"] for gpu in document["gpus"] if gpu["slug"] == slug]
    rate = document["exchange_rates"][entry["currency"]]
    eur = (Decimal(entry["amount"]) / Decimal(rate["per_eur"])).quantize(Decimal("0.01"))
    return eur, entry, rate


def _seed(factory: SessionFactory, seed_dir: Any = SEED_DIR) -> None:
    with factory.begin() as session:
        seed_database(session, seed_dir=seed_dir)


def _gpu(session: Session, slug: str) -> GpuSku:
    session.expire_all()
    return session.scalars(select(GpuSku).where(GpuSku.slug == slug)).one()


def test_the_seed_prices_are_public_dated_and_converted_at_the_stated_rate() -> None:
    data = read_seed(SEED_DIR)
    records: list[GpuRecord | SystemRecord] = [*data.gpus, *data.systems]
    priced = {r.slug: r for r in records if r.price_eur_net is not None}
    assert set(priced) == {"dgx-spark", "rtx-pro-6000", "dgx-spark-1x"}
    for slug, record in priced.items():
        eur, entry, rate = _seed_price("dgx-spark" if slug == "dgx-spark-1x" else slug)
        assert record.price_eur_net == eur and record.price_indicative
        assert record.price_date == entry["date"]
        source = record.price_source or ""
        assert f"USD {Decimal(entry['amount']):,}" in source and rate["per_eur"] in source
        assert rate["date"] in source and entry["source"].split(" ")[0] in source
    # USD 3,999 at 1.1607 USD a euro (ECB, 2025-10-21)
    assert priced["dgx-spark"].price_eur_net == Decimal("3445.33")
    # every comparison card stays unpriced: never quoted
    assert all(g.price_eur_net is None for g in data.gpus if g.comparison_only)


def test_a_fresh_install_has_indicative_prices_and_a_reseed_keeps_them_current(
    session_factory: SessionFactory, session: Session, seed_files: Any,
) -> None:
    _seed(session_factory, seed_files.dir)
    eur, entry, _rate = _seed_price("rtx-pro-6000")
    gpu = _gpu(session, "rtx-pro-6000")
    assert gpu.price_eur_net == eur and gpu.price_indicative
    assert _gpu(session, "rtx-pro-5000-48gb").price_eur_net is None  # price on request
    seed_files.edit_gpu("rtx-pro-6000", price={**entry, "amount": "9000"})
    _seed(session_factory, seed_files.dir)
    gpu = _gpu(session, "rtx-pro-6000")
    assert gpu.price_eur_net == (Decimal(9000) / Decimal("1.1607")).quantize(Decimal("0.01"))
    assert gpu.price_indicative and "USD 9,000" in (gpu.price_source or "")


def test_a_price_staff_change_confirm_or_clear_is_theirs_audited_and_kept_by_a_reseed(
    session_factory: SessionFactory, session: Session,
) -> None:
    _seed(session_factory)
    cache = CatalogCache()
    eur, _entry, _rate = _seed_price("rtx-pro-6000")
    cases = (("rtx-pro-6000", {"price_eur_net": Decimal("8100.00")}, Decimal("8100.00")),
             ("dgx-spark", {"price_eur_net": Decimal("3445.33"), "price_confirm": True},
              Decimal("3445.33")))
    for slug, values, _price in cases:
        with session_factory.begin() as desk:
            version = _gpu(desk, slug).version
            editing.update(desk, cache=cache, actor=STAFF, kind="gpu", slug=slug,
                           version=version, values=values)
    # a save that leaves the price as it is, without the box, does not confirm it ...
    _save_system(session_factory, cache, {"price_eur_net": Decimal("3445.33"),
                                          "stock_status": "in_stock"})
    assert _system(session).price_indicative
    # ... clearing it makes it staff's "price on request"
    _save_system(session_factory, cache, {"price_eur_net": None})
    _seed(session_factory)  # a later release's seed
    for slug, _values, price in cases:
        gpu = _gpu(session, slug)
        assert (gpu.price_eur_net, gpu.price_indicative, gpu.price_source) == (
            price, False, STAFF_PRICE), slug
        assert gpu.price_date is not None and len(gpu.price_date) == 10  # the day staff saved
    system = _system(session)
    assert (system.price_eur_net, system.price_indicative, system.price_source) == (
        None, False, STAFF_PRICE)
    assert system.stock_status == "in_stock"
    entry = session.scalars(select(AuditLog).where(AuditLog.entity_key == "rtx-pro-6000")
                            .order_by(AuditLog.id.desc())).first()
    assert entry is not None and entry.before is not None and entry.after is not None
    assert entry.before["price_eur_net"] == str(eur) and entry.before["price_indicative"]
    assert entry.after["price_indicative"] is False
    assert entry.after["price_source"] == STAFF_PRICE


def _system(session: Session) -> System:
    session.expire_all()
    return session.scalars(select(System).where(System.slug == "dgx-spark-1x")).one()


def _save_system(factory: SessionFactory, cache: CatalogCache, values: dict[str, Any]) -> None:
    with factory.begin() as desk:
        editing.update(desk, cache=cache, actor=STAFF, kind="system", slug="dgx-spark-1x",
                       version=_system(desk).version, values=values)


def test_migration_0009_marks_existing_prices_as_staff_s(empty_database_url: str) -> None:
    """Before this revision only staff could set a price: a priced row is theirs (a re-seed
    leaves it), an unpriced one takes the seed's indicative price at the next seed."""
    migrate.upgrade(empty_database_url, "20261204_0008")
    engine = make_engine(empty_database_url)
    columns = ("slug, name, architecture, compute_capability, memory_nominal_gb, usable_bytes, "
               "usable_basis, memory_type, memory_bandwidth_gbps, interconnect, form_factor, "
               "stock_status, sources, price_eur_net, active, version, comparison_only")
    try:
        with engine.begin() as connection:
            for slug, price in (("rtx-pro-6000", 8990), ("dgx-spark", None)):
                connection.execute(text(
                    f"INSERT INTO gpu_sku ({columns}) VALUES (:slug, 'x', 'x', '12.0', 96, 1, "
                    "'x', 'x', 1.0, 'pcie', 'x', 'on_request', '[]', :price, true, 1, false)"),
                    {"slug": slug, "price": price})
        migrate.upgrade(empty_database_url)
        with engine.connect() as connection:
            rows = connection.execute(text(
                "SELECT slug, price_source, price_indicative FROM gpu_sku ORDER BY slug")).all()
        assert [tuple(row) for row in rows] == [("dgx-spark", None, False),
                                               ("rtx-pro-6000", STAFF_PRICE, False)]
        _seed(make_session_factory(engine))
        with engine.connect() as connection:
            prices: dict[str, Any] = dict(connection.execute(text(
                "SELECT slug, price_eur_net FROM gpu_sku WHERE slug IN "
                "('dgx-spark', 'rtx-pro-6000')")).tuples().all())
        assert Decimal(str(prices["rtx-pro-6000"])) == Decimal(8990)
        assert Decimal(str(prices["dgx-spark"])) == _seed_price("dgx-spark")[0]
        migrate.downgrade(empty_database_url, "20261204_0008")
        migrate.upgrade(empty_database_url)
    finally:
        engine.dispose()
