"""Per-key rate limits behind a small interface: in-process, or in Redis for all workers.

A :class:`RateLimiter` answers one question per request, "may this key make one more request
in its current window?", and says how many remain and when the window resets. Both
implementations count per key and clock minute (fixed window):

* :class:`FixedWindowLimiter` keeps the counters in this process. With several workers each
  counts on its own, so a key gets up to workers x its limit; the default without
  ``SIZER_REDIS_URL``.
* :class:`RedisFixedWindowLimiter` keeps them in Redis (``INCR`` + ``EXPIRE`` on
  ``key:window`` in one MULTI), so every worker and host shares one count. Redis is not allowed
  to take the API down: when it does not answer, the limiter FAILS OPEN to an in-process
  :class:`FixedWindowLimiter` (per-worker limits, as without Redis) and logs one warning per
  outage (:mod:`app.shared_store`). A partner then gets up to workers x its limit for the
  outage, which is what every deployment without Redis accepts anyway.

Headers (IETF draft "RateLimit header fields for HTTP", the separate-field form):
``RateLimit-Limit``, ``RateLimit-Remaining``, ``RateLimit-Reset`` (seconds until the window
resets) on every authenticated response, and ``Retry-After`` on a 429.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import redis
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.shared_store import SharedStore

WINDOW_SECONDS = 60


@dataclass(frozen=True, slots=True)
class RateDecision:
    allowed: bool
    limit: int
    remaining: int
    reset_seconds: int

    def headers(self) -> dict[str, str]:
        values = {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset_seconds),
        }
        if not self.allowed:
            values["Retry-After"] = str(self.reset_seconds)
        return values


class RateLimiter(Protocol):
    """Counts one request for ``key`` against ``limit`` requests per minute."""

    def hit(self, key: str, *, limit: int) -> RateDecision: ...


def current_window(now: float, window_s: int = WINDOW_SECONDS) -> tuple[int, int]:
    """The clock minute (or ``window_s`` window) ``now`` falls in (its number since the epoch)
    and the whole seconds until the next one begins (at least 1: what ``RateLimit-Reset`` and
    ``Retry-After`` say)."""
    window = int(now // window_s)
    return window, max(1, math.ceil((window + 1) * window_s - now))


class FixedWindowLimiter:
    """Counters per key and clock minute (or ``window_s``), in this process (thread-safe)."""

    def __init__(self, clock: Callable[[], float] = time.time, *,
                 window_s: int = WINDOW_SECONDS) -> None:
        self._clock = clock
        self._window_s = window_s
        self._lock = threading.Lock()
        self._counts: dict[str, tuple[int, int]] = {}

    def hit(self, key: str, *, limit: int) -> RateDecision:
        window, reset = current_window(self._clock(), self._window_s)
        with self._lock:
            seen_window, count = self._counts.get(key, (window, 0))
            if seen_window != window:
                count = 0
                if len(self._counts) > 10_000:  # drop keys idle since an older window
                    self._counts = {k: v for k, v in self._counts.items() if v[0] == window}
            if count >= limit:
                return RateDecision(False, limit, 0, reset)
            count += 1
            self._counts[key] = (window, count)
        return RateDecision(True, limit, limit - count, reset)


class RedisFixedWindowLimiter:
    """Counters per key and clock minute in Redis, shared by every worker using the store.

    The window comes from this host's clock (hosts run NTP; a skew of a second shifts the
    window edge by that second, nothing more). Each key expires two windows after it was
    created, so Redis never holds more than the current and the previous minute. ``kind``
    names the counters in Redis (``api`` for keys, ``quote`` for the storefront's quote
    requests), so limiters sharing a store never share a count.
    """

    def __init__(self, store: SharedStore, clock: Callable[[], float] = time.time, *,
                 kind: str = "api", window_s: int = WINDOW_SECONDS) -> None:
        self._store = store
        self._clock = clock
        self._kind = kind
        self._window_s = window_s
        self._fallback = FixedWindowLimiter(clock, window_s=window_s)

    def hit(self, key: str, *, limit: int) -> RateDecision:
        if self._store.available():
            try:
                return self._hit_redis(key, limit)
            except redis.RedisError as error:
                self._store.unavailable(error)
        return self._fallback.hit(key, limit=limit)

    def _hit_redis(self, key: str, limit: int) -> RateDecision:
        window, reset = current_window(self._clock(), self._window_s)
        name = self._store.key(self._kind, key, str(window))
        with self._store.client.pipeline(transaction=True) as pipe:
            pipe.incr(name)
            pipe.expire(name, 2 * self._window_s)
            count, _ = pipe.execute()
        self._store.answered()
        # Denied hits count too (unlike in-process); the answer is the same: over is over.
        allowed = int(count) <= limit
        return RateDecision(allowed, limit, max(0, limit - int(count)), reset)


def limiter_for(store: SharedStore | None, *, kind: str = "api",
                window_s: int = WINDOW_SECONDS) -> RateLimiter:
    """Redis when ``SIZER_REDIS_URL`` gave a store, this process otherwise; ``kind`` and
    ``window_s`` as :class:`RedisFixedWindowLimiter` takes them."""
    if store is None:
        return FixedWindowLimiter(window_s=window_s)
    return RedisFixedWindowLimiter(store, kind=kind, window_s=window_s)


class RateLimitHeaders:
    """ASGI middleware: the RateLimit headers the auth dependency decided, on the response
    (also on 304s and errors, which bypass FastAPI's response-header merging)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                decided = scope.get("state", {}).get("ratelimit_headers")
                if decided:
                    headers = MutableHeaders(scope=message)
                    for name, value in decided.items():
                        headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)
