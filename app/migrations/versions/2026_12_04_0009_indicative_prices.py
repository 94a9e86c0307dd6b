"""gpu_sku / system: price_indicative, price_source, price_date

The seed catalog carries public, dated prices (a vendor's list price at
launch, converted to EUR at a stated, dated rate) so that a fresh install can rank offers by
price; such a price is shown "indicative" until staff confirm one. ``price_source`` says where
a price comes from: the seed's source text, or ``staff`` for a price staff set (or cleared) in
the desk, which a re-seed never touches.

Existing rows: every price in the database was set by staff (the seed had none before this
revision), so a row with a price is marked ``staff``; a row without one stays unmarked, and the
next ``sizer db seed`` gives it the seed's indicative price where the seed has one.

Revision ID: 20261204_0009
Revises: 20261204_0008
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261204_0009"
down_revision: str | None = "20261204_0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("gpu_sku", "system")


def upgrade() -> None:
    for table in TABLES:
        op.add_column(table, sa.Column("price_indicative", sa.Boolean(), nullable=False,
                                       server_default=sa.false()))
        op.add_column(table, sa.Column("price_source", sa.Text(), nullable=True))
        op.add_column(table, sa.Column("price_date", sa.String(length=10), nullable=True))
        op.execute(sa.text(f"UPDATE {table} SET price_source = 'staff' "
                           "WHERE price_eur_net IS NOT NULL"))


def downgrade() -> None:
    # Plain DROP COLUMN, as 0008: a batch copy on SQLite would rewrite the tables' CHECKs.
    for table in TABLES:
        for column in ("price_date", "price_source", "price_indicative"):
            op.drop_column(table, column)
