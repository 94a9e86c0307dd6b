"""Migration 20261203_0004 on data (SQLite and PostgreSQL): existing partners keep their id,
slug, keys and quote requests and get a folded ``name_key``; two whose names fold alike both
stay; every existing request starts unmarked as spam; downgrade and upgrade again work."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text

from app.db import migrate
from app.db.session import make_engine

BEFORE = "20261202_0003"
PARTNERS = [  # id, slug (the old ASCII slugs), name
    (1, "muller-ag", "Muller AG"),
    (2, "strae-gmbh", "Straße GmbH"),  # the old slug dropped the ß ...
    (3, "strasse-gmbh", "Strasse GmbH"),  # ... so both existed; they fold alike now
    (4, "a", "Ä"),
]


@pytest.fixture
def old_database(empty_database_url: str) -> Iterator[tuple[str, Engine]]:
    """A database at the previous revision with partners, keys and their quote requests."""
    migrate.upgrade(empty_database_url, BEFORE)
    engine = make_engine(empty_database_url)
    with engine.begin() as connection:
        for partner_id, slug, name in PARTNERS:
            connection.execute(text(
                "INSERT INTO partner (id, slug, name, active) VALUES (:i, :s, :n, :a)"
            ), {"i": partner_id, "s": slug, "n": name, "a": True})
            connection.execute(text(
                "INSERT INTO api_key (partner_id, prefix, key_hash, label) "
                "VALUES (:i, :p, :h, '')"
            ), {"i": partner_id, "p": f"gsz_key{partner_id}", "h": f"{partner_id:064d}"})
            connection.execute(text(
                "INSERT INTO quote_request (token, reference, locale, name, company, email, "
                "country, quantity, item_kind, item_slug, item_name, calculator_query, "
                "engine_version, sizing, partner_id) VALUES (:t, :r, 'en', 'Ada', 'Co', "
                "'a@example.com', 'DE', 1, 'gpu', 'h200', 'H200', '', '1', '{}', :i)"
            ), {"t": f"token{partner_id}", "r": f"Q-{partner_id:08d}", "i": partner_id})
    try:
        yield empty_database_url, engine
    finally:
        engine.dispose()


def test_existing_partners_keep_their_keys_and_quote_requests(
    old_database: tuple[str, Engine],
) -> None:
    url, engine = old_database
    migrate.upgrade(url)
    with engine.connect() as connection:
        partners = connection.execute(text(
            "SELECT id, slug, name, name_key FROM partner ORDER BY id")).all()
        assert [tuple(row) for row in partners] == [
            (1, "muller-ag", "Muller AG", "muller-ag"),
            (2, "strae-gmbh", "Straße GmbH", "strasse-gmbh"),
            (3, "strasse-gmbh", "Strasse GmbH", "strasse-gmbh~3"),
            (4, "a", "Ä", "a"),
        ]
        owners = connection.execute(text(
            "SELECT q.reference, q.partner_id, k.prefix, q.spam FROM quote_request q "
            "JOIN api_key k ON k.partner_id = q.partner_id ORDER BY q.id")).all()
        assert [tuple(row) for row in owners] == [
            (f"Q-{i:08d}", i, f"gsz_key{i}", False) for i, _, _ in PARTNERS
        ]
    migrate.downgrade(url, BEFORE)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM quote_request "
                                       "WHERE partner_id IS NOT NULL")).scalar_one() == 4
    migrate.upgrade(url)
    with engine.connect() as connection:
        assert connection.execute(text(
            "SELECT count(DISTINCT name_key) FROM partner")).scalar_one() == 4
