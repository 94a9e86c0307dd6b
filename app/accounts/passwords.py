"""Password hashing: argon2id with argon2-cffi's defaults (RFC 9106 low-memory profile).

Only this module knows the algorithm; a hash made with older parameters is re-hashed on the
next successful sign-in (:func:`needs_rehash`).
"""

from __future__ import annotations

from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_PASSWORD_LENGTH = 12
MAX_PASSWORD_LENGTH = 1024


@lru_cache(maxsize=1)
def _hasher() -> PasswordHasher:
    return PasswordHasher()  # argon2id, t=3, m=64 MiB, p=4


def hash_password(password: str) -> str:
    """An argon2id hash string (salt and parameters included)."""
    return _hasher().hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    """True when ``password`` matches; False for a mismatch or an unreadable hash."""
    try:
        return _hasher().verify(password_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str) -> bool:
    """True when the hash was made with other parameters than today's."""
    return _hasher().check_needs_rehash(password_hash)


@lru_cache(maxsize=1)
def dummy_hash() -> str:
    """A hash to verify against when the e-mail is unknown, so timing tells nothing."""
    return hash_password("not-a-real-password-just-for-timing")
