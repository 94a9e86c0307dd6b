"""Migration 20261204_0010 on data (SQLite and PostgreSQL): a stored quote request says whether
the price it stored was the seed's indicative price. A request whose card or system is still at
the seed's indicative price, the very price it stored, reads as indicative; one at another price
or at a staff price does not; downgrade and upgrade again keep the requests."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest
from sqlalchemy import Engine, Numeric, bindparam, text

from app.catalog.seed import seed_database
from app.db import migrate
from app.db.session import make_engine, make_session_factory

BEFORE = "20261204_0009"
INSERT = ("INSERT INTO quote_request (token, reference, locale, name, company, email, country, "
          "quantity, item_kind, item_slug, item_name, item_sku_price_eur_net, calculator_query, "
          "engine_version, sizing) VALUES (:r, :r, 'en', 'Ada', 'Co', 'a@example.com', 'DE', 1, "
          ":kind, :slug, 'x', :price, 'model=llama-3.1-8b', '1', '{}')")


def _price(engine: Engine, table: str, slug: str) -> Decimal:
    with engine.connect() as connection:
        value = connection.execute(text(f"SELECT price_eur_net FROM {table} WHERE slug = :s"),
                                   {"s": slug}).scalar_one()
    return Decimal(str(value))


@pytest.fixture
def old_database(empty_database_url: str) -> Iterator[tuple[str, Engine]]:
    """The seed catalog at the previous revision (the DGX Spark card and system and the RTX PRO
    6000 at the seed's indicative prices), the RTX PRO 6000 then priced by staff, and five
    requests stored before this revision."""
    migrate.upgrade(empty_database_url, BEFORE)
    engine = make_engine(empty_database_url)
    with make_session_factory(engine).begin() as session:
        seed_database(session)
    spark, spark_system = _price(engine, "gpu_sku", "dgx-spark"), _price(
        engine, "system", "dgx-spark-1x")
    insert = text(INSERT).bindparams(bindparam("price", type_=Numeric(12, 2)))
    with engine.begin() as connection:
        connection.execute(text("UPDATE gpu_sku SET price_indicative = false, "
                                "price_source = 'staff', price_eur_net = 8000 "
                                "WHERE slug = 'rtx-pro-6000'"))
        for reference, kind, slug, price in (
            ("Q-SPARK", "gpu", "dgx-spark", spark),
            ("Q-SPARKSYS", "system", "dgx-spark-1x", spark_system),
            ("Q-OLDPRICE", "gpu", "dgx-spark", spark + 1),
            ("Q-STAFF", "gpu", "rtx-pro-6000", Decimal(8000)),
            ("Q-NOPRICE", "gpu", "h200-nvl", None),
        ):
            connection.execute(insert, {"r": reference, "kind": kind, "slug": slug,
                                        "price": price})
    try:
        yield empty_database_url, engine
    finally:
        engine.dispose()


def _flags(engine: Engine) -> dict[str, bool]:
    with engine.connect() as connection:
        rows = connection.execute(text(
            "SELECT reference, item_price_indicative FROM quote_request")).all()
    return {row[0]: bool(row[1]) for row in rows}


def test_requests_at_the_seed_s_indicative_price_read_as_indicative(
    old_database: tuple[str, Engine],
) -> None:
    url, engine = old_database
    migrate.upgrade(url)
    expected = {"Q-SPARK": True, "Q-SPARKSYS": True, "Q-OLDPRICE": False, "Q-STAFF": False,
                "Q-NOPRICE": False}
    assert _flags(engine) == expected
    migrate.downgrade(url, BEFORE)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM quote_request")).scalar_one() == 5
    migrate.upgrade(url)
    assert _flags(engine) == expected
