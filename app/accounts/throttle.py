"""Failed staff sign-ins, throttled per (e-mail, client address): in-process or in Redis.

The rule, the same in both: :data:`MAX_FAILURES` failed sign-ins for one e-mail from one client
address within :data:`WINDOW_S` (a sliding window) lock that pair until the oldest of them is
older than the window; a successful sign-in clears the pair.

* :class:`SignInThrottle` counts in this process: with several workers each counts alone, so
  the effective limit is workers x MAX_FAILURES. The default without ``SIZER_REDIS_URL``.
* :class:`RedisSignInThrottle` keeps each pair's failure times in a Redis sorted set, so all
  workers share one count. The key is an HMAC of the pair (:mod:`app.shared_store`): no
  e-mail or address is stored in Redis.

When Redis does not answer, :class:`RedisSignInThrottle` falls back to an in-process
:class:`SignInThrottle` (fails OPEN to per-worker throttling) and logs one warning per outage.
Why not fail closed: refusing every sign-in would lock the sales staff out of the desk for as
long as a cache is down, while an attacker gains little: guessing still meets
workers x 5 tries per 15 minutes per address, argon2id hashes and 12-character passwords,
which is the protection every deployment without Redis has.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from typing import Protocol

import redis

from app.accounts.staff import normalize_email
from app.shared_store import SharedStore

MAX_FAILURES = 5
WINDOW_S = 15 * 60.0


class SignInThrottling(Protocol):
    """What the sign-in route asks before and tells after checking a password."""

    def retry_after_s(self, *, email: str, client: str) -> int:
        """Seconds until another attempt is allowed; 0 when allowed now."""
        ...

    def failed(self, *, email: str, client: str) -> None: ...

    def succeeded(self, *, email: str, client: str) -> None: ...


def _wait_s(oldest: float, now: float) -> int:
    return max(1, int(oldest + WINDOW_S - now) + 1)


class SignInThrottle:
    """Failed sign-ins per (e-mail, client address) in a sliding window, in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[tuple[str, str], list[float]] = {}

    def _recent(self, key: tuple[str, str], now: float) -> list[float]:
        kept = [t for t in self._failures.get(key, []) if now - t < WINDOW_S]
        if kept:
            self._failures[key] = kept
        else:
            self._failures.pop(key, None)
        return kept

    def retry_after_s(self, *, email: str, client: str) -> int:
        now = time.monotonic()
        with self._lock:
            recent = self._recent((normalize_email(email), client), now)
        if len(recent) < MAX_FAILURES:
            return 0
        return _wait_s(recent[0], now)

    def failed(self, *, email: str, client: str) -> None:
        now = time.monotonic()
        key = (normalize_email(email), client)
        with self._lock:
            self._recent(key, now)
            self._failures.setdefault(key, []).append(now)
            if len(self._failures) > 100_000:  # a flood of made-up e-mails: start over
                self._failures.clear()

    def succeeded(self, *, email: str, client: str) -> None:
        with self._lock:
            self._failures.pop((normalize_email(email), client), None)


class RedisSignInThrottle:
    """The same rule with each pair's failure times in a Redis sorted set (score = time).

    Times are wall-clock seconds (``time.time``), the one clock all hosts share; every
    read or write first drops the failures older than the window, in the same MULTI, and the
    set expires a window after its last failure, so an idle pair leaves nothing behind.
    """

    def __init__(self, store: SharedStore, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock
        self._fallback = SignInThrottle()

    def _key(self, email: str, client: str) -> str:
        return self._store.key("signin", f"{normalize_email(email)}\n{client}")

    def retry_after_s(self, *, email: str, client: str) -> int:
        if self._store.available():
            try:
                return self._retry_after_redis(self._key(email, client))
            except redis.RedisError as error:
                self._store.unavailable(error)
        return self._fallback.retry_after_s(email=email, client=client)

    def _retry_after_redis(self, key: str) -> int:
        now = self._clock()
        with self._store.client.pipeline(transaction=True) as pipe:
            pipe.zremrangebyscore(key, "-inf", now - WINDOW_S)
            pipe.zcard(key)
            pipe.zrange(key, 0, 0, withscores=True)
            _, count, oldest = pipe.execute()
        self._store.answered()
        if int(count) < MAX_FAILURES:
            return 0
        return _wait_s(float(oldest[0][1]), now)

    def failed(self, *, email: str, client: str) -> None:
        if self._store.available():
            try:
                self._failed_redis(self._key(email, client))
                return
            except redis.RedisError as error:
                self._store.unavailable(error)
        self._fallback.failed(email=email, client=client)

    def _failed_redis(self, key: str) -> None:
        now = self._clock()
        with self._store.client.pipeline(transaction=True) as pipe:
            pipe.zremrangebyscore(key, "-inf", now - WINDOW_S)
            pipe.zadd(key, {f"{now!r}:{secrets.token_hex(4)}": now})  # unique per failure
            pipe.expire(key, int(WINDOW_S) + 1)
            pipe.execute()
        self._store.answered()

    def succeeded(self, *, email: str, client: str) -> None:
        self._fallback.succeeded(email=email, client=client)
        if self._store.available():
            try:
                self._store.client.delete(self._key(email, client))
                self._store.answered()
            except redis.RedisError as error:
                self._store.unavailable(error)


def throttle_for(store: SharedStore | None) -> SignInThrottling:
    """Redis when ``SIZER_REDIS_URL`` gave a store, this process otherwise."""
    return SignInThrottle() if store is None else RedisSignInThrottle(store)
