"""Staff desk fixtures: users (a cheap argon2id for speed), signed-in clients, a quote request."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient

from app.accounts import passwords
from app.accounts import staff as staff_accounts
from app.db.session import SessionFactory
from tests.web.conftest import client, htmx, make_client, seeded  # noqa: F401 (fixtures)

ADMIN = ("admin@shop.example", "admin-password-123")
SALES = ("sales@shop.example", "sales-password-123")
QUOTE = "/quote?item=gpu:rtx-pro-6000&model=llama-3.1-8b&method=lora&batch=1&seq=2048"
CONTACT = {
    "name": "Ada Lovelace", "company": "Analytical Engines GmbH", "email": "ada@example.com",
    "country": "DE", "vat_id": "", "message": "Two, please.", "quantity": "2",
}


@pytest.fixture(autouse=True)
def _fast_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    """argon2id still, with test-sized cost (the production cost is ~50 ms a hash)."""
    cheap = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    monkeypatch.setattr(passwords, "_hasher", lambda: cheap)
    passwords.dummy_hash.cache_clear()


@pytest.fixture
def users(seeded: SessionFactory) -> Iterator[SessionFactory]:  # noqa: F811
    """An admin and a sales user, committed."""
    with seeded.begin() as session:
        staff_accounts.create_user(session, email=ADMIN[0], display_name="Ada Admin",
                                   password=ADMIN[1], role="admin")
        staff_accounts.create_user(session, email=SALES[0], display_name="Sam Sales",
                                   password=SALES[1], role="sales")
    yield seeded


def hidden(html: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert match, f"no hidden field {name}"
    return match.group(1)


def sign_in(browser: TestClient, who: tuple[str, str]) -> str:
    """Sign in through the form; returns the session's CSRF token."""
    form = browser.get("/staff/sign-in")
    response = browser.post("/staff/sign-in", data={
        "csrf_token": hidden(form.text, "csrf_token"), "email": who[0], "password": who[1],
        "next": "/staff/quotes"})
    assert response.status_code == 303, response.text
    page = browser.get("/staff/quotes")
    assert page.status_code == 200
    return hidden(page.text, "csrf_token")


@pytest.fixture
def staff_client(make_client: Callable[..., TestClient],  # noqa: F811
                 users: SessionFactory) -> Callable[[tuple[str, str]], tuple[TestClient, str]]:
    """``staff_client(ADMIN)`` -> (a signed-in English client, its CSRF token)."""

    def make(who: tuple[str, str]) -> tuple[TestClient, str]:
        c = make_client()
        c.headers["Accept-Language"] = "en"
        return c, sign_in(c, who)

    return make


def request_quote(browser: TestClient, **contact: str) -> str:
    """A storefront quote request; returns its /q/ path."""
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">',
                             browser.get(QUOTE).text))
    response = browser.post("/quote", data={**fields, **CONTACT, **contact})
    assert response.status_code == 303
    return str(response.headers["location"])
