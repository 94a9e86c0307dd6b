"""Staff users and their sign-in sessions. Services never commit (the caller's session does).

* Sessions: the cookie carries 256 random bits; only their SHA-256 is stored, so a copy of
  the database cannot be replayed. Each session has its own CSRF token (``csrf_token``).
* Sign-in attempts are throttled per e-mail and client address, per e-mail and per address
  by :mod:`app.accounts.throttle` (in this process, or in Redis for all workers when
  ``SIZER_REDIS_URL`` is set); their password hashing is rationed by
  :mod:`app.accounts.passwords`.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from app.accounts import passwords
from app.accounts.roles import STAFF_ROLES
from app.db.tables import StaffSession, StaffUser
from app.errors import Conflict, InvalidInput

SESSION_TOKEN_BYTES = 32
CSRF_TOKEN_BYTES = 32
MAX_EMAIL_LENGTH = 254  # RFC 5321's limit on a forward path, less the angle brackets
EMAIL = re.compile(r"^[^@\s<>\"\x00-\x1f\x7f]+@[^@\s<>\"\x00-\x1f\x7f]+\.[^@\s<>\"\x00-\x1f\x7f]+$")


@dataclass(frozen=True, slots=True)
class StaffUserRecord:
    """A staff user without the hash."""

    id: int
    email: str
    display_name: str
    role: str
    active: bool


@dataclass(frozen=True, slots=True)
class StaffPrincipal:
    """Who is signed in, for this request: the user and the session's CSRF token."""

    user: StaffUserRecord
    session_id: int
    csrf_token: str

    @property
    def is_admin(self) -> bool:
        return self.user.role == "admin"

    @property
    def actor(self) -> str:
        return self.user.email


def _record(row: StaffUser) -> StaffUserRecord:
    return StaffUserRecord(
        id=row.id, email=row.email, display_name=row.display_name, role=row.role,
        active=row.active,
    )


def _hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def normalize_email(email: str) -> str:
    return email.strip().lower()


def create_user(
    session: Session, *, email: str, display_name: str, password: str, role: str
) -> StaffUserRecord:
    """A new staff user; InvalidInput for a bad e-mail, password or role, Conflict if taken."""
    email = normalize_email(email)
    if not EMAIL.match(email) or len(email) > MAX_EMAIL_LENGTH:
        raise InvalidInput("not an e-mail address", field="email")
    if role not in STAFF_ROLES:
        raise InvalidInput(f"must be one of {', '.join(STAFF_ROLES)}", field="role")
    if not passwords.MIN_PASSWORD_LENGTH <= len(password) <= passwords.MAX_PASSWORD_LENGTH:
        raise InvalidInput(
            f"must have at least {passwords.MIN_PASSWORD_LENGTH} characters", field="password"
        )
    taken = session.scalar(select(StaffUser.id).where(func.lower(StaffUser.email) == email))
    if taken is not None:
        raise Conflict(f"{email} already has an account", field="email")
    row = StaffUser(
        email=email, display_name=(display_name.strip() or email)[:200],
        password_hash=passwords.hash_password(password), role=role, active=True,
    )
    session.add(row)
    session.flush()
    return _record(row)


def authenticate(session: Session, *, email: str, password: str) -> StaffUserRecord | None:
    """The active user with this e-mail and password, else None. One password hash either way
    (an unknown e-mail is checked against a dummy hash of equal cost), in one of the process's
    few hashing slots: :class:`app.accounts.passwords.HashingBusy` when none is free."""
    email = normalize_email(email)
    # An address no user can have (a NUL byte, which PostgreSQL refuses in any query, or 300
    # characters of junk) is a wrong sign-in without asking the database.
    possible = len(email) <= MAX_EMAIL_LENGTH and EMAIL.match(email) is not None
    row = session.scalars(
        select(StaffUser).where(func.lower(StaffUser.email) == email)
    ).one_or_none() if possible else None
    known_hash = row.password_hash if row is not None and row.active else None
    check = passwords.check_sign_in(known_hash, password)
    if row is None or known_hash is None or not check.matched:
        return None
    if check.new_hash is not None:
        row.password_hash = check.new_hash
    row.last_sign_in_at = _now()
    session.flush()
    return _record(row)


def start_session(session: Session, *, user_id: int, lifetime: timedelta) -> str:
    """A new session for the user; returns the cookie value (never stored as such)."""
    token = secrets.token_urlsafe(SESSION_TOKEN_BYTES)
    session.add(StaffSession(
        token_hash=_hash_token(token), staff_user_id=user_id,
        csrf_token=secrets.token_urlsafe(CSRF_TOKEN_BYTES), expires_at=_now() + lifetime,
    ))
    # Expired sessions of anybody are dropped here, so the table cannot grow without bound.
    session.execute(delete(StaffSession).where(StaffSession.expires_at < _now()))
    session.flush()
    return token


def resolve_session(session: Session, *, token: str) -> StaffPrincipal | None:
    """The signed-in principal for a cookie value; None if unknown, expired or deactivated."""
    if not token or len(token) > 128:
        return None
    found = session.execute(
        select(StaffSession, StaffUser)
        .join(StaffUser, StaffSession.staff_user_id == StaffUser.id)
        .where(StaffSession.token_hash == _hash_token(token))
    ).one_or_none()
    if found is None:
        return None
    staff_session, user = found._tuple()
    if staff_session.expires_at <= _now() or not user.active:
        return None
    return StaffPrincipal(
        user=_record(user), session_id=staff_session.id, csrf_token=staff_session.csrf_token
    )


def end_session(session: Session, *, session_id: int) -> None:
    """Sign out: the session row is deleted, so the cookie is worthless from now on."""
    session.execute(delete(StaffSession).where(StaffSession.id == session_id))


def list_users(session: Session) -> list[StaffUserRecord]:
    return [_record(row) for row in session.scalars(select(StaffUser).order_by(StaffUser.email))]
