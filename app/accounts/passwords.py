"""Password hashing: argon2id with argon2-cffi's defaults (RFC 9106 low-memory profile).

Only this module knows the algorithm; a hash made with older parameters is re-hashed on the
next successful sign-in (:func:`check_sign_in`).

Why hashing is rationed (:data:`HASHING_SLOTS`): one argon2id takes 64 MiB and up to four
cores for a noticeable time, and a sign-in needs none of that from the visitor, so,
unrationed, 40 concurrent made-up sign-ins take a 2-core server from 110 MB to 1.1 GB and 17 s,
starving the storefront. The sign-in waits for no slot: when all are busy it is refused at once
(:class:`HashingBusy`, a 503 with Retry-After), so waiting sign-ins never hold the threads the
storefront needs either. Hashes made by signed-in staff and the CLI (:func:`hash_password`)
wait their turn instead.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_PASSWORD_LENGTH = 12
MAX_PASSWORD_LENGTH = 1024

HASHING_SLOTS = 2
"""Argon2id computations at once in one process: 2 x 64 MiB at the most, and two staff members
may still sign in at the same instant. Per worker process (the memory is per process)."""

BUSY_RETRY_AFTER_S = 2
"""Retry-After of a sign-in refused for want of a slot: a few hash times (~0.1-0.4 s each)."""

_slots = threading.BoundedSemaphore(HASHING_SLOTS)


class HashingBusy(Exception):
    """Every hashing slot is taken: the sign-in is refused now rather than queued."""

    retry_after_s = BUSY_RETRY_AFTER_S


@contextmanager
def hashing_slot(*, wait: bool = True) -> Iterator[None]:
    """Hold one of the process's :data:`HASHING_SLOTS`; without ``wait``, HashingBusy when all
    are taken."""
    if not _slots.acquire(blocking=wait):
        raise HashingBusy
    try:
        yield
    finally:
        _slots.release()


@lru_cache(maxsize=1)
def _hasher() -> PasswordHasher:
    return PasswordHasher()  # argon2id, t=3, m=64 MiB, p=4


def _verify(password_hash: str, password: str) -> bool:
    try:
        return _hasher().verify(password_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def hash_password(password: str) -> str:
    """An argon2id hash string (salt and parameters included); waits for a hashing slot."""
    with hashing_slot():
        return _hasher().hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    """True when ``password`` matches; False for a mismatch or an unreadable hash. Waits for a
    hashing slot (the sign-in uses :func:`check_sign_in`, which does not)."""
    with hashing_slot():
        return _verify(password_hash, password)


@lru_cache(maxsize=1)
def dummy_hash() -> str:
    """A hash with today's parameters to verify against when the e-mail is unknown, so an
    unknown e-mail costs the same hash as a known one and timing tells nothing. Made without
    a slot: it is only ever made inside :func:`check_sign_in`'s."""
    return _hasher().hash("not-a-real-password-just-for-timing")


@dataclass(frozen=True, slots=True)
class SignInCheck:
    """Did the password match, and the new hash to store when the old one's parameters are
    outdated."""

    matched: bool
    new_hash: str | None = None


def check_sign_in(password_hash: str | None, password: str) -> SignInCheck:
    """Check a sign-in's password against a user's hash, or, with None (unknown e-mail, or an
    inactive user), against :func:`dummy_hash`: one verification of equal cost either way, and
    the dummy never matches. Takes a hashing slot without waiting: :class:`HashingBusy`."""
    with hashing_slot(wait=False):
        dummy = dummy_hash()  # made on the first sign-in of either kind, so neither is slower
        if password_hash is None:
            _verify(dummy, password)
            return SignInCheck(matched=False)
        if not _verify(password_hash, password):
            return SignInCheck(matched=False)
        if _hasher().check_needs_rehash(password_hash):
            return SignInCheck(matched=True, new_hash=_hasher().hash(password))
        return SignInCheck(matched=True)
