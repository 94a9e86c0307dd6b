"""Partner API keys: issue, list, revoke, authenticate. Services never commit.

A key is ``gsz_`` followed by 43 URL-safe characters (256 random bits). Only its SHA-256 is
stored (a slow hash adds nothing to a 256-bit random secret); ``prefix``, the key's first
12 characters, names it in lists and in ``sizer apikey revoke``. The plaintext exists only in
the return value of :func:`issue_key`, to be shown once.

The CLI (``sizer apikey``) and the staff desk call these same functions.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.base import utcnow
from app.db.tables import ApiKey, Partner
from app.errors import InvalidInput, NotFound

KEY_SCHEME = "gsz_"
KEY_RANDOM_BYTES = 32
PREFIX_LENGTH = 12
"""``gsz_`` plus 8 random characters (48 bits): unique in practice, checked anyway."""
MAX_PARTNER_NAME = 200
MAX_LABEL = 200
MAX_KEY_LENGTH = 128
"""Longer bearer values are rejected before hashing."""
LAST_USED_RESOLUTION = timedelta(minutes=1)
"""``last_used_at`` is written at most once a minute per key: staff read it to see whether a
key is still in use, to the minute (the CLI shows minutes); writing it on every request made
each API call an UPDATE and a commit, a third of an estimate's server time under load."""
PRINCIPAL_CACHE_S = 1.0
"""How long a worker trusts a key it has just checked, without asking the database again. Each
API call was one database round trip for the key alone; a key revoked in this process stops at
once (the cache is dropped), one revoked elsewhere (``sizer apikey revoke``, another worker)
within this second."""

_clock = time.monotonic
_lock = threading.Lock()
_principals: dict[tuple[str, str], tuple[float, ApiPrincipal]] = {}


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    """A key as lists show it (never the plaintext, never the hash)."""

    prefix: str
    partner_slug: str
    partner_name: str
    label: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None
    rate_limit_per_minute: int | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True, slots=True)
class ApiPrincipal:
    """Who a valid key speaks for: what the partner API needs for every request."""

    key_prefix: str
    partner_id: int
    partner_slug: str
    rate_limit_per_minute: int | None


def hash_key(plaintext: str) -> str:
    """SHA-256 hex of the key: what the database keeps."""
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def partner_slug(name: str) -> str:
    """``"ACME Compute GmbH"`` -> ``"acme-compute-gmbh"``."""
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:64].strip("-")


def _aware(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:  # SQLite keeps it naive; written as UTC
        return value.replace(tzinfo=UTC)
    return value


def _record(key: ApiKey, partner: Partner) -> ApiKeyRecord:
    created = _aware(key.created_at) or utcnow()
    return ApiKeyRecord(
        prefix=key.prefix, partner_slug=partner.slug, partner_name=partner.name,
        label=key.label, created_at=created, last_used_at=_aware(key.last_used_at),
        revoked_at=_aware(key.revoked_at), rate_limit_per_minute=key.rate_limit_per_minute,
    )


def _partner(session: Session, name: str) -> Partner:
    clean = " ".join(name.split())
    if not clean or len(clean) > MAX_PARTNER_NAME:
        raise InvalidInput(f"partner: a name of 1 to {MAX_PARTNER_NAME} characters")
    slug = partner_slug(clean)
    if not slug:
        raise InvalidInput("partner: the name needs at least one letter or digit")
    partner = session.scalars(select(Partner).where(Partner.slug == slug)).one_or_none()
    if partner is None:
        partner = Partner(slug=slug, name=clean)
        session.add(partner)
        session.flush()
    return partner


def issue_key(
    session: Session, *, partner_name: str, label: str = "",
    rate_limit_per_minute: int | None = None,
) -> tuple[ApiKeyRecord, str]:
    """A new key for the partner (created if missing): its record and the plaintext (once)."""
    if len(label) > MAX_LABEL:
        raise InvalidInput(f"label: at most {MAX_LABEL} characters")
    if rate_limit_per_minute is not None and not 1 <= rate_limit_per_minute <= 1_000_000:
        raise InvalidInput("rate_limit_per_minute: from 1 to 1000000")
    partner = _partner(session, partner_name)
    while True:
        plaintext = KEY_SCHEME + secrets.token_urlsafe(KEY_RANDOM_BYTES)
        prefix = plaintext[:PREFIX_LENGTH]
        taken = session.scalars(select(ApiKey.id).where(ApiKey.prefix == prefix)).first()
        if taken is None:
            break
    key = ApiKey(
        partner_id=partner.id, prefix=prefix, key_hash=hash_key(plaintext), label=label,
        rate_limit_per_minute=rate_limit_per_minute,
    )
    session.add(key)
    session.flush()
    return _record(key, partner), plaintext


def list_keys(session: Session, *, partner_slug: str | None = None) -> list[ApiKeyRecord]:
    """Every key (or one partner's), oldest first, revoked ones included."""
    query = select(ApiKey, Partner).join(Partner, ApiKey.partner_id == Partner.id)
    if partner_slug is not None:
        query = query.where(Partner.slug == partner_slug)
    rows = session.execute(query.order_by(ApiKey.created_at, ApiKey.id)).all()
    return [_record(key, partner) for key, partner in rows]


def revoke_key(session: Session, *, prefix: str) -> ApiKeyRecord:
    """Revoke the key with this prefix (idempotent: a revoked key keeps its first time)."""
    row = session.execute(
        select(ApiKey, Partner)
        .join(Partner, ApiKey.partner_id == Partner.id)
        .where(ApiKey.prefix == prefix.strip())
    ).one_or_none()
    if row is None:
        raise NotFound(f"api key: no key with prefix {prefix.strip()!r}")
    key, partner = row
    if key.revoked_at is None:
        key.revoked_at = utcnow()
        session.flush()
    forget_checked_keys()
    return _record(key, partner)


@dataclass(frozen=True, slots=True)
class PartnerRecord:
    """A partner as the desk lists it."""

    slug: str
    name: str
    active: bool
    active_keys: int


def list_partners(session: Session) -> list[PartnerRecord]:
    """Every partner by name, with how many unrevoked keys it holds."""
    keys = (
        select(ApiKey.partner_id, func.count().label("n"))
        .where(ApiKey.revoked_at.is_(None)).group_by(ApiKey.partner_id).subquery()
    )
    rows = session.execute(
        select(Partner, func.coalesce(keys.c.n, 0))
        .outerjoin(keys, keys.c.partner_id == Partner.id).order_by(Partner.name, Partner.id)
    ).tuples()
    return [PartnerRecord(p.slug, p.name, p.active, int(n)) for p, n in rows]


def set_partner_active(session: Session, *, slug: str, active: bool) -> bool:
    """Suspend a partner (every key of theirs is refused, nothing is deleted) or reinstate
    them; whether that changed anything. Checked keys cached in this process are dropped at
    once; other workers follow within :data:`PRINCIPAL_CACHE_S`."""
    partner = session.scalars(select(Partner).where(Partner.slug == slug[:64])).one_or_none()
    if partner is None:
        raise NotFound(f"partner: no partner {slug[:64]!r}")
    if partner.active == active:
        return False
    partner.active = active
    session.flush()
    forget_checked_keys()
    return True


def authenticate(session: Session, *, plaintext: str) -> ApiPrincipal | None:
    """The principal of a valid, unrevoked key of an active partner, else None.

    Records the use (``last_used_at``, to :data:`LAST_USED_RESOLUTION`) in the caller's
    transaction."""
    if not plaintext.startswith(KEY_SCHEME) or len(plaintext) > MAX_KEY_LENGTH:
        return None
    cache_key = (str(session.get_bind().engine.url), hash_key(plaintext))
    hit = _principals.get(cache_key)
    if hit is not None and _clock() - hit[0] < PRINCIPAL_CACHE_S:
        return hit[1]
    row = session.execute(
        select(ApiKey, Partner)
        .join(Partner, ApiKey.partner_id == Partner.id)
        .where(ApiKey.key_hash == hash_key(plaintext))
    ).one_or_none()
    if row is None:
        return None
    key, partner = row
    if key.revoked_at is not None or not partner.active:
        return None
    now = utcnow()
    last_used = _aware(key.last_used_at)
    if last_used is None or now - last_used >= LAST_USED_RESOLUTION:
        key.last_used_at = now
        session.flush()
    principal = ApiPrincipal(
        key_prefix=key.prefix, partner_id=partner.id, partner_slug=partner.slug,
        rate_limit_per_minute=key.rate_limit_per_minute,
    )
    with _lock:
        _principals[cache_key] = (_clock(), principal)
    return principal


def forget_checked_keys() -> None:
    """Drop every cached key check in this process (after a revocation, between tests)."""
    with _lock:
        _principals.clear()
