"""Migration 20261203_0006 on data (SQLite and PostgreSQL): every existing quote request, with
its lines, reads as a fine-tuning ("training") request; a serving one can be stored; no other
workload can; downgrade and upgrade again keep the requests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from app.db import migrate
from app.db.session import make_engine

BEFORE = "20261203_0005"
INSERT = ("INSERT INTO quote_request (token, reference, locale, name, company, email, country, "
          "quantity, item_kind, item_slug, item_name, calculator_query, engine_version, sizing"
          "{extra}) VALUES (:t, :r, 'en', 'Ada', 'Co', 'a@example.com', 'DE', 1, 'gpu', 'h200', "
          "'H200', 'model=llama-3.1-8b', '1', '{{}}'{values})")


@pytest.fixture
def old_database(empty_database_url: str) -> Iterator[tuple[str, Engine]]:
    """A database at the previous revision holding two requests, one with a priced line."""
    migrate.upgrade(empty_database_url, BEFORE)
    engine = make_engine(empty_database_url)
    with engine.begin() as connection:
        for number in (1, 2):
            connection.execute(text(INSERT.format(extra="", values="")),
                               {"t": f"token{number}", "r": f"Q-{number:08d}"})
        connection.execute(text(
            "INSERT INTO quote_line (quote_request_id, position, item_kind, item_slug, "
            "description, quantity, unit_price_eur_net, discount_percent) SELECT id, 1, 'gpu', "
            "'h200', 'H200', 1, 30000, 0 FROM quote_request WHERE reference = 'Q-00000001'"))
    try:
        yield empty_database_url, engine
    finally:
        engine.dispose()


def _workloads(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as connection:
        rows = connection.execute(text(
            "SELECT reference, workload FROM quote_request ORDER BY reference")).all()
    return [(row[0], row[1]) for row in rows]


def test_existing_requests_read_as_training_and_keep_their_lines(
    old_database: tuple[str, Engine],
) -> None:
    url, engine = old_database
    migrate.upgrade(url)
    assert _workloads(engine) == [("Q-00000001", "training"), ("Q-00000002", "training")]
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM quote_line")).scalar_one() == 1
    migrate.downgrade(url, BEFORE)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM quote_request")).scalar_one() == 2
        assert connection.execute(text("SELECT count(*) FROM quote_line")).scalar_one() == 1
    migrate.upgrade(url)
    assert _workloads(engine) == [("Q-00000001", "training"), ("Q-00000002", "training")]


def test_a_serving_request_is_stored_and_no_other_workload_is(
    old_database: tuple[str, Engine],
) -> None:
    url, engine = old_database
    migrate.upgrade(url)
    insert = text(INSERT.format(extra=", workload", values=", :w"))
    with engine.begin() as connection:
        connection.execute(insert, {"t": "token3", "r": "Q-00000003", "w": "serving"})
    assert ("Q-00000003", "serving") in _workloads(engine)
    with pytest.raises(IntegrityError), engine.begin() as connection:
        connection.execute(insert, {"t": "token4", "r": "Q-00000004", "w": "inference"})
