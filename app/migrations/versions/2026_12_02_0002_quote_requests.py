"""quote requests from the storefront, with their sizing snapshot

Written by hand to match app/db/tables.py (QuoteRequest); tests/test_migrations.py checks
that autogenerate finds no drift on SQLite and PostgreSQL.

Revision ID: 20261202_0002
Revises: 20261202_0001
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261202_0002"
down_revision: str | None = "20261202_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "quote_request",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.Column("reference", sa.String(length=16), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.Column("locale", sa.String(length=8), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("company", sa.String(length=200), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("country", sa.String(length=2), nullable=False),
        sa.Column("vat_id", sa.String(length=32), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("quantity", sa.Integer(), nullable=False),
        sa.Column("item_kind", sa.String(length=16), nullable=False),
        sa.Column("item_slug", sa.String(length=64), nullable=False),
        sa.Column("item_name", sa.String(length=200), nullable=False),
        sa.Column("item_sku_price_eur_net", sa.Numeric(precision=12, scale=2), nullable=True),
        sa.Column("calculator_query", sa.Text(), nullable=False),
        sa.Column("engine_version", sa.String(length=32), nullable=False),
        sa.Column("sizing", sa.JSON(), nullable=False),
        sa.CheckConstraint(
            "item_kind IN ('gpu', 'system')", name=op.f("ck_quote_request_item_kind")
        ),
        sa.CheckConstraint("quantity > 0", name=op.f("ck_quote_request_quantity_positive")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_quote_request")),
        sa.UniqueConstraint("reference", name=op.f("uq_quote_request_reference")),
        sa.UniqueConstraint("token", name=op.f("uq_quote_request_token")),
    )


def downgrade() -> None:
    op.drop_table("quote_request")
