"""What an anonymous sign-in may cost (issue 13, point 4): one password hash, whether the
e-mail is known or not, and only a few at once per process; the rest get a 503 with
Retry-After at once instead of queueing (40 bogus sign-ins took 1.1 GB and 17 s before).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import argon2
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from app.accounts import passwords
from app.accounts import staff as staff_accounts
from app.accounts.throttle import MAX_FAILURES
from app.db.session import SessionFactory
from app.db.tables import StaffUser
from tests.staff.conftest import ADMIN, SALES, hidden
from tests.staff.test_sign_in_limits import CountingHasher, _at_once, count_hashing

BOGUS_BURST = 40
"""The probe's burst of made-up sign-ins."""


@pytest.fixture
def hasher(monkeypatch: pytest.MonkeyPatch) -> CountingHasher:
    return count_hashing(monkeypatch, delay_s=0.05)


def _english(make_client: Callable[..., TestClient]) -> tuple[TestClient, str]:
    client = make_client()
    client.headers["Accept-Language"] = "en"
    return client, hidden(client.get("/staff/sign-in").text, "csrf_token")


def test_every_slot_busy_is_a_503_with_retry_after_that_counts_no_attempt(
    make_client: Callable[..., TestClient], users: SessionFactory,
) -> None:
    client, token = _english(make_client)
    wrong = {"csrf_token": token, "email": ADMIN[0], "password": "wrong-password-123"}
    with passwords.hashing_slot(), passwords.hashing_slot():  # both of the process's slots
        for _ in range(MAX_FAILURES + 2):
            response = client.post("/staff/sign-in", data=wrong)
            assert response.status_code == 503
            assert response.headers["Retry-After"] == str(passwords.BUSY_RETRY_AFTER_S)
            assert "Sign-in is busy. Try again in a few seconds." in response.text
        german = client.post("/staff/sign-in", data=wrong, headers={"Accept-Language": "de"})
        assert german.status_code == 503 and "Anmeldung ist ausgelastet" in german.text
    # none of those counted: the pair still has all its attempts, and the right one signs in
    for _ in range(MAX_FAILURES - 1):
        assert client.post("/staff/sign-in", data=wrong).status_code == 422
    assert client.post("/staff/sign-in", data={**wrong, "password": ADMIN[1]}).status_code == 303


def test_a_busy_htmx_sign_in_swaps_in_the_form_with_its_message(
    make_client: Callable[..., TestClient], users: SessionFactory,
) -> None:
    """The desk's htmx swaps 503 answers (staff/layout.html), so the message shows."""
    client, token = _english(make_client)
    layout = client.get("/staff/sign-in").text
    match = re.search(r'\{"code":"\(([0-9|]+)\)","swap":true', layout)
    assert match and "503" in match.group(1).split("|")
    with passwords.hashing_slot(), passwords.hashing_slot():
        response = client.post("/staff/sign-in", headers={"HX-Request": "true"}, data={
            "csrf_token": token, "email": ADMIN[0], "password": ADMIN[1]})
    assert response.status_code == 503 and "Retry-After" in response.headers
    assert response.text.lstrip().startswith('<form id="sign-in"')
    assert "Sign-in is busy" in response.text


def test_a_burst_of_bogus_sign_ins_hashes_at_most_the_slots_at_once(
    make_client: Callable[..., TestClient], users: SessionFactory, hasher: CountingHasher,
) -> None:
    """Different made-up e-mails (no throttle applies): the hashing itself is bounded."""
    client, token = _english(make_client)
    statuses = _at_once(BOGUS_BURST, lambda i: client.post("/staff/sign-in", data={
        "csrf_token": token, "email": f"nobody-{i}@shop.example",
        "password": "guess-guess-123"}).status_code)
    assert hasher.most_at_once <= passwords.HASHING_SLOTS
    assert set(statuses) <= {422, 503} and 503 in statuses
    assert statuses.count(422) == hasher.calls


def test_an_unknown_e_mail_costs_one_hash_like_a_known_one(
    users: SessionFactory, hasher: CountingHasher,
) -> None:
    """Counted, not timed: each wrong sign-in verifies exactly once, and the dummy hash has
    the same parameters (the cost) as a real user's."""
    with users.begin() as session:
        session.execute(update(StaffUser).where(StaffUser.email == SALES[0])
                        .values(active=False))
    cases = {
        "known, wrong password": (ADMIN[0], "wrong-password-123"),
        "unknown": ("nobody@shop.example", "wrong-password-123"),
        "deactivated, right password": SALES,
        "impossible address": ("not an address", "wrong-password-123"),
        "unknown, the dummy's own password": ("x@shop.example",
                                              "not-a-real-password-just-for-timing"),
    }
    for name, (email, password) in cases.items():
        before = hasher.calls
        with users.begin() as session:
            assert staff_accounts.authenticate(session, email=email, password=password) is None
        assert hasher.calls - before == 1, name
    with users() as session:
        real = session.scalar(select(StaffUser.password_hash).where(StaffUser.email == ADMIN[0]))
    assert real is not None
    dummy = argon2.extract_parameters(passwords.dummy_hash())
    assert dummy == argon2.extract_parameters(real)


@pytest.mark.parametrize("email", [ADMIN[0], "nobody@shop.example"])
def test_the_first_sign_in_of_either_kind_makes_the_dummy_hash(
    users: SessionFactory, hasher: CountingHasher, email: str,
) -> None:
    """The dummy is made once per process, on the first sign-in, known e-mail or not: so
    the first probe after a restart does not tell an unknown e-mail by an extra hash."""
    passwords.dummy_hash.cache_clear()
    with users.begin() as session:
        staff_accounts.authenticate(session, email=email, password="wrong-password-123")
        assert (hasher.hashes, hasher.calls) == (1, 1)
        staff_accounts.authenticate(session, email=email, password="wrong-password-123")
        assert (hasher.hashes, hasher.calls) == (1, 2)


def test_hashing_for_signed_in_staff_waits_for_a_slot_instead_of_failing() -> None:
    """Creating a user (admin page, CLI) queues behind a busy sign-in rather than erroring."""
    results: list[str] = []
    with passwords.hashing_slot(), passwords.hashing_slot():
        worker = threading.Thread(target=lambda: results.append(
            passwords.hash_password("long-enough-password")))
        worker.start()
        worker.join(0.2)
        assert worker.is_alive() and not results  # waiting, not refused
    worker.join(5)
    assert results and results[0].startswith("$argon2id$")
