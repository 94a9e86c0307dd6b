"""quote requests keep their workload: fine-tuning ("training") or serving

A quote asked from the Serve page (``/serve``) must carry the serving
sizing (weights, KV cache, concurrency, tokens/s), not a training one. ``quote_request.workload``
says which calculator the request came from, so the customer's page, the desk and the print
view show that sizing and link back to that calculator; ``calculator_query`` holds that
calculator's inputs and ``sizing`` its snapshot, as before.

Every existing request came from the fine-tuning calculator or the partner API's training
estimate, so all are "training" (the server default). The column is added in place, NOT NULL
with that default and its CHECK written into ADD COLUMN, which both SQLite and PostgreSQL take:
no table rebuild, so SQLite never drops ``quote_request`` with its lines and audit references
(see 20261203_0004). The downgrade drops the column in place (SQLite 3.35 or newer).

Revision ID: 20261203_0006
Revises: 20261203_0005
Create Date: 2026-12-03
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261203_0006"
down_revision: str | None = "20261203_0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WORKLOADS = ("training", "serving")
"""``app.quotes.schemas.WORKLOADS`` as of this revision."""


def upgrade() -> None:
    allowed = ", ".join(f"'{workload}'" for workload in WORKLOADS)
    op.execute(
        "ALTER TABLE quote_request ADD COLUMN workload VARCHAR(16) DEFAULT 'training' NOT NULL "
        f"CONSTRAINT ck_quote_request_workload CHECK (workload IN ({allowed}))"
    )


def downgrade() -> None:
    op.drop_column("quote_request", "workload")
