"""Sign-in throttling in Redis: failures on every worker (here: throttles, whole apps) add up.

Against the real Redis of ``redis_target`` (tests/conftest.py): skipped when it does not
answer, failed under CI=true. The outage test needs no Redis: it points at a closed port.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from app.accounts.throttle import (
    KNOWN_ADDRESS_S,
    MAX_FAILURES,
    WINDOW_S,
    RedisSignInThrottle,
    SignInThrottle,
    throttle_for,
)
from app.config import load_settings
from app.db.session import SessionFactory
from app.shared_store import SharedStore, connect
from tests.conftest import RedisTarget
from tests.staff.conftest import ADMIN, SALES, hidden

WHO = {"email": "Sales@Shop.example ", "client": "203.0.113.7"}


def store(url: str, prefix: str = "gpusizer-test:") -> SharedStore:
    found = connect(load_settings(redis_url=url, redis_key_prefix=prefix))
    assert found is not None
    return found


def test_without_a_redis_url_the_throttle_is_in_process() -> None:
    assert isinstance(throttle_for(None), SignInThrottle)


def test_two_throttles_share_the_attempts(redis_target: RedisTarget) -> None:
    now = [1_000_000.0]
    first, second = (RedisSignInThrottle(store(redis_target.url, redis_target.prefix),
                                         clock=lambda: now[0]) for _ in range(2))
    for i in range(MAX_FAILURES - 1):
        assert (first if i % 2 else second).admit(**WHO).allowed
        now[0] += 10
    # same pair, normalised: the fifth attempt is counted, a sixth is refused on both
    assert second.admit(email="sales@shop.example", client=WHO["client"]).allowed
    # Locked until the first attempt leaves the window: 15 min after it, i.e. 40 s sooner.
    assert first.admit(**WHO).retry_after_s == int(WINDOW_S) - 40 + 1
    assert second.admit(**WHO).retry_after_s == int(WINDOW_S) - 40 + 1
    assert first.admit(email=WHO["email"], client="198.51.100.1").allowed
    now[0] += WINDOW_S - 40  # the first attempt is out of the window: four remain
    admitted = second.admit(**WHO)
    assert admitted.allowed
    assert not first.admit(**WHO).allowed
    second.succeeded(admitted)  # a good sign-in on one worker clears the pair for all
    assert first.admit(**WHO).allowed


def test_keys_hold_no_e_mail_or_address_and_expire(redis_target: RedisTarget) -> None:
    throttle = RedisSignInThrottle(store(redis_target.url, redis_target.prefix))
    throttle.admit(**WHO)
    throttle.admit(email=WHO["email"], client="198.51.100.1")
    throttle.succeeded(throttle.admit(email=WHO["email"], client="198.51.100.2"))
    keys = redis_target.keys()
    assert sorted(key.split(":")[-2] for key in keys) == [  # the signed-in pair is cleared
        "signin", "signin", "signin-account", "signin-address", "signin-address", "signin-known"]
    for key in keys:
        assert key.startswith(redis_target.prefix)
        assert "shop" not in key.lower() and "203.0.113" not in key and "198.51" not in key
        limit = KNOWN_ADDRESS_S if key.split(":")[-2] == "signin-known" else WINDOW_S + 1
        assert 0 < redis_target.client.ttl(key) <= limit


def test_two_apps_share_the_lock(
    make_client: Callable[..., TestClient], users: SessionFactory, redis_target: RedisTarget
) -> None:
    """Five wrong passwords spread over two apps (two workers) lock the pair on both."""
    workers = []
    for _ in range(2):
        client = make_client(**redis_target.settings())
        client.headers["Accept-Language"] = "en"
        workers.append((client, hidden(client.get("/staff/sign-in").text, "csrf_token")))

    def attempt(n: int, who: tuple[str, str]) -> int:
        client, token = workers[n % 2]
        return client.post("/staff/sign-in", data={
            "csrf_token": token, "email": who[0], "password": who[1]}).status_code

    assert [attempt(i, (ADMIN[0], "nope-nope-nope")) for i in range(5)] == [422] * 5
    for n in range(2):
        client, token = workers[n]
        locked = client.post("/staff/sign-in", data={
            "csrf_token": token, "email": ADMIN[0], "password": ADMIN[1]})
        assert locked.status_code == 429 and "Too many failed attempts" in locked.text
        assert re.search(r"Try again in 1[45] minutes", locked.text)
    assert attempt(0, SALES) == 303  # another e-mail from the same address is not locked
    # An app without SIZER_REDIS_URL counts in its own process and knows nothing of these.
    alone = make_client()
    token = hidden(alone.get("/staff/sign-in").text, "csrf_token")
    assert alone.post("/staff/sign-in", data={
        "csrf_token": token, "email": ADMIN[0], "password": ADMIN[1]}).status_code == 303


def test_an_unreachable_redis_throttles_per_worker(caplog: pytest.LogCaptureFixture) -> None:
    """Fails open to this process's throttle: still locked after five, one warning logged."""
    throttle = RedisSignInThrottle(store("redis://127.0.0.1:1/0"))
    with caplog.at_level(logging.WARNING, logger="app.shared_store"):
        admitted = [throttle.admit(**WHO) for _ in range(MAX_FAILURES)]
        assert all(a.allowed for a in admitted)
        assert throttle.admit(**WHO).retry_after_s > 0
        throttle.succeeded(admitted[-1])
        assert throttle.admit(**WHO).allowed
    assert len([r for r in caplog.records if "Redis unreachable" in r.getMessage()]) == 1
