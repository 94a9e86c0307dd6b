"""quote_request.accepted_at and accepted_via: when and where a quote was accepted

A customer accepts a sent quote on its /q/ page, or staff record an
acceptance that came by phone or e-mail on the desk. The status says "accepted"; these say
when (UTC) and how (``link``: the customer's own page; ``desk``: staff, named in the audit
log). Both stay NULL until then. The quote's lines, prices and VAT rate are frozen from sending
on, so what was accepted is exactly the quote as sent (and the audit entry keeps it too).

Revision ID: 20261203_0007
Revises: 20261203_0006
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261203_0007"
down_revision: str | None = "20261203_0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD/DROP COLUMN, not a batch: SQLite's batch copy would move 0006's inline CHECK
    # on workload into a table constraint, and 0006's own DROP COLUMN would then fail.
    op.add_column("quote_request", sa.Column("accepted_at", sa.DateTime(timezone=True)))
    op.add_column("quote_request", sa.Column("accepted_via", sa.String(length=8)))


def downgrade() -> None:
    op.drop_column("quote_request", "accepted_via")
    op.drop_column("quote_request", "accepted_at")
