"""catalog: gpu_sku, system, model_card and the catalog_revision counter

Written by hand to match app/db/tables.py exactly; tests/test_migrations.py
proves it (autogenerate finds no drift on SQLite and PostgreSQL).

Revision ID: 20261202_0001
Revises:
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261202_0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STOCK = "stock_status IN ('in_stock', 'on_order', 'on_request')"


def _timestamps() -> list[sa.Column[object]]:
    return [
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.Column("version", sa.Integer(), nullable=False),
    ]


def upgrade() -> None:
    _create_gpu_sku()
    _create_model_card()
    _create_system()
    _create_catalog_revision()


def _create_gpu_sku() -> None:
    op.create_table(
        "gpu_sku",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("architecture", sa.String(length=200), nullable=False),
        sa.Column("compute_capability", sa.String(length=8), nullable=False),
        sa.Column("memory_nominal_gb", sa.Integer(), nullable=False),
        sa.Column("usable_bytes", sa.BigInteger(), nullable=False),
        sa.Column("usable_basis", sa.Text(), nullable=False),
        sa.Column("memory_type", sa.String(length=200), nullable=False),
        sa.Column("memory_bandwidth_gbps", sa.Float(), nullable=False),
        sa.Column("bf16_dense_tflops", sa.Float(), nullable=True),
        sa.Column("fp8_dense_tflops", sa.Float(), nullable=True),
        sa.Column("fp4_dense_tflops", sa.Float(), nullable=True),
        sa.Column("interconnect", sa.String(length=32), nullable=False),
        sa.Column("interconnect_bandwidth_gbps", sa.Float(), nullable=True),
        sa.Column("max_power_w", sa.Integer(), nullable=True),
        sa.Column("form_factor", sa.String(length=200), nullable=False),
        sa.Column("mig_instances", sa.Integer(), nullable=True),
        sa.Column("price_eur_net", sa.Numeric(precision=12, scale=2), nullable=True),
        sa.Column("stock_status", sa.String(length=16), nullable=False),
        sa.Column("product_url", sa.String(length=500), nullable=True),
        sa.Column("active", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column("sources", sa.JSON(), nullable=False),
        *_timestamps(),
        sa.CheckConstraint(STOCK, name=op.f("ck_gpu_sku_stock_status")),
        sa.CheckConstraint("usable_bytes > 0", name=op.f("ck_gpu_sku_usable_bytes_positive")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gpu_sku")),
        sa.UniqueConstraint("slug", name=op.f("uq_gpu_sku_slug")),
    )


def _create_model_card() -> None:
    op.create_table(
        "model_card",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("slug", sa.String(length=100), nullable=False),
        sa.Column("hf_id", sa.String(length=200), nullable=False),
        sa.Column("family", sa.String(length=64), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("params_total", sa.BigInteger(), nullable=False),
        sa.Column("params_active", sa.BigInteger(), nullable=False),
        sa.Column("params_linear", sa.BigInteger(), nullable=False),
        sa.Column("params_embedding", sa.BigInteger(), nullable=False),
        sa.Column("params_lm_head", sa.BigInteger(), nullable=False),
        sa.Column("params_norm", sa.BigInteger(), nullable=False),
        sa.Column("params_other", sa.BigInteger(), nullable=False),
        sa.Column("max_positions", sa.Integer(), nullable=True),
        sa.Column("license", sa.String(length=100), nullable=False),
        sa.Column("gated", sa.Boolean(), nullable=False),
        sa.Column("active", sa.Boolean(), server_default=sa.true(), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_card")),
        sa.UniqueConstraint("slug", name=op.f("uq_model_card_slug")),
    )


def _create_system() -> None:
    op.create_table(
        "system",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("gpu_sku_id", sa.Integer(), nullable=False),
        sa.Column("gpu_count", sa.Integer(), nullable=False),
        sa.Column("gpu_interconnect", sa.String(length=200), nullable=False),
        sa.Column("host_ram_gb", sa.Integer(), nullable=True),
        sa.Column("price_eur_net", sa.Numeric(precision=12, scale=2), nullable=True),
        sa.Column("product_url", sa.String(length=500), nullable=True),
        sa.Column("stock_status", sa.String(length=16), nullable=False),
        sa.Column("active", sa.Boolean(), server_default=sa.true(), nullable=False),
        *_timestamps(),
        sa.CheckConstraint(STOCK, name=op.f("ck_system_stock_status")),
        sa.CheckConstraint(
            "kind IN ('workstation', 'server', 'appliance')", name=op.f("ck_system_kind")
        ),
        sa.CheckConstraint("gpu_count > 0", name=op.f("ck_system_gpu_count_positive")),
        sa.ForeignKeyConstraint(
            ["gpu_sku_id"],
            ["gpu_sku.id"],
            name=op.f("fk_system_gpu_sku_id_gpu_sku"),
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_system")),
        sa.UniqueConstraint("slug", name=op.f("uq_system_slug")),
    )
    op.create_index(op.f("ix_system_gpu_sku_id"), "system", ["gpu_sku_id"], unique=False)


def _create_catalog_revision() -> None:
    catalog_revision = op.create_table(
        "catalog_revision",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("token", sa.String(length=32), nullable=False),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.CheckConstraint("id = 1", name=op.f("ck_catalog_revision_single_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_catalog_revision")),
    )
    # The one row every catalog write bumps; it must exist before the first read.
    op.bulk_insert(catalog_revision, [{"id": 1, "revision": 0, "token": "initial"}])


def downgrade() -> None:
    op.drop_table("catalog_revision")
    op.drop_index(op.f("ix_system_gpu_sku_id"), table_name="system")
    op.drop_table("system")
    op.drop_table("model_card")
    op.drop_table("gpu_sku")
