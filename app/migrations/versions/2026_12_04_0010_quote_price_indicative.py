"""quote_request.item_price_indicative: the price a customer asked at was indicative

A quote request stores the card's or system's net price as the result showed it
(``item_sku_price_eur_net``). Since 0009 that price may be the seed catalog's public list
price, which the result calls "indicative" until staff confirm one; this flag keeps that word
with the stored price, so the customer's /q/ page and the desk still say it.

Existing rows: a request whose item is still at the seed's indicative price, and at the very
price the request stored, was shown that price as indicative (a staff price clears the flag on
the catalog row, 0009); every other row keeps false.

Revision ID: 20261204_0010
Revises: 20261204_0009
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261204_0010"
down_revision: str | None = "20261204_0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ITEM_TABLES = {"gpu": "gpu_sku", "system": "system"}
"""quote_request.item_kind -> the catalog table its item_slug names."""


def upgrade() -> None:
    # Plain ADD/DROP COLUMN, as 0007: a batch copy on SQLite would rewrite the table's CHECKs.
    op.add_column("quote_request", sa.Column("item_price_indicative", sa.Boolean(),
                                             nullable=False, server_default=sa.false()))
    for kind, table in ITEM_TABLES.items():
        op.execute(sa.text(
            "UPDATE quote_request SET item_price_indicative = :yes "
            f"WHERE item_kind = :kind AND EXISTS (SELECT 1 FROM {table} c "
            "WHERE c.slug = quote_request.item_slug AND c.price_indicative = :yes "
            "AND c.price_eur_net = quote_request.item_sku_price_eur_net)"
        ).bindparams(yes=True, kind=kind))


def downgrade() -> None:
    op.drop_column("quote_request", "item_price_indicative")
