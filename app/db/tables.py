"""Catalog tables (typed ORM).

Units are in the column names. Bandwidths named ``*_gbps`` are gigaBYTES per
second (GB/s), as NVIDIA's datasheets print memory and NVLink bandwidth.
Relationships are ``lazy="raise"`` so that no template or service can trigger a
hidden query: whoever needs related rows loads them explicitly in the repository.

The vocabularies the CHECK constraints hold columns to (stock statuses, system kinds, quote
statuses, item and line kinds, staff roles) are the domains' words, kept in
``app/vocabularies.py`` below both, so the database layer imports no domain (an import
contract); the domains name them to their users.

Staff-owned columns (``price_eur_net``, ``stock_status``, ``active``,
``product_url``) are only written by the seed on insert; everything else is a
fact the seed files own and refresh.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Date,
    Float,
    ForeignKey,
    Integer,
    Numeric,
    String,
    Text,
    UniqueConstraint,
    false,
    func,
    true,
)
from sqlalchemy.orm import Mapped, declared_attr, mapped_column, relationship

from app.db.base import Base, utcnow
from app.db.types import UtcDateTime
from app.vocabularies import (
    ITEM_KINDS,
    LINE_KINDS,
    QUOTE_STATUSES,
    STAFF_ROLES,
    STOCK_STATUSES,
    SYSTEM_KINDS,
    WORKLOADS,
)


def _in(column: str, values: tuple[str, ...]) -> str:
    quoted = ", ".join(f"'{value}'" for value in values)
    return f"{column} IN ({quoted})"


class _Timestamped:
    """updated_at and the optimistic-locking version every catalog row carries."""

    updated_at: Mapped[datetime] = mapped_column(
        UtcDateTime,
        default=utcnow,
        onupdate=utcnow,
        server_default=func.now(),
    )
    # Bumped by SQLAlchemy on every UPDATE (version_id_col); a stale staff edit
    # then fails with StaleDataError instead of silently overwriting a newer one.
    version: Mapped[int] = mapped_column(Integer, nullable=False)

    @declared_attr.directive
    def __mapper_args__(cls) -> dict[str, Any]:
        return {"version_id_col": cls.version}


class GpuSku(_Timestamped, Base):
    """A card the shop sells, with the facts the engine needs and their sources."""

    __tablename__ = "gpu_sku"
    __table_args__ = (
        CheckConstraint(_in("stock_status", STOCK_STATUSES), name="stock_status"),
        CheckConstraint("usable_bytes > 0", name="usable_bytes_positive"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    architecture: Mapped[str] = mapped_column(String(200))
    compute_capability: Mapped[str] = mapped_column(String(8))
    memory_nominal_gb: Mapped[int] = mapped_column(Integer)
    usable_bytes: Mapped[int] = mapped_column(BigInteger)
    usable_basis: Mapped[str] = mapped_column(Text)
    memory_type: Mapped[str] = mapped_column(String(200))
    memory_bandwidth_gbps: Mapped[float] = mapped_column(Float)
    bf16_dense_tflops: Mapped[float | None] = mapped_column(Float)
    fp8_dense_tflops: Mapped[float | None] = mapped_column(Float)
    fp4_dense_tflops: Mapped[float | None] = mapped_column(Float)
    interconnect: Mapped[str] = mapped_column(String(32))
    interconnect_bandwidth_gbps: Mapped[float | None] = mapped_column(Float)
    max_power_w: Mapped[int | None] = mapped_column(Integer)
    form_factor: Mapped[str] = mapped_column(String(200))
    mig_instances: Mapped[int | None] = mapped_column(Integer)
    price_eur_net: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    # Where the price comes from: a public, dated price from the seed file, shown
    # "indicative" until staff confirm one (price_indicative), or "staff" once staff set it.
    price_indicative: Mapped[bool] = mapped_column(Boolean, default=False,
                                                   server_default=false())
    price_source: Mapped[str | None] = mapped_column(Text)
    price_date: Mapped[str | None] = mapped_column(String(10))
    stock_status: Mapped[str] = mapped_column(String(16), default="on_request")
    product_url: Mapped[str | None] = mapped_column(String(500))
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    sources: Mapped[list[Any]] = mapped_column(JSON, default=list)
    # A card the shop does not sell, kept to compare a customer's own card with:
    # named on purpose only, never recommended, quoted or in a verdict.
    comparison_only: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    systems: Mapped[list[System]] = relationship(back_populates="gpu_sku", lazy="raise")


class System(_Timestamped, Base):
    """A bundle the shop configures: N cards of one SKU in a workstation, server or appliance."""

    __tablename__ = "system"
    __table_args__ = (
        CheckConstraint(_in("stock_status", STOCK_STATUSES), name="stock_status"),
        CheckConstraint(_in("kind", SYSTEM_KINDS), name="kind"),
        CheckConstraint("gpu_count > 0", name="gpu_count_positive"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(16))
    gpu_sku_id: Mapped[int] = mapped_column(
        ForeignKey("gpu_sku.id", ondelete="RESTRICT"), index=True
    )
    gpu_count: Mapped[int] = mapped_column(Integer)
    gpu_interconnect: Mapped[str] = mapped_column(String(200))
    host_ram_gb: Mapped[int | None] = mapped_column(Integer)
    price_eur_net: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    # Where the price comes from: a public, dated price from the seed file, shown
    # "indicative" until staff confirm one (price_indicative), or "staff" once staff set it.
    price_indicative: Mapped[bool] = mapped_column(Boolean, default=False,
                                                   server_default=false())
    price_source: Mapped[str | None] = mapped_column(Text)
    price_date: Mapped[str | None] = mapped_column(String(10))
    product_url: Mapped[str | None] = mapped_column(String(500))
    stock_status: Mapped[str] = mapped_column(String(16), default="on_request")
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())

    gpu_sku: Mapped[GpuSku] = relationship(back_populates="systems", lazy="raise")


class ModelCard(_Timestamped, Base):
    """A model customers can size: its real config.json and the engine's parameter split."""

    __tablename__ = "model_card"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    slug: Mapped[str] = mapped_column(String(100), unique=True)
    hf_id: Mapped[str] = mapped_column(String(200))
    family: Mapped[str] = mapped_column(String(64))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    params_total: Mapped[int] = mapped_column(BigInteger)
    params_active: Mapped[int] = mapped_column(BigInteger)
    params_linear: Mapped[int] = mapped_column(BigInteger)
    params_embedding: Mapped[int] = mapped_column(BigInteger)
    params_lm_head: Mapped[int] = mapped_column(BigInteger)
    params_norm: Mapped[int] = mapped_column(BigInteger)
    params_other: Mapped[int] = mapped_column(BigInteger)
    max_positions: Mapped[int | None] = mapped_column(Integer)
    license: Mapped[str] = mapped_column(String(100))
    gated: Mapped[bool] = mapped_column(Boolean)
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())


class CatalogRevision(Base):
    """The single row every catalog write bumps, so other workers drop their caches.

    ``token`` changes with every bump too: a worker that cached data read inside
    a transaction that was later rolled back can never mistake another worker's
    committed revision N+1 for its own phantom N+1.
    """

    __tablename__ = "catalog_revision"
    __table_args__ = (CheckConstraint("id = 1", name="single_row"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    revision: Mapped[int] = mapped_column(BigInteger)
    token: Mapped[str] = mapped_column(String(32))
    updated_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, onupdate=utcnow, server_default=func.now()
    )


class HubConfig(Base):
    """A config.json fetched from the Hugging Face Hub (``app/catalog/hub.py``): one row per
    repository and revision asked for, with the commit it was read at. A cache: rows may be
    deleted at any time and are fetched again when next asked for."""

    __tablename__ = "hub_config"
    __table_args__ = (UniqueConstraint("repo_key", "revision"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # the repository id in lower case (the Hub's ids are case-insensitive), the cache's key
    repo_key: Mapped[str] = mapped_column(String(200))
    # as the Hub spells it (its model info's ``id``)
    repo_id: Mapped[str] = mapped_column(String(200))
    revision: Mapped[str] = mapped_column(String(128))
    commit_sha: Mapped[str] = mapped_column(String(40))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    fetched_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now()
    )


class QuoteRequest(Base):
    """A customer's request for a quote, with the sizing it was asked from (a snapshot).

    ``token`` is the unguessable key of the customer's permanent page ``/q/<token>``;
    ``reference`` is the short code people quote on the phone and the shop's quote URL
    carries. ``sizing`` is the whole estimate as it was shown (engine version included), so
    a later catalog or engine change never rewrites what the customer saw.
    """

    __tablename__ = "quote_request"
    __table_args__ = (
        CheckConstraint(_in("item_kind", ITEM_KINDS), name="item_kind"),
        CheckConstraint("quantity > 0", name="quantity_positive"),
        CheckConstraint(_in("status", QUOTE_STATUSES), name="status"),
        CheckConstraint(_in("workload", WORKLOADS), name="workload"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token: Mapped[str] = mapped_column(String(64), unique=True)
    reference: Mapped[str] = mapped_column(String(16), unique=True)
    created_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now()
    )
    locale: Mapped[str] = mapped_column(String(8))
    name: Mapped[str] = mapped_column(String(200))
    company: Mapped[str] = mapped_column(String(200))
    email: Mapped[str] = mapped_column(String(254))
    country: Mapped[str] = mapped_column(String(2))
    vat_id: Mapped[str | None] = mapped_column(String(32))
    message: Mapped[str | None] = mapped_column(Text)
    quantity: Mapped[int] = mapped_column(Integer)
    item_kind: Mapped[str] = mapped_column(String(16))
    item_slug: Mapped[str] = mapped_column(String(64))
    item_name: Mapped[str] = mapped_column(String(200))
    item_sku_price_eur_net: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    # Whether that price was the seed catalog's public list price, not yet confirmed by staff,
    # when the customer asked: their pages keep calling it "indicative" as the result did.
    item_price_indicative: Mapped[bool] = mapped_column(Boolean, default=False,
                                                        server_default=false())
    calculator_query: Mapped[str] = mapped_column(Text)
    engine_version: Mapped[str] = mapped_column(String(32))
    sizing: Mapped[dict[str, Any]] = mapped_column(JSON)
    # Which calculator the request came from: the fine-tuning one at / ("training", also the
    # partner API's) or the Serve mode at /serve ("serving"); ``calculator_query`` holds that
    # calculator's inputs and ``sizing`` its snapshot.
    workload: Mapped[str] = mapped_column(String(16), default="training",
                                          server_default="training")
    # Workflow (staff desk): new -> in_progress -> sent -> accepted | expired.
    status: Mapped[str] = mapped_column(String(16), default="new", server_default="new")
    # Set when a partner created the request through the API; a partner sees only its own.
    partner_id: Mapped[int | None] = mapped_column(
        ForeignKey("partner.id", ondelete="RESTRICT"), index=True
    )
    # The partner's own reference for its customer (free text, partner API only).
    partner_reference: Mapped[str | None] = mapped_column(String(100))
    updated_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, onupdate=utcnow, server_default=func.now()
    )
    # Optimistic locking, as on catalog rows: two staff editing one quote can't overwrite.
    version: Mapped[int] = mapped_column(Integer, nullable=False, default=1, server_default="1")
    staff_notes: Mapped[str | None] = mapped_column(Text)
    valid_until: Mapped[date | None] = mapped_column(Date)
    sent_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # VAT rate frozen when the quote is sent (percent, from settings by country).
    vat_rate_percent: Mapped[Decimal | None] = mapped_column(Numeric(5, 2))
    # Marked as spam by staff: hidden from the desk's default list, kept (and audited), so a
    # wrong call can be undone and a flood can be looked at later.
    spam: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # When and how a sent quote was accepted: ``link`` by the customer on
    # their /q/ page, ``desk`` recorded by staff (named in the audit log); NULL before.
    accepted_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    accepted_via: Mapped[str | None] = mapped_column(String(8))

    lines: Mapped[list[QuoteLine]] = relationship(
        back_populates="quote_request",
        lazy="raise",
        order_by="(QuoteLine.position, QuoteLine.id)",
        cascade="all, delete-orphan",
    )
    partner: Mapped[Partner | None] = relationship(lazy="raise")

    __mapper_args__ = {"version_id_col": version}  # noqa: RUF012 (SQLAlchemy reads it once)


class QuoteLine(Base):
    """One priced line of a quote. Prices are copied in, so later catalog changes never alter it."""

    __tablename__ = "quote_line"
    __table_args__ = (
        CheckConstraint(_in("item_kind", LINE_KINDS), name="item_kind"),
        CheckConstraint("quantity > 0", name="quantity_positive"),
        CheckConstraint("unit_price_eur_net >= 0", name="unit_price_not_negative"),
        CheckConstraint(
            "discount_percent >= 0 AND discount_percent <= 100", name="discount_range"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    quote_request_id: Mapped[int] = mapped_column(
        ForeignKey("quote_request.id", ondelete="CASCADE"), index=True
    )
    position: Mapped[int] = mapped_column(Integer)
    item_kind: Mapped[str] = mapped_column(String(16))
    item_slug: Mapped[str | None] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(String(200))
    quantity: Mapped[int] = mapped_column(Integer)
    unit_price_eur_net: Mapped[Decimal] = mapped_column(Numeric(12, 2))
    discount_percent: Mapped[Decimal] = mapped_column(
        Numeric(5, 2), default=Decimal("0"), server_default="0"
    )

    quote_request: Mapped[QuoteRequest] = relationship(back_populates="lines", lazy="raise")


class Partner(Base):
    """A reseller or integrator using the JSON API; owns API keys and quote requests.

    ``id`` is the partner's identity: keys and quote requests point at it, and issuing a key
    names it. ``slug`` is a short ASCII handle for lists, URLs and the CLI. ``name_key`` is
    the name folded the way people confuse names (case, accents, punctuation: "Müller AG",
    "MULLER-AG"); it is unique, so a second partner that reads like an existing one is
    refused instead of being mistaken for it.
    """

    __tablename__ = "partner"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    name_key: Mapped[str] = mapped_column(String(200), index=True, unique=True)
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    created_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now()
    )


class ApiKey(Base):
    """A partner's API key. Only a SHA-256 of the key is kept (keys are 256-bit random,
    so a slow hash adds nothing); ``prefix`` is the key's first characters, shown in lists."""

    __tablename__ = "api_key"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    partner_id: Mapped[int] = mapped_column(
        ForeignKey("partner.id", ondelete="CASCADE"), index=True
    )
    prefix: Mapped[str] = mapped_column(String(16), unique=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    label: Mapped[str] = mapped_column(String(200), default="", server_default="")
    created_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now()
    )
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # Requests per minute; None means the service default (settings).
    rate_limit_per_minute: Mapped[int | None] = mapped_column(Integer)

    partner: Mapped[Partner] = relationship(lazy="raise")


class StaffUser(Base):
    """A member of the shop's staff who signs in to /staff. argon2id hash only."""

    __tablename__ = "staff_user"
    __table_args__ = (CheckConstraint(_in("role", STAFF_ROLES), name="role"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    display_name: Mapped[str] = mapped_column(String(200))
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(16))
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    created_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now()
    )
    last_sign_in_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class StaffSession(Base):
    """A signed-in staff session. The cookie holds a random token; only its SHA-256 is kept,
    so a database leak can't be replayed, and sign-out deletes the row."""

    __tablename__ = "staff_session"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    staff_user_id: Mapped[int] = mapped_column(
        ForeignKey("staff_user.id", ondelete="CASCADE"), index=True
    )
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now()
    )
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)


class AuditLog(Base):
    """Who changed what, when: before and after as JSON. Written in the same transaction
    as the change, so a change without its audit row can't be committed."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now(), index=True
    )
    staff_user_id: Mapped[int | None] = mapped_column(
        ForeignKey("staff_user.id", ondelete="SET NULL"), index=True
    )
    actor: Mapped[str] = mapped_column(String(254))
    entity: Mapped[str] = mapped_column(String(32))
    entity_key: Mapped[str] = mapped_column(String(100))
    action: Mapped[str] = mapped_column(String(32))
    before: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    after: Mapped[dict[str, Any] | None] = mapped_column(JSON)
