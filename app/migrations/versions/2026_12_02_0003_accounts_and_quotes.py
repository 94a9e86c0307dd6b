"""partners and API keys, staff users, sessions and audit log, quote workflow and lines

Written by hand to match app/db/tables.py; tests/test_migrations.py checks that
autogenerate finds no drift on SQLite and PostgreSQL. quote_request is altered in
batch mode so that SQLite (which cannot add a constraint in place) gets the same schema.

Revision ID: 20261202_0003
Revises: 20261202_0002
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261202_0003"
down_revision: str | None = "20261202_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _created_at(name: str = "created_at") -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def upgrade() -> None:
    _create_partner()
    _create_api_key()
    _create_staff_user()
    _create_staff_session()
    _create_audit_log()
    _alter_quote_request()
    _create_quote_line()


def _create_partner() -> None:
    op.create_table(
        "partner",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("active", sa.Boolean(), server_default=sa.true(), nullable=False),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_partner")),
        sa.UniqueConstraint("slug", name=op.f("uq_partner_slug")),
    )


def _create_api_key() -> None:
    op.create_table(
        "api_key",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("partner_id", sa.Integer(), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=200), server_default="", nullable=False),
        _created_at(),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("rate_limit_per_minute", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["partner_id"],
            ["partner.id"],
            name=op.f("fk_api_key_partner_id_partner"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_key")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_key_key_hash")),
        sa.UniqueConstraint("prefix", name=op.f("uq_api_key_prefix")),
    )
    op.create_index(op.f("ix_api_key_partner_id"), "api_key", ["partner_id"])


def _create_staff_user() -> None:
    op.create_table(
        "staff_user",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("display_name", sa.String(length=200), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("active", sa.Boolean(), server_default=sa.true(), nullable=False),
        _created_at(),
        sa.Column("last_sign_in_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("role IN ('sales', 'admin')", name=op.f("ck_staff_user_role")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_staff_user")),
        sa.UniqueConstraint("email", name=op.f("uq_staff_user_email")),
    )


def _create_staff_session() -> None:
    op.create_table(
        "staff_session",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("staff_user_id", sa.Integer(), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        _created_at(),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["staff_user_id"],
            ["staff_user.id"],
            name=op.f("fk_staff_session_staff_user_id_staff_user"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_staff_session")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_staff_session_token_hash")),
    )
    op.create_index(op.f("ix_staff_session_staff_user_id"), "staff_session", ["staff_user_id"])


def _create_audit_log() -> None:
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), nullable=False),
        _created_at("at"),
        sa.Column("staff_user_id", sa.Integer(), nullable=True),
        sa.Column("actor", sa.String(length=254), nullable=False),
        sa.Column("entity", sa.String(length=32), nullable=False),
        sa.Column("entity_key", sa.String(length=100), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["staff_user_id"],
            ["staff_user.id"],
            name=op.f("fk_audit_log_staff_user_id_staff_user"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    op.create_index(op.f("ix_audit_log_at"), "audit_log", ["at"])
    op.create_index(op.f("ix_audit_log_staff_user_id"), "audit_log", ["staff_user_id"])


def _alter_quote_request() -> None:
    with op.batch_alter_table("quote_request") as batch:
        batch.add_column(
            sa.Column("status", sa.String(length=16), server_default="new", nullable=False)
        )
        batch.add_column(sa.Column("partner_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("partner_reference", sa.String(length=100), nullable=True))
        batch.add_column(
            sa.Column(
                "updated_at",
                sa.DateTime(timezone=True),
                server_default=sa.func.now(),
                nullable=False,
            )
        )
        batch.add_column(sa.Column("version", sa.Integer(), server_default="1", nullable=False))
        batch.add_column(sa.Column("staff_notes", sa.Text(), nullable=True))
        batch.add_column(sa.Column("valid_until", sa.Date(), nullable=True))
        batch.add_column(sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(
            sa.Column("vat_rate_percent", sa.Numeric(precision=5, scale=2), nullable=True)
        )
        batch.create_check_constraint(
            "status", "status IN ('new', 'in_progress', 'sent', 'accepted', 'expired')"
        )
        batch.create_foreign_key(
            op.f("fk_quote_request_partner_id_partner"),
            "partner",
            ["partner_id"],
            ["id"],
            ondelete="RESTRICT",
        )
        batch.create_index(op.f("ix_quote_request_partner_id"), ["partner_id"])


def _create_quote_line() -> None:
    op.create_table(
        "quote_line",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("quote_request_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("item_kind", sa.String(length=16), nullable=False),
        sa.Column("item_slug", sa.String(length=64), nullable=True),
        sa.Column("description", sa.String(length=200), nullable=False),
        sa.Column("quantity", sa.Integer(), nullable=False),
        sa.Column("unit_price_eur_net", sa.Numeric(precision=12, scale=2), nullable=False),
        sa.Column(
            "discount_percent",
            sa.Numeric(precision=5, scale=2),
            server_default="0",
            nullable=False,
        ),
        sa.CheckConstraint(
            "item_kind IN ('gpu', 'system', 'other')", name=op.f("ck_quote_line_item_kind")
        ),
        sa.CheckConstraint("quantity > 0", name=op.f("ck_quote_line_quantity_positive")),
        sa.CheckConstraint(
            "unit_price_eur_net >= 0", name=op.f("ck_quote_line_unit_price_not_negative")
        ),
        sa.CheckConstraint(
            "discount_percent >= 0 AND discount_percent <= 100",
            name=op.f("ck_quote_line_discount_range"),
        ),
        sa.ForeignKeyConstraint(
            ["quote_request_id"],
            ["quote_request.id"],
            name=op.f("fk_quote_line_quote_request_id_quote_request"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_quote_line")),
    )
    op.create_index(op.f("ix_quote_line_quote_request_id"), "quote_line", ["quote_request_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_quote_line_quote_request_id"), table_name="quote_line")
    op.drop_table("quote_line")
    with op.batch_alter_table("quote_request") as batch:
        batch.drop_index(op.f("ix_quote_request_partner_id"))
        batch.drop_constraint(op.f("fk_quote_request_partner_id_partner"), type_="foreignkey")
        batch.drop_constraint(op.f("ck_quote_request_status"), type_="check")
        for column in (
            "vat_rate_percent",
            "sent_at",
            "valid_until",
            "staff_notes",
            "version",
            "updated_at",
            "partner_reference",
            "partner_id",
            "status",
        ):
            batch.drop_column(column)
    op.drop_index(op.f("ix_audit_log_staff_user_id"), table_name="audit_log")
    op.drop_index(op.f("ix_audit_log_at"), table_name="audit_log")
    op.drop_table("audit_log")
    op.drop_index(op.f("ix_staff_session_staff_user_id"), table_name="staff_session")
    op.drop_table("staff_session")
    op.drop_table("staff_user")
    op.drop_index(op.f("ix_api_key_partner_id"), table_name="api_key")
    op.drop_table("api_key")
    op.drop_table("partner")
