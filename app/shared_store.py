"""Counters every worker shares: one Redis client from ``SIZER_REDIS_URL``.

Why this exists: the partner API's rate limits and the staff sign-in throttle count in the
process by default, so with N workers a limit is really N x the setting. With
``SIZER_REDIS_URL`` set, :func:`connect` returns a :class:`SharedStore` and both count in Redis
instead; without it they stay in-process (one worker, tests, a laptop).

Why Redis is never a dependency of an answer: the limits protect the service, they are not
the service. When Redis does not answer (down, timeout, refused, wrong password), callers fall
back to their own in-process counter, so each worker limits alone again exactly as it does
without Redis; :meth:`SharedStore.unavailable` logs ONE warning per outage and keeps callers
off Redis for :data:`RETRY_AFTER_S` seconds, so a dead Redis costs a request at most one
short timeout (:data:`TIMEOUT_S`), not one per request.

Why keys hold digests: a key is ``<prefix><kind>:<digest>[:<window>]`` where the digest is an
HMAC-SHA256 (keyed with ``SIZER_SECRET_KEY``) of the identifier, so neither an API key's prefix
nor a staff e-mail or client address can be read from Redis, nor found by hashing guesses.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Callable

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from app.config import Settings

logger = logging.getLogger(__name__)

TIMEOUT_S = 0.5
"""Connect and read timeout: Redis on the same network answers in well under a millisecond."""

RETRY_AFTER_S = 5.0
"""After a failure, callers use their in-process counter this long before trying Redis again."""


class SharedStore:
    """A Redis client, the key prefix, the key digests and the outage breaker."""

    def __init__(self, client: redis.Redis, *, prefix: str, secret: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.prefix = prefix
        self._secret = secret.encode("utf-8")
        self._clock = clock
        self._down_until: float | None = None

    def key(self, kind: str, identifier: str, *suffix: str) -> str:
        """``<prefix><kind>:<hmac of identifier>[:suffix...]``; the identifier never appears."""
        digest = hmac.new(self._secret, identifier.encode("utf-8"), hashlib.sha256)
        return ":".join([f"{self.prefix}{kind}", digest.hexdigest()[:32], *suffix])

    def available(self) -> bool:
        """False for :data:`RETRY_AFTER_S` after a failure; then Redis gets another try."""
        down_until = self._down_until
        return down_until is None or self._clock() >= down_until

    def unavailable(self, error: Exception) -> None:
        """Record a failure: one warning per outage, then in-process counting for a while."""
        if self._down_until is None:
            logger.warning(
                "Redis unreachable (%s: %s); rate limits and sign-in throttling count per "
                "worker until it answers again", type(error).__name__, error,
            )
        self._down_until = self._clock() + RETRY_AFTER_S

    def answered(self) -> None:
        """Record a success; logs the end of an outage once."""
        if self._down_until is not None:
            self._down_until = None
            logger.warning("Redis answers again; rate limits and sign-in throttling are shared")

    def close(self) -> None:
        self.client.close()


def connect(settings: Settings) -> SharedStore | None:
    """The store for ``settings.redis_url``, or None when it is not set. Does not connect yet
    (the pool connects on first use), so building an app never waits for Redis."""
    if settings.redis_url is None:
        return None
    client = redis.Redis.from_url(
        settings.redis_url,
        socket_timeout=TIMEOUT_S,
        socket_connect_timeout=TIMEOUT_S,
        # One immediate retry covers a pooled connection Redis closed (a restart); more, with
        # redis-py's default back-off, would hold every request for seconds during an outage.
        retry=Retry(NoBackoff(), 1),
    )
    return SharedStore(client, prefix=settings.redis_key_prefix,
                       secret=settings.secret_key.get_secret_value())
