"""Key authentication and rate limiting: one dependency that protects every data router.

``Authorization: Bearer <key>``; a missing, malformed, unknown or revoked key (or one of a
suspended partner) is 401 with ``WWW-Authenticate: Bearer``. A valid key is counted against
its per-minute limit (the key's own ``rate_limit_per_minute`` or the
``SIZER_API_RATE_LIMIT_PER_MINUTE`` default); the RateLimit headers go on the response, and an
exhausted limit is 429 with ``Retry-After``.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from app import caches
from app.accounts import api_keys
from app.accounts.api_keys import ApiPrincipal
from app.api.v1.problems import ApiProblem
from app.api.v1.ratelimit import FixedWindowLimiter, RateDecision, RateLimiter
from app.config import Settings
from app.http.cached import engine_of, in_session

bearer = HTTPBearer(
    auto_error=False, scheme_name="ApiKey",
    description="Your API key: `Authorization: Bearer gsz_...` (`sizer apikey create`).",
)
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="gpu-sizer"'}
INVALID = {"WWW-Authenticate": 'Bearer realm="gpu-sizer", error="invalid_token"'}


def _authenticate(request: Request, plaintext: str) -> ApiPrincipal | None:
    """The database check (and the key's ``last_used_at``), in a session of its own."""
    return in_session(request, lambda session: api_keys.authenticate(
        session, plaintext=plaintext, checked=caches.of(request).key_checks))


async def _count(limiter: RateLimiter, key: str, limit: int) -> RateDecision:
    """Counted in this process on the event loop; in Redis (a network round trip that may
    wait for its timeout) in a thread."""
    if isinstance(limiter, FixedWindowLimiter):
        return limiter.hit(key, limit=limit)
    return await run_in_threadpool(partial(limiter.hit, key, limit=limit))


async def require_partner(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> ApiPrincipal:
    """The principal of the request's key, counted against its rate limit.

    Async, so that it costs no thread: a key checked within the last
    ``api_keys.PRINCIPAL_CACHE_S`` comes from this process's cache (no query); only a key not
    checked lately is looked up in the database, in a thread."""
    if credentials is None:
        raise ApiProblem(401, "Send your API key as 'Authorization: Bearer <key>'.",
                         headers=CHALLENGE)
    principal = api_keys.recall(engine_of(request), plaintext=credentials.credentials,
                                checked=caches.of(request).key_checks)
    if principal is None:
        principal = await run_in_threadpool(_authenticate, request, credentials.credentials)
    if principal is None:
        raise ApiProblem(401, "The API key is unknown or revoked, or its partner is suspended.",
                         headers=INVALID)
    settings: Settings = request.app.state.settings
    limiter: RateLimiter = request.app.state.rate_limiter
    limit = principal.rate_limit_per_minute or settings.api_rate_limit_per_minute
    decision = await _count(limiter, principal.key_prefix, limit)
    if not decision.allowed:
        raise ApiProblem(
            429, f"More than {limit} requests this minute; retry after "
            f"{decision.reset_seconds} s.", headers=decision.headers(),
        )
    # Sent on every response of this request, errors included (RateLimitHeaders middleware).
    request.state.ratelimit_headers = decision.headers()
    return principal


Partner = Annotated[ApiPrincipal, Depends(require_partner)]
"""Use as ``partner: Partner`` in a route signature."""
