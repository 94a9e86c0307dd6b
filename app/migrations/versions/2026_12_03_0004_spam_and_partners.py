"""quote requests marked as spam; partners keyed by a folded name, never joined by slug

``quote_request.spam`` lets staff hide a spam request from the desk's
default list without deleting it. ``partner.name_key`` (unique) is the partner's name folded
the way people confuse names, so a new partner that reads like an existing one is refused
instead of silently sharing its keys and quote requests.

Existing partners keep their id, slug, keys and quote requests untouched; only ``name_key`` is
filled from their names.

No table is rebuilt, on purpose: SQLite's batch mode copies a table and DROPs the old one, and
dropping ``partner`` with foreign keys on would cascade-delete every API key (``ON DELETE
CASCADE``) or be refused for its quote requests (``RESTRICT``). So both columns are added in
place (NOT NULL with a server default, which SQLite's ADD COLUMN needs), uniqueness is a unique
index (created in place on both databases), and the downgrade drops columns in place (SQLite
3.35 or newer). PostgreSQL then drops the placeholder default of ``name_key``; SQLite cannot
without a rebuild and keeps it (never used: the application always writes the key).

Two existing partners whose names fold alike (possible before, e.g. "Straße" and "Strasse"
had different ASCII slugs) both stay: the later one's key gets ``~<id>``, a character the
folding never produces.

Revision ID: 20261203_0004
Revises: 20261202_0003
Create Date: 2026-12-03
"""

import re
import unicodedata
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261203_0004"
down_revision: str | None = "20261202_0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NAME_KEY_LENGTH = 200
"""``partner.name_key``'s length (as ``app.accounts.api_keys.MAX_PARTNER_NAME_KEY``)."""

_partner = sa.table(
    "partner",
    sa.column("id", sa.Integer()),
    sa.column("name", sa.String()),
    sa.column("name_key", sa.String()),
)


def _name_key(name: str) -> str:
    """A frozen copy of ``app.accounts.api_keys.partner_name_key`` as of this revision: a
    migration must give the same result whatever the application code becomes later."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", name).casefold())
    bare = "".join(char for char in folded if not unicodedata.combining(char))
    key = "-".join(part for part in re.split(r"[\W_]+", bare) if part)
    return key[:NAME_KEY_LENGTH]


def _fill_name_keys() -> None:
    connection = op.get_bind()
    rows = connection.execute(sa.select(_partner.c.id, _partner.c.name).order_by(_partner.c.id))
    used: set[str] = set()
    for partner_id, name in rows.all():
        key = _name_key(name) or f"~{partner_id}"
        if key in used:
            suffix = f"~{partner_id}"
            key = key[: NAME_KEY_LENGTH - len(suffix)] + suffix
        used.add(key)
        connection.execute(
            sa.update(_partner).where(_partner.c.id == partner_id).values(name_key=key)
        )


def upgrade() -> None:
    op.add_column(
        "quote_request",
        sa.Column("spam", sa.Boolean(), server_default=sa.false(), nullable=False),
    )
    op.add_column(
        "partner",
        sa.Column("name_key", sa.String(length=NAME_KEY_LENGTH), server_default="",
                  nullable=False),
    )
    _fill_name_keys()
    op.create_index(op.f("ix_partner_name_key"), "partner", ["name_key"], unique=True)
    if op.get_bind().dialect.name != "sqlite":
        op.alter_column("partner", "name_key", server_default=None,
                        existing_type=sa.String(length=NAME_KEY_LENGTH), existing_nullable=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_partner_name_key"), table_name="partner")
    op.drop_column("partner", "name_key")
    op.drop_column("quote_request", "spam")
