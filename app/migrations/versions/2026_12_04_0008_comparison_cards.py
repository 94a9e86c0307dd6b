"""gpu_sku.comparison_only: cards the shop does not sell, kept for comparison

A customer may hold the job against a card they already have (an H100, an
A100, an RTX 4090-class card) to see what a card the shop sells buys over it. Such a row is a
catalog card like any other (facts, sources), marked ``comparison_only``: named on purpose
(``--gpu h200-sxm``, the API's ``gpu`` list, the page's "compare with a card I already have"),
never listed by default, recommended, quoted or in a verdict. Existing rows are cards the shop
sells (false).

Revision ID: 20261204_0008
Revises: 20261203_0007
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261204_0008"
down_revision: str | None = "20261203_0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("gpu_sku", sa.Column("comparison_only", sa.Boolean(), nullable=False,
                                       server_default=sa.false()))


def downgrade() -> None:
    # Plain DROP COLUMN, as 0007: a batch copy on SQLite would rewrite gpu_sku's CHECKs.
    op.drop_column("gpu_sku", "comparison_only")
