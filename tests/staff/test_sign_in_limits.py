"""Sign-in throttling under attack (issue 13, point 3): attempts are counted before hashing,
so concurrent wrong passwords cannot all get through; one account has a limit across all
addresses; the in-process tables are bounded without being wiped.

Each rule is checked on the in-process throttle and on the real Redis (``redis_target``), and
the race once more through the app, counting what reaches the password hasher.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient

from app.accounts import passwords, throttle
from app.accounts.throttle import (
    MAX_ACCOUNT_FAILURES,
    MAX_ADDRESS_FAILURES,
    MAX_FAILURES,
    WINDOW_S,
    RedisSignInThrottle,
    SignInThrottle,
    SignInThrottling,
)
from app.cli import main as sizer
from app.config import load_settings
from app.db.session import SessionFactory
from app.main import create_app
from tests.cli.test_serve import served, started  # noqa: F401 (fixture)
from tests.conftest import RedisTarget
from tests.staff.conftest import ADMIN, SALES, hidden
from tests.staff.test_throttle_redis import store

T = TypeVar("T")

CONCURRENT = 30
"""The probe's number: 30 wrong passwords at once got through against a limit of 5."""


class CountingHasher(PasswordHasher):
    """The tests' cheap argon2id, counting verifications; each takes a little while, so the
    requests of a burst overlap inside it as they did with the production cost."""

    def __init__(self, delay_s: float = 0.0) -> None:
        super().__init__(time_cost=1, memory_cost=1024, parallelism=1)
        self.delay_s = delay_s
        self.calls = 0
        self.hashes = 0
        self.running = 0
        self.most_at_once = 0
        self._lock = threading.Lock()

    def hash(self, password: str | bytes, *, salt: bytes | None = None) -> str:
        with self._lock:
            self.hashes += 1
        return super().hash(password, salt=salt)

    def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:
        with self._lock:
            self.calls += 1
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            threading.Event().wait(self.delay_s)
            return super().verify(hash, password)
        finally:
            with self._lock:
                self.running -= 1


def count_hashing(monkeypatch: pytest.MonkeyPatch, delay_s: float) -> CountingHasher:
    """Replaces the conftest's cheap hasher (the users were made with it: same cost)."""
    counting = CountingHasher(delay_s=delay_s)
    monkeypatch.setattr(passwords, "_hasher", lambda: counting)
    passwords.dummy_hash.cache_clear()
    return counting


@pytest.fixture
def hasher(monkeypatch: pytest.MonkeyPatch) -> CountingHasher:
    return count_hashing(monkeypatch, delay_s=0.02)


@pytest.fixture(params=["in-process", "redis"])
def make_throttle(request: pytest.FixtureRequest) -> Iterator[Callable[[], SignInThrottling]]:
    """Fresh throttles of one kind; the Redis ones share one count (as workers do)."""
    if request.param == "in-process":
        shared = SignInThrottle()
        yield lambda: shared
        return
    target: RedisTarget = request.getfixturevalue("redis_target")
    yield lambda: RedisSignInThrottle(store(target.url, target.prefix))


def _at_once(count: int, job: Callable[[int], T]) -> list[T]:
    """``job(i)`` for i < count on as many threads, released together."""
    start = threading.Barrier(count)

    def run(i: int) -> T:
        start.wait()
        return job(i)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(run, range(count)))


def test_concurrent_attempts_admit_exactly_the_limit(
    make_throttle: Callable[[], SignInThrottling],
) -> None:
    throttles = [make_throttle() for _ in range(3)]  # three workers, one shared count
    admissions = _at_once(CONCURRENT, lambda i: throttles[i % 3].admit(
        email=ADMIN[0], client="203.0.113.7"))
    assert sum(a.allowed for a in admissions) == MAX_FAILURES


def test_one_account_has_a_limit_across_addresses(
    make_throttle: Callable[[], SignInThrottling],
) -> None:
    guard = make_throttle()
    for i in range(MAX_ACCOUNT_FAILURES):
        assert guard.admit(email=ADMIN[0], client=f"198.51.100.{i}").allowed
    refused = guard.admit(email=ADMIN[0].upper(), client="192.0.2.200")  # a fresh address
    assert not refused.allowed and 0 < refused.retry_after_s <= WINDOW_S + 1
    assert guard.admit(email=SALES[0], client="192.0.2.200").allowed  # other accounts open


def test_the_account_limit_holds_under_a_concurrent_burst_of_addresses(
    make_throttle: Callable[[], SignInThrottling],
) -> None:
    guard = make_throttle()
    admissions = _at_once(MAX_ACCOUNT_FAILURES + 10, lambda i: guard.admit(
        email=ADMIN[0], client=f"2001:db8::{i:x}"))
    assert sum(a.allowed for a in admissions) == MAX_ACCOUNT_FAILURES


def test_one_address_has_a_limit_across_e_mails(
    make_throttle: Callable[[], SignInThrottling],
) -> None:
    """Made-up e-mails from one address (each its own pair and account) meet a limit."""
    guard = make_throttle()
    guard.succeeded(guard.admit(email=SALES[0], client="203.0.113.7"))  # staff sign in there
    admissions = _at_once(MAX_ADDRESS_FAILURES + 10, lambda i: guard.admit(
        email=f"made-up-{i}@x.example", client="203.0.113.7"))
    assert sum(a.allowed for a in admissions) == MAX_ADDRESS_FAILURES
    refused = guard.admit(email=ADMIN[0], client="203.0.113.7")
    assert not refused.allowed and refused.retry_after_s > 0
    assert guard.admit(email=ADMIN[0], client="203.0.113.8").allowed  # other addresses open
    assert guard.admit(email=SALES[0], client="203.0.113.7").allowed  # known there: only its pair


def test_the_owner_signs_in_from_a_known_address_while_the_account_is_locked(
    make_throttle: Callable[[], SignInThrottling],
) -> None:
    """Rotating addresses can lock an account for everybody else, not for its owner at a place
    they signed in from before; there the pair's own limit still holds."""
    guard = make_throttle()
    guard.succeeded(guard.admit(email=ADMIN[0], client="192.0.2.10"))  # the office, yesterday
    for i in range(MAX_ACCOUNT_FAILURES):
        assert guard.admit(email=ADMIN[0], client=f"198.51.100.{i}").allowed
    assert not guard.admit(email=ADMIN[0], client="203.0.113.99").allowed  # locked...
    assert guard.admit(email=ADMIN[0], client="192.0.2.10").allowed  # ...but not at the office
    for _ in range(MAX_FAILURES - 1):
        guard.admit(email=ADMIN[0], client="192.0.2.10")
    assert not guard.admit(email=ADMIN[0], client="192.0.2.10").allowed  # five there, as ever


def test_right_and_unchecked_attempts_give_their_count_back(
    make_throttle: Callable[[], SignInThrottling],
) -> None:
    """A staff member signing in all day, from one or many addresses, is never locked."""
    guard = make_throttle()
    for i in range(MAX_ACCOUNT_FAILURES * 2):
        admitted = guard.admit(email=ADMIN[0], client=f"198.51.100.{i % 7}")
        assert admitted.allowed, i
        (guard.succeeded if i % 2 else guard.withdraw)(admitted)
    for _ in range(MAX_FAILURES):  # the pair's whole budget is still there
        assert guard.admit(email=ADMIN[0], client="198.51.100.1").allowed


def test_the_in_process_table_drops_the_least_recently_tried_never_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(throttle, "MAX_TRACKED", 10)
    now = [0.0]
    guard = SignInThrottle(clock=lambda: now[0])
    for _ in range(MAX_FAILURES):
        guard.admit(email=ADMIN[0], client="203.0.113.7")
    for i in range(9):  # a flood of made-up e-mails fills the table...
        now[0] += 1
        guard.admit(email=f"made-up-{i}@x.example", client="203.0.113.7")
    assert guard.tracked() == (10, 10, 1)
    assert not guard.admit(email=ADMIN[0], client="203.0.113.7").allowed  # ...still locked
    for i in range(9, 30):
        now[0] += 1
        guard.admit(email=f"made-up-{i}@x.example", client="203.0.113.7")
    assert guard.tracked() == (10, 10, 1)  # bounded, not emptied: the newest ten are kept
    # The least recently tried went first. (Filling a real table takes MAX_TRACKED attempts
    # that each waited for a hashing slot: longer than the window at 100,000.)
    assert guard.admit(email=ADMIN[0], client="203.0.113.7").allowed
    now[0] += WINDOW_S  # everything expired: the next attempt sweeps them out
    guard.admit(email="late@x.example", client="203.0.113.7")
    assert guard.tracked() == (1, 1, 1)


@pytest.mark.parametrize("shared", [False, True], ids=["in-process", "redis"])
def test_concurrent_wrong_passwords_reach_the_hasher_at_most_the_limit(
    make_client: Callable[..., TestClient], users: SessionFactory, hasher: CountingHasher,
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, shared: bool,
) -> None:
    """The probe's race through the app: 30 wrong passwords at once for one e-mail from one
    address. Before the fix all 30 were checked (check, 0.4 s of hashing, then the count).
    Hashing slots for all, so no attempt is turned away busy (that is the next module's)."""
    monkeypatch.setattr(passwords, "_slots", threading.BoundedSemaphore(CONCURRENT))
    settings = request.getfixturevalue("redis_target").settings() if shared else {}
    client = make_client(**settings)
    client.headers["Accept-Language"] = "en"
    token = hidden(client.get("/staff/sign-in").text, "csrf_token")
    statuses = _at_once(CONCURRENT, lambda _: client.post("/staff/sign-in", data={
        "csrf_token": token, "email": ADMIN[0], "password": "wrong-password-123"}).status_code)
    assert hasher.calls == MAX_FAILURES
    assert hasher.most_at_once > 1  # the burst really overlapped inside the hasher
    assert sorted(statuses) == [422] * MAX_FAILURES + [429] * (CONCURRENT - MAX_FAILURES)
    response = client.post("/staff/sign-in", data={
        "csrf_token": token, "email": ADMIN[0], "password": ADMIN[1]})
    assert response.status_code == 429 and int(response.headers["Retry-After"]) > 0
    assert hasher.calls == MAX_FAILURES


@pytest.mark.parametrize("trusted", ["", "127.0.0.1"], ids=["default", "loopback-proxy"])
def test_a_client_over_loopback_cannot_name_its_own_address(
    started: list[dict[str, Any]], database_url: str, users: SessionFactory,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch, trusted: str,
) -> None:
    """The probe's bypass, through the app as `sizer serve` has uvicorn serve it: a new
    X-Forwarded-For on every wrong password. By default the header is nobody's word, so the
    pair locks after five; only with the loopback proxy named does each header count (the
    per-account limit still holds then)."""
    monkeypatch.setenv("SIZER_FORWARDED_ALLOW_IPS", trusted)
    assert sizer(["serve"]) == 0
    app = served(create_app(load_settings(database_url=database_url)), started[0])
    with TestClient(app, client=("127.0.0.1", 40000), follow_redirects=False) as client:
        client.headers["Accept-Language"] = "en"
        token = hidden(client.get("/staff/sign-in").text, "csrf_token")
        statuses = [client.post("/staff/sign-in", headers={
            "X-Forwarded-For": f"198.51.100.{i}"}, data={
            "csrf_token": token, "email": ADMIN[0], "password": "wrong-password-123"},
        ).status_code for i in range(MAX_ACCOUNT_FAILURES + 1)]
    if not trusted:
        assert statuses == [422] * MAX_FAILURES + [429] * (MAX_ACCOUNT_FAILURES + 1 - MAX_FAILURES)
    else:
        assert statuses == [422] * MAX_ACCOUNT_FAILURES + [429]


def test_an_ipv6_client_is_its_slash_64(
    database_url: str, users: SessionFactory,
) -> None:
    """Every IPv6 host has a whole /64 to pick addresses from: one pair count for all of it."""
    app = create_app(load_settings(database_url=database_url))

    def wrong_from(host: str) -> int:
        with TestClient(app, client=(host, 40000), follow_redirects=False) as client:
            token = hidden(client.get("/staff/sign-in").text, "csrf_token")
            return client.post("/staff/sign-in", data={
                "csrf_token": token, "email": ADMIN[0], "password": "wrong-password-123",
            }).status_code

    assert [wrong_from(f"2001:db8:1:2::{i:x}") for i in range(MAX_FAILURES)] == [422] * MAX_FAILURES
    assert wrong_from("2001:db8:1:2:ffff:eeee:dddd:cccc") == 429  # the same /64
    assert wrong_from("2001:db8:1:3::1") == 422  # the next /64
