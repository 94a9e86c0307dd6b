"""Partner API keys: issue, list, revoke, authenticate. Services never commit.

A key is ``gsz_`` followed by 43 URL-safe characters (256 random bits). Only its SHA-256 is
stored (a slow hash adds nothing to a 256-bit random secret); ``prefix``, the key's first
12 characters, names it in lists and in ``sizer apikey revoke``. The plaintext exists only in
the return value of :func:`issue_key`, to be shown once.

Partners are rows with their own id, and a key is always issued for a partner named
explicitly (:func:`issue_key` takes its id): an existing one picked from the list, or a new
one made by :func:`create_partner`. Matching partners by ASCII slug instead would attach a
key for "Müller AG" to "Muller AG" and list that partner's quote requests.
A new partner whose name reads like an existing one's (see
:func:`partner_name_key`) is refused with :class:`PartnerNameTaken`, naming that partner.

The CLI (``sizer apikey``) and the staff desk call these same functions.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import Engine, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.base import utcnow
from app.db.tables import ApiKey, Partner
from app.errors import Conflict, InvalidInput, NotFound

KEY_SCHEME = "gsz_"
KEY_RANDOM_BYTES = 32
PREFIX_LENGTH = 12
"""``gsz_`` plus 8 random characters (48 bits): unique in practice, checked anyway."""
MAX_PARTNER_NAME = 200
"""The ``partner.name`` column's length."""
MAX_PARTNER_NAME_KEY = 200
"""The ``partner.name_key`` column's length; a longer folded name is cut (two names alike in
their first 200 folded characters then count as alike, which only ever refuses)."""
MAX_ROW_ID = 2**31
"""Ids are 32-bit INTEGER columns: a larger number names no row (and PostgreSQL would refuse
to compare it with one)."""
SLUG_FALLBACK = "partner"
"""The slug of a name without ASCII letters or digits ("株式会社"), before its suffix."""
SLUG_SUFFIX_BYTES = 3
"""A taken slug gets ``-`` and 6 random hex digits: the slug is a handle, not the identity."""
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


class PartnerNameTaken(Conflict):
    """A new partner's name reads like an existing partner's: the error as data (which field,
    what was asked, which partner it collides with), so each surface words it itself."""

    field = "new_partner_name"

    def __init__(self, *, name: str, existing_id: int | None, existing_name: str | None,
                 existing_slug: str | None) -> None:
        who = (f"the existing partner {existing_name!r} ({existing_slug}, id {existing_id})"
               if existing_name is not None else "a partner created at the same moment")
        super().__init__(f"{name!r} reads like {who}; pick that partner or give a name that "
                         "tells them apart", field=self.field)
        self.name = name
        self.existing_id = existing_id
        self.existing_name = existing_name
        self.existing_slug = existing_slug


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    """A key as lists show it (never the plaintext, never the hash)."""

    prefix: str
    partner_id: int
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


class KeyCheckCache:
    """Keys this process checked in the last :data:`PRINCIPAL_CACHE_S`, by database URL and key
    hash, with the principal each spoke for. Held by the application
    (``app.state.caches.key_checks``, see :mod:`app.caches`) or by a CLI command and passed to
    :func:`authenticate` and to the writers that end a key's validity (:func:`revoke_key`,
    :func:`set_partner_active`), which drop it. Thread-safe; ``clock`` is injectable so tests
    step time instead of sleeping."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._checked: dict[tuple[str, str], tuple[float, ApiPrincipal]] = {}

    def get(self, key: tuple[str, str]) -> ApiPrincipal | None:
        """The principal checked for ``key`` less than :data:`PRINCIPAL_CACHE_S` ago."""
        hit = self._checked.get(key)
        if hit is not None and self._clock() - hit[0] < PRINCIPAL_CACHE_S:
            return hit[1]
        return None

    def put(self, key: tuple[str, str], principal: ApiPrincipal) -> None:
        """Remember that ``key`` was valid now, for ``principal``."""
        with self._lock:
            self._checked[key] = (self._clock(), principal)

    def forget(self) -> None:
        """Drop every check (a key was revoked or a partner suspended in this process)."""
        with self._lock:
            self._checked.clear()


def hash_key(plaintext: str) -> str:
    """SHA-256 hex of the key: what the database keeps."""
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def partner_slug(name: str) -> str:
    """``"ACME Compute GmbH"`` -> ``"acme-compute-gmbh"``: a handle, never the identity."""
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:64].strip("-")


def partner_name_key(name: str) -> str:
    """A name folded the way people confuse names: compatibility forms, case and accents
    dropped, every run of anything but letters and digits one ``-``. ``"Müller AG"``,
    ``"MULLER-AG"`` and ``"Muller AG"`` all give ``"muller-ag"``, ``"Ä"`` gives ``"a"`` (like
    ``"A"``), ``"Straße"`` gives ``"strasse"``; letters of any script are kept (``"株式会社"``).

    Migration ``20261203_0004`` holds a frozen copy to fill the column for existing rows."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", name).casefold())
    bare = "".join(char for char in folded if not unicodedata.combining(char))
    key = "-".join(part for part in re.split(r"[\W_]+", bare) if part)
    return key[:MAX_PARTNER_NAME_KEY]


CONFUSABLES: Final = str.maketrans({
    # Cyrillic capitals and small letters drawn like Latin ones
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "І": "l", "Ј": "J", "Ԛ": "Q", "Ԝ": "W",
    "а": "a", "с": "c", "е": "e", "һ": "h", "і": "i", "ј": "j", "о": "o", "р": "p",
    "ѕ": "s", "х": "x", "у": "y", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l",
    # Greek
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "l", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "ο": "o", "ν": "v", "ι": "i",
    # Latin and digits drawn alike
    "0": "O", "1": "l", "I": "l", "ı": "i", "ɡ": "g", "ɑ": "a",
})
"""Characters drawn like another, mapped to it as Unicode's confusables data (UTS #39,
``confusables.txt``, "Security Mechanisms", section 4) maps them for its skeleton: the
Cyrillic and Greek letters that look like Latin ones, and ``0``/``O``, ``1``/``I``/``l``
("ACME Computе" with a Cyrillic "е" was taken beside "ACME Compute"). A
subset: the letters a company name is spelled with in our markets."""


def partner_skeleton(name: str) -> str:
    """What a name looks like (UTS #39's skeleton, on :data:`CONFUSABLES`, then folded as
    :func:`partner_name_key` folds): ``"ACME Computе"`` (Cyrillic ``е``), ``"ACME C0mpute"``
    and ``"ACME Cornpute"`` all give the skeleton of ``"ACME Compute"``."""
    decomposed = unicodedata.normalize("NFKD", name).translate(CONFUSABLES)
    return partner_name_key(decomposed.replace("rn", "m").replace("vv", "w"))


def _record(key: ApiKey, partner: Partner) -> ApiKeyRecord:
    created = key.created_at or utcnow()
    return ApiKeyRecord(
        prefix=key.prefix, partner_id=partner.id, partner_slug=partner.slug,
        partner_name=partner.name,
        label=key.label, created_at=created, last_used_at=key.last_used_at,
        revoked_at=key.revoked_at, rate_limit_per_minute=key.rate_limit_per_minute,
    )


def _free_slug(session: Session, name: str) -> str:
    """The name's ASCII slug, or that with a random suffix when another partner holds it."""
    base = partner_slug(name) or SLUG_FALLBACK
    slug = base
    while session.scalars(select(Partner.id).where(Partner.slug == slug)).first() is not None:
        slug = f"{base[:64 - 1 - 2 * SLUG_SUFFIX_BYTES]}-{secrets.token_hex(SLUG_SUFFIX_BYTES)}"
    return slug


def create_partner(session: Session, *, name: str) -> PartnerRecord:
    """A new partner with this name (whitespace collapsed). InvalidInput for an empty, long or
    control-character name; :class:`PartnerNameTaken` when it reads like an existing one, or
    looks like one (:func:`partner_skeleton`, checked against every partner)."""
    clean = " ".join(name.split())
    field = PartnerNameTaken.field
    if not clean or len(clean) > MAX_PARTNER_NAME:
        raise InvalidInput(f"a name of 1 to {MAX_PARTNER_NAME} characters", field=field)
    if not clean.isprintable():
        raise InvalidInput("must not contain control or invisible characters", field=field)
    key = partner_name_key(clean)
    if not key:
        raise InvalidInput("the name needs at least one letter or digit", field=field)
    existing = session.scalars(select(Partner).where(Partner.name_key == key)).one_or_none()
    if existing is None:  # drawn alike, in another script or with look-alike characters
        skeleton = partner_skeleton(clean)
        existing = next((partner for partner in session.scalars(select(Partner))
                         if partner_skeleton(partner.name) == skeleton), None)
    if existing is not None:
        raise PartnerNameTaken(name=clean, existing_id=existing.id,
                               existing_name=existing.name, existing_slug=existing.slug)
    partner = Partner(slug=_free_slug(session, clean), name=clean, name_key=key)
    session.add(partner)
    try:
        session.flush()
    except IntegrityError as exc:  # the same name created concurrently; caller rolls back
        raise PartnerNameTaken(name=clean, existing_id=None, existing_name=None,
                               existing_slug=None) from exc
    return PartnerRecord(partner.id, partner.slug, partner.name, partner.active, 0)


def _partner_row(session: Session, *, partner_id: int | None = None,
                 slug: str | None = None) -> Partner:
    if partner_id is not None:
        partner = session.get(Partner, partner_id) if 0 < partner_id < MAX_ROW_ID else None
        field, wanted = "partner_id", f"no partner with id {partner_id}"
    else:
        field, wanted = "partner", f"no partner {(slug or '')[:64]!r}"
        partner = session.scalars(
            select(Partner).where(Partner.slug == (slug or "")[:64])
        ).one_or_none()
    if partner is None:
        raise NotFound(wanted, field=field)
    return partner


def get_partner(session: Session, *, partner_id: int | None = None,
                slug: str | None = None) -> PartnerRecord:
    """One partner by id (or by slug, for the CLI); NotFound otherwise."""
    partner = _partner_row(session, partner_id=partner_id, slug=slug)
    active_keys = session.scalar(
        select(func.count()).select_from(ApiKey)
        .where(ApiKey.partner_id == partner.id, ApiKey.revoked_at.is_(None))
    )
    return PartnerRecord(partner.id, partner.slug, partner.name, partner.active,
                         int(active_keys or 0))


def issue_key(
    session: Session, *, partner_id: int, label: str = "",
    rate_limit_per_minute: int | None = None,
) -> tuple[ApiKeyRecord, str]:
    """A new key for the partner with this id (never one found by its name): its record and
    the plaintext (once). NotFound for an unknown partner, InvalidInput for a suspended one."""
    if len(label) > MAX_LABEL:
        raise InvalidInput(f"at most {MAX_LABEL} characters", field="label")
    if rate_limit_per_minute is not None and not 1 <= rate_limit_per_minute <= 1_000_000:
        raise InvalidInput("from 1 to 1000000", field="rate_limit_per_minute")
    partner = _partner_row(session, partner_id=partner_id)
    if not partner.active:
        raise InvalidInput("the partner is suspended; reinstate it first", field="partner_id")
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


def revoke_key(session: Session, *, prefix: str, checked: KeyCheckCache) -> ApiKeyRecord:
    """Revoke the key with this prefix (idempotent: a revoked key keeps its first time); this
    process's ``checked`` keys are dropped, so the key stops here at once."""
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
    checked.forget()
    return _record(key, partner)


@dataclass(frozen=True, slots=True)
class PartnerRecord:
    """A partner as the desk lists it."""

    id: int
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
    return [PartnerRecord(p.id, p.slug, p.name, p.active, int(n)) for p, n in rows]


def set_partner_active(session: Session, *, partner_id: int, active: bool,
                       checked: KeyCheckCache) -> bool:
    """Suspend a partner (every key of theirs is refused, nothing is deleted) or reinstate
    them; whether that changed anything. This process's ``checked`` keys are dropped at once;
    other workers follow within :data:`PRINCIPAL_CACHE_S`."""
    partner = _partner_row(session, partner_id=partner_id)
    if partner.active == active:
        return False
    partner.active = active
    session.flush()
    checked.forget()
    return True


def _well_formed(plaintext: str) -> bool:
    return plaintext.startswith(KEY_SCHEME) and len(plaintext) <= MAX_KEY_LENGTH


def _check_key(engine: Engine, plaintext: str) -> tuple[str, str]:
    return (str(engine.url), hash_key(plaintext))


def recall(engine: Engine, *, plaintext: str, checked: KeyCheckCache) -> ApiPrincipal | None:
    """The principal :func:`authenticate` found for this key on ``engine``'s database less than
    :data:`PRINCIPAL_CACHE_S` ago, else None; no query (the partner API's async key check
    calls :func:`authenticate` in a thread on None)."""
    if not _well_formed(plaintext):
        return None
    return checked.get(_check_key(engine, plaintext))


def authenticate(session: Session, *, plaintext: str,
                 checked: KeyCheckCache) -> ApiPrincipal | None:
    """The principal of a valid, unrevoked key of an active partner, else None; a key found
    in ``checked`` is trusted without a query for :data:`PRINCIPAL_CACHE_S`.

    Records the use (``last_used_at``, to :data:`LAST_USED_RESOLUTION`) in the caller's
    transaction."""
    if not _well_formed(plaintext):
        return None
    cache_key = _check_key(session.get_bind().engine, plaintext)
    hit = checked.get(cache_key)
    if hit is not None:
        return hit
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
    last_used = key.last_used_at
    if last_used is None or now - last_used >= LAST_USED_RESOLUTION:
        key.last_used_at = now
        session.flush()
    principal = ApiPrincipal(
        key_prefix=key.prefix, partner_id=partner.id, partner_slug=partner.slug,
        rate_limit_per_minute=key.rate_limit_per_minute,
    )
    checked.put(cache_key, principal)
    return principal
