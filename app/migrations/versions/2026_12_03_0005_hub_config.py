"""hub_config: config.json files fetched from the Hugging Face Hub, with their commit

A model named by its Hub repository id (``Qwen/Qwen3-8B``, optionally
``@revision``) is sized from its config.json, fetched once (``app/catalog/hub.py``) and kept
here, one row per repository (lower-cased, the key) and revision asked for, with the commit it
was read at. A cache only: no other table refers to it, and a deleted row is fetched again.

Revision ID: 20261203_0005
Revises: 20261203_0004
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261203_0005"
down_revision: str | None = "20261203_0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "hub_config",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repo_key", sa.String(length=200), nullable=False),
        sa.Column("repo_id", sa.String(length=200), nullable=False),
        sa.Column("revision", sa.String(length=128), nullable=False),
        sa.Column("commit_sha", sa.String(length=40), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("fetched_at", sa.DateTime(timezone=True), server_default=sa.func.now(),
                  nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_hub_config")),
        sa.UniqueConstraint("repo_key", "revision", name=op.f("uq_hub_config_repo_key")),
    )


def downgrade() -> None:
    op.drop_table("hub_config")
