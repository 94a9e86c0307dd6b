"""The Hugging Face Hub path, bounded (issue 24, points 2 and 3), against the fake Hub on
127.0.0.1: identical look-ups beyond a short queue are refused at once instead of parking a
thread each; a failed look-up is remembered (a 404 for minutes, an outage for seconds), so
asking again spends no Hub request and none of the shop's token; anonymous look-ups are
limited per client (429 with Retry-After); the stored branch fetches of a repository are
bounded, pinned commits kept; a redirect is followed only to the Hub's own origin, never to
loopback, private, link-local or metadata addresses. SQLite and PostgreSQL where rows are
stored."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.catalog import hub
from app.catalog.hub import HubAccess, HubFlights, hub_model, parse_ref
from app.config import DEFAULT_HUB_ENDPOINT, SEED_DIR
from app.db.tables import HubConfig
from app.errors import DomainError, InvalidInput, NotFound, Unavailable
from tests.fake_hub import FakeHub, FakeRepo, running_hub
from tests.web.conftest import make_client, seeded  # noqa: F401 (fixtures)

CONFIG: dict[str, Any] = {
    **json.loads((SEED_DIR / "models" / "qwen3-8b.json").read_text()), "num_hidden_layers": 40}


@pytest.fixture
def fake_hub() -> Iterator[FakeHub]:
    yield from running_hub()


@pytest.fixture
def internal() -> Iterator[FakeHub]:
    """A second server on loopback: what a redirect must never reach."""
    yield from running_hub()


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _access(fake_hub: FakeHub, **overrides: Any) -> HubAccess:
    values: dict[str, Any] = {"flights": HubFlights(), "endpoint": fake_hub.endpoint,
                              "timeout_s": 5.0, **overrides}
    return HubAccess(**values)


def _refusal(call: Callable[[], object]) -> DomainError:
    with pytest.raises(DomainError) as caught:
        call()
    return caught.value


def _asked(fake_hub: FakeHub, repo: str) -> int:
    return sum(path.startswith(f"/api/models/{repo}") for path in fake_hub.paths())


# --- waiters ---------------------------------------------------------------------------------


def test_identical_look_ups_beyond_the_queue_are_refused_at_once(fake_hub: FakeHub) -> None:
    """Before: any number of requests for the same repository waited without a slot, each
    holding a worker thread up to the timeout (45 of them pushed /healthz to 6.1 s)."""
    fake_hub.add(FakeRepo("slow/repo1", CONFIG, slow_s=1.5))
    access = _access(fake_hub, flights=HubFlights(max_waiting=2))
    answers: list[object] = []
    threads = [threading.Thread(target=lambda: answers.append(
        hub_model(None, parse_ref("slow/repo1"), access=access))) for _ in range(3)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 5
    while access.flights.waiting() < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert access.flights.running() == 1 and access.flights.waiting() == 2

    started = time.monotonic()
    refused = _refusal(lambda: hub_model(None, parse_ref("slow/repo1"), access=access))
    assert time.monotonic() - started < 0.5  # at once: no thread parked
    assert isinstance(refused, Unavailable) and refused.key == "hub_busy"
    for thread in threads:
        thread.join(10)
    assert len(answers) == 3  # the leader and the two in the queue got the answer
    assert access.flights.waiting() == 0 and access.flights.running() == 0


# --- remembered failures ---------------------------------------------------------------------


def test_a_missing_repository_is_asked_for_once_in_five_minutes(fake_hub: FakeHub) -> None:
    """Before: three identical ``?model=nope/model1`` made three Hub requests, each with the
    shop's token."""
    clock = Clock()
    access = _access(fake_hub, flights=HubFlights(clock=clock), token="hf_shop_token")
    for _ in range(3):
        assert isinstance(_refusal(lambda: hub_model(None, parse_ref("nope/model1"),
                                                     access=access)), NotFound)
    assert _asked(fake_hub, "nope/model1") == 1
    clock.now += hub.NOT_FOUND_MEMORY_S - 1
    _refusal(lambda: hub_model(None, parse_ref("nope/model1"), access=access))
    assert _asked(fake_hub, "nope/model1") == 1
    clock.now += 2  # five minutes on: it may exist by now
    _refusal(lambda: hub_model(None, parse_ref("nope/model1"), access=access))
    assert _asked(fake_hub, "nope/model1") == 2


def test_an_outage_is_remembered_for_seconds(fake_hub: FakeHub) -> None:
    fake_hub.add(FakeRepo("slow/outage", CONFIG, slow_s=2.0))
    clock = Clock()
    access = _access(fake_hub, flights=HubFlights(clock=clock), timeout_s=0.5)
    first = _refusal(lambda: hub_model(None, parse_ref("slow/outage"), access=access))
    assert isinstance(first, Unavailable) and first.key == "hub_timeout"
    again = _refusal(lambda: hub_model(None, parse_ref("slow/outage"), access=access))
    assert isinstance(again, Unavailable) and again.key == "hub_timeout"
    assert _asked(fake_hub, "slow/outage") == 1
    clock.now += hub.OUTAGE_MEMORY_S + 1
    _refusal(lambda: hub_model(None, parse_ref("slow/outage"), access=access))
    assert _asked(fake_hub, "slow/outage") == 2


def test_the_memory_of_failures_is_bounded(fake_hub: FakeHub,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub, "MAX_REMEMBERED_FAILURES", 3)
    access = _access(fake_hub)
    for number in range(5):
        with pytest.raises(NotFound):
            hub_model(None, parse_ref(f"nope/m{number}"), access=access)
    assert access.flights.failure(("nope/m0", "main")) is None
    assert isinstance(access.flights.failure(("nope/m4", "main")), NotFound)


# --- stored revisions ------------------------------------------------------------------------


def test_branch_fetches_are_bounded_per_repository_and_commits_kept(
    fake_hub: FakeHub, session: Session
) -> None:
    """Before: ``?model=ok/model1@branchN`` added a ``hub_config`` row per request (20 from
    20)."""
    branches = {f"branch{n}": f"{n:040x}" for n in range(20)}
    fake_hub.add(FakeRepo("ok/model1", CONFIG, revisions=dict(branches)))
    access = _access(fake_hub)
    pinned = "0" * 39 + "7"
    hub_model(session, parse_ref(f"ok/model1@{pinned}"), access=access)
    for name in branches:
        hub_model(session, parse_ref(f"ok/model1@{name}"), access=access)
        session.flush()
    revisions = set(session.scalars(select(HubConfig.revision).where(
        HubConfig.repo_key == "ok/model1")))
    assert pinned in revisions  # a commit never changes: kept
    assert revisions - {pinned} == {f"branch{n}" for n in range(16, 20)}
    assert len(revisions) == hub.MAX_BRANCH_REVISIONS + 1


# --- redirects -------------------------------------------------------------------------------


def test_a_redirect_to_another_loopback_server_is_not_followed(
    fake_hub: FakeHub, internal: FakeHub, session: Session
) -> None:
    """Before: a Hub redirecting config.json to ``http://127.0.0.1:8198/...`` had that
    internal answer fetched, stored and shown word for word."""
    internal.add(FakeRepo("ok/inside", {"secret": "internal answer"}))
    sha = internal.repos["ok/inside"].revisions["main"]
    fake_hub.add(FakeRepo("ok/inside", CONFIG,
                          redirect=f"{internal.endpoint}/ok/inside/resolve/{sha}/config.json"))
    refused = _refusal(lambda: hub_model(session, parse_ref("ok/inside"),
                                         access=_access(fake_hub, token="hf_shop_token")))
    assert isinstance(refused, InvalidInput) and refused.key == "hub_redirect"
    assert refused.status_code == 422 and refused.field == "model"
    assert internal.paths() == []  # never asked
    assert session.scalars(select(HubConfig)).all() == []


def test_a_redirect_within_the_hub_s_own_origin_is_followed_with_its_token(
    fake_hub: FakeHub
) -> None:
    """The Hub redirects a renamed repository to its new name, on its own host."""
    new = fake_hub.add(FakeRepo("acme/new-name", CONFIG))
    fake_hub.add(FakeRepo("acme/old-name", CONFIG, revisions={"main": new.revisions["main"]},
                          redirect=f"/acme/new-name/resolve/{new.revisions['main']}/config.json"))
    found = hub_model(None, parse_ref("acme/old-name"),
                      access=_access(fake_hub, token="hf_shop_token"))
    assert found.config == CONFIG
    assert fake_hub.requests[-1] == (f"/acme/new-name/resolve/{new.revisions['main']}/"
                                     "config.json", "Bearer hf_shop_token")


def test_too_many_redirects_are_refused(fake_hub: FakeHub) -> None:
    repo = fake_hub.add(FakeRepo("acme/loop", CONFIG))
    repo.redirect = f"/acme/loop/resolve/{repo.revisions['main']}/config.json"
    refused = _refusal(lambda: hub_model(None, parse_ref("acme/loop"),
                                         access=_access(fake_hub)))
    assert refused.key == "hub_redirect"
    assert sum(p.endswith("config.json") for p in fake_hub.paths()) == hub.MAX_REDIRECTS + 1


PUBLIC_HUB = HubAccess(flights=HubFlights(), endpoint=DEFAULT_HUB_ENDPOINT)


@pytest.mark.parametrize(("address", "followed"), [
    ("127.0.0.1", False), ("10.1.2.3", False), ("172.16.0.5", False), ("192.168.1.1", False),
    ("169.254.169.254", False), ("100.64.0.1", False), ("0.0.0.0", False), ("::1", False),
    ("fd00:ec2::254", False), ("fe80::1", False), ("::ffff:127.0.0.1", False),
    ("18.239.50.1", True), ("2600:9000:2000::1", True),
], ids=lambda value: str(value))
def test_a_redirect_to_the_hub_s_own_hosts_is_checked_on_the_resolved_address(
    monkeypatch: pytest.MonkeyPatch, address: str, followed: bool
) -> None:
    """cdn-lfs.huggingface.co is the Hub's; what its name resolves to decides (a rebound or
    poisoned name pointing inside is refused)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [
        (family, socket.SOCK_STREAM, 6, "", (address, 443))])
    target = "https://cdn-lfs.huggingface.co/repos/ab/cd/config.json"
    def call() -> str:
        return hub._redirect_target("https://huggingface.co/a/b/resolve/main/config.json",
                                    target, PUBLIC_HUB, parse_ref("a/b"))

    if followed:
        assert call() == target
    else:
        assert _refusal(call).key == "hub_redirect"


@pytest.mark.parametrize("target", [
    "http://cdn-lfs.huggingface.co/x",  # not https
    "https://huggingface.co.evil.example/x",
    "https://evil.example/x",
    "http://169.254.169.254/latest/meta-data/",
    "https://huggingface.co:8443/x",  # another origin of the Hub's host
], ids=lambda value: str(value))
def test_a_redirect_anywhere_else_is_refused_before_any_lookup(
    monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    def no_dns(*_: object, **__: object) -> list[Any]:
        raise AssertionError("resolved a host that is refused by its name")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    refused = _refusal(lambda: hub._redirect_target(
        "https://huggingface.co/a/b/resolve/main/config.json", target, PUBLIC_HUB,
        parse_ref("a/b")))
    assert refused.key == "hub_redirect"


# --- the per-client limit on the storefront -------------------------------------------------


def test_anonymous_look_ups_are_limited_per_client_with_retry_after(
    fake_hub: FakeHub, make_client: Callable[..., TestClient]  # noqa: F811
) -> None:
    """Two look-ups a minute: the third new repository is refused (the limit counts per clock
    minute, so a run that crosses a minute may get two more first: five repositories)."""
    for number in range(5):
        fake_hub.add(FakeRepo(f"acme/model{number}", CONFIG))
    client = make_client(hub_endpoint=fake_hub.endpoint, hub_lookups_per_minute=2)
    client.headers["Accept-Language"] = "en"
    answers = [client.get(f"/?model=acme/model{number}") for number in range(5)]
    statuses = [answer.status_code for answer in answers]
    assert statuses[:2] == [200, 200] and 429 in statuses, statuses
    first = statuses.index(429)
    limited = answers[first]
    assert 1 <= int(limited.headers["Retry-After"]) <= 60
    assert "Too many models were looked up on Hugging Face from your address" in limited.text
    assert _asked(fake_hub, f"acme/model{first}") == 0  # refused before the Hub was asked
    assert client.get("/?model=acme/model0").status_code == 200  # kept: free
    assert client.get("/?model=llama-3.1-8b").status_code == 200  # the catalog: never limited
