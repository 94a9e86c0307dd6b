"""Rate limits in Redis: every worker (here: limiter instances, whole apps) shares one count.

Against the real Redis of ``redis_target`` (tests/conftest.py): skipped when it does not
answer, failed under CI=true. The outage tests need no Redis: they point at a closed port.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from app.api.v1.ratelimit import (
    FixedWindowLimiter,
    RateDecision,
    RedisFixedWindowLimiter,
    current_window,
    limiter_for,
)
from app.config import ConfigurationError, load_settings
from app.shared_store import RETRY_AFTER_S, SharedStore, connect
from tests.api.v1.conftest import assert_problem
from tests.conftest import RedisTarget

DEAD_REDIS = "redis://127.0.0.1:1/0"  # nothing listens on port 1: refused at once


def store(url: str, prefix: str = "gpusizer-test:", **kwargs: object) -> SharedStore:
    found = connect(load_settings(redis_url=url, redis_key_prefix=prefix, **kwargs))
    assert found is not None
    return found


def test_the_redis_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().redis_url is None
    assert load_settings().redis_key_prefix == "gpusizer:"
    monkeypatch.setenv("SIZER_REDIS_URL", "redis://cache.internal:6379/2")
    assert load_settings().redis_url == "redis://cache.internal:6379/2"
    monkeypatch.setenv("SIZER_REDIS_URL", "")
    assert load_settings().redis_url is None
    monkeypatch.setenv("SIZER_REDIS_URL", "http://cache.internal")
    with pytest.raises(ConfigurationError, match=r"^SIZER_REDIS_URL: .*redis://"):
        load_settings()


def test_without_a_redis_url_the_limiter_is_in_process() -> None:
    assert connect(load_settings()) is None
    assert isinstance(limiter_for(None), FixedWindowLimiter)


def test_two_limiters_share_one_count(redis_target: RedisTarget) -> None:
    first = RedisFixedWindowLimiter(store(redis_target.url, redis_target.prefix))
    second = RedisFixedWindowLimiter(store(redis_target.url, redis_target.prefix))
    decisions = [(first if i % 2 else second).hit("gsz_kHUJJvAz", limit=5) for i in range(8)]
    assert [d.allowed for d in decisions] == [True] * 5 + [False] * 3
    assert [d.remaining for d in decisions[:5]] == [4, 3, 2, 1, 0]
    denied = decisions[-1]
    assert 1 <= denied.reset_seconds <= 60
    assert denied.headers()["Retry-After"] == str(denied.reset_seconds)
    assert denied.headers()["RateLimit-Remaining"] == "0"


def test_the_count_is_atomic_under_concurrency(redis_target: RedisTarget) -> None:
    limiters = [RedisFixedWindowLimiter(store(redis_target.url, redis_target.prefix))
                for _ in range(4)]
    decisions: list[RateDecision] = []
    lock = threading.Lock()

    def worker(limiter: RedisFixedWindowLimiter) -> None:
        for _ in range(25):
            decision = limiter.hit("busy-key", limit=37)
            with lock:
                decisions.append(decision)

    threads = [threading.Thread(target=worker, args=(limiter,)) for limiter in limiters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(decisions) == 100
    assert sum(d.allowed for d in decisions) == 37
    assert sorted(d.remaining for d in decisions if d.allowed) == list(range(37))


def test_windows_and_keys(redis_target: RedisTarget) -> None:
    """A new clock minute starts a new count; keys hold a digest, never the key, and expire."""
    now = [600.0]
    limiter = RedisFixedWindowLimiter(store(redis_target.url, redis_target.prefix),
                                      clock=lambda: now[0])
    assert limiter.hit("gsz_kHUJJvAz", limit=1).allowed
    denied = limiter.hit("gsz_kHUJJvAz", limit=1)
    assert not denied.allowed and denied.reset_seconds == 60
    now[0] = 660.0
    assert limiter.hit("gsz_kHUJJvAz", limit=1).allowed
    keys = redis_target.keys()
    assert len(keys) == 2 and {k.rsplit(":", 1)[1] for k in keys} == {"10", "11"}
    assert all(k.startswith(f"{redis_target.prefix}api:") for k in keys)
    assert not any("kHUJJvAz" in k for k in keys)
    assert all(0 < redis_target.client.ttl(k) <= 120 for k in keys)


def test_two_apps_share_a_key_s_limit(
    api: Callable[..., TestClient], issue_key: Callable[..., str], redis_target: RedisTarget
) -> None:
    """Two apps stand in for two workers: a key with limit 3 gets exactly 3 answers in all.

    The limiter counts per clock minute: five requests that cross a minute's edge start a new
    count (as they should), so such a run is sent again with a fresh key; two runs of a few
    seconds cannot both cross an edge."""
    workers = [api(**redis_target.settings()), api(**redis_target.settings())]
    for _ in range(2):
        headers = {"Authorization": f"Bearer {issue_key(rate_limit=3)}"}
        started = current_window(time.time())[0]
        statuses = [workers[i % 2].get("/api/v1/gpus", headers=headers) for i in range(5)]
        if current_window(time.time())[0] == started:
            break
    assert [r.status_code for r in statuses] == [200, 200, 200, 429, 429]
    assert [r.headers["RateLimit-Remaining"] for r in statuses[:3]] == ["2", "1", "0"]
    for limited in statuses[3:]:
        assert_problem(limited, 429, "rate_limited")
        assert 1 <= int(limited.headers["Retry-After"]) <= 60
    # An app on the in-process limiter (no SIZER_REDIS_URL) still counts alone.
    assert api().get("/api/v1/gpus", headers=headers).status_code == 200


def test_an_unreachable_redis_fails_open_to_per_worker_limits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The API stays up: one warning, then this process's own count (as without Redis)."""
    clock = [0.0]
    dead = SharedStore(store(DEAD_REDIS).client, prefix="gpusizer-test:",
                       secret="test-secret-of-16+", clock=lambda: clock[0])
    limiter = RedisFixedWindowLimiter(dead)
    with caplog.at_level(logging.WARNING, logger="app.shared_store"):
        decisions = [limiter.hit("k", limit=2) for _ in range(3)]
    assert [d.allowed for d in decisions] == [True, True, False]
    warnings = [r for r in caplog.records if "Redis unreachable" in r.getMessage()]
    assert len(warnings) == 1
    assert not dead.available()  # no Redis round trip per request during the outage
    clock[0] = RETRY_AFTER_S
    assert dead.available()
    dead.close()


def test_an_app_on_an_unreachable_redis_still_answers(
    api: Callable[..., TestClient], issue_key: Callable[..., str]
) -> None:
    client = api(redis_url=DEAD_REDIS)
    for _ in range(2):  # sent again with a fresh key if the three cross a minute's edge
        headers = {"Authorization": f"Bearer {issue_key(rate_limit=2)}"}
        started = current_window(time.time())[0]
        statuses = [client.get("/api/v1/gpus", headers=headers).status_code for _ in range(3)]
        if current_window(time.time())[0] == started:
            break
    assert statuses == [200, 200, 429]
