"""Per-key rate limits behind a small interface: in-process now, Redis later (issue 8).

A :class:`RateLimiter` answers one question per request, "may this key make one more request
in its current window?", and says how many remain and when the window resets. The in-process
:class:`FixedWindowLimiter` keeps a counter per key and clock minute; several workers each
count on their own, so a shared store (Redis ``INCR`` + ``EXPIRE`` on ``key:window``, the same
fixed window) implements the same protocol for a multi-worker deployment.

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

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

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


class FixedWindowLimiter:
    """Counters per key and clock minute, in this process (thread-safe)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._counts: dict[str, tuple[int, int]] = {}

    def hit(self, key: str, *, limit: int) -> RateDecision:
        now = self._clock()
        window = int(now // WINDOW_SECONDS)
        reset = max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
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
