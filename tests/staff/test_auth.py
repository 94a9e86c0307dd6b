"""Sign-in, sessions, CSRF, throttling, and that every /staff route is protected."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.accounts import passwords
from app.accounts import staff as staff_accounts
from app.db.session import SessionFactory
from app.db.tables import StaffSession, StaffUser
from app.errors import Conflict
from tests.staff.conftest import ADMIN, SALES, hidden, sign_in

SAMPLE = {"reference": "Q-AAAAAAAA", "line_id": "1", "slug": "rtx-pro-6000", "kind": "gpus",
          "prefix": "abcd1234"}


def _staff_routes(client: TestClient) -> list[tuple[str, str]]:
    found = []
    # iter_route_contexts flattens included routers with their effective (prefixed) paths
    assert isinstance(client.app, FastAPI)
    for route in iter_route_contexts(client.app.routes):
        if route.path and route.path.startswith("/staff"):
            path = re.sub(r"\{(\w+)(:\w+)?\}", lambda m: SAMPLE.get(m.group(1), "x"),
                          route.path)
            for method in sorted(route.methods or ()):
                found.append((method, path))
    return found


def test_every_staff_route_but_sign_in_redirects_to_sign_in_without_a_session(
    client: TestClient,
) -> None:
    routes = _staff_routes(client)
    assert len(routes) >= 10
    for method, path in routes:
        response = client.request(method, path)
        if path == "/staff/sign-in":
            assert response.status_code in (200, 403), (method, path)
            continue
        assert response.status_code == 303, (method, path, response.status_code)
        assert response.headers["location"].startswith("/staff/sign-in?next=/staff"), path
        hx = client.request(method, path, headers={"HX-Request": "true"})
        assert hx.headers["HX-Redirect"].startswith("/staff/sign-in"), path


def test_every_unsafe_staff_route_needs_the_csrf_token(
    staff_client: Callable[..., tuple[TestClient, str]],
) -> None:
    client, token = staff_client(ADMIN)
    unsafe = [(m, p) for m, p in _staff_routes(client) if m not in ("GET", "HEAD")]
    assert ("POST", "/staff/sign-out") in unsafe
    for method, path in unsafe:
        response = client.request(method, path, data={"csrf_token": "wrong"})
        assert response.status_code == 403, (method, path, response.status_code)
        assert "Not allowed" in response.text
        response = client.request(method, path, data={})
        assert response.status_code == 403, (method, path)
    # still signed in: the refusals changed nothing
    assert client.get("/staff/quotes").status_code == 200
    # the header works as well as the field (htmx sends it from hx-headers)
    assert client.post("/staff/sign-out", headers={"X-CSRF-Token": token}).status_code == 303
    assert client.get("/staff/quotes").status_code == 303


def test_sign_in_sets_a_safe_cookie_and_sign_out_ends_the_session(
    staff_client: Callable[..., tuple[TestClient, str]], users: SessionFactory,
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client()
    form = client.get("/staff/sign-in?next=/staff/catalog/gpus")
    assert "HttpOnly" in form.headers["set-cookie"]
    response = client.post("/staff/sign-in", data={
        "csrf_token": hidden(form.text, "csrf_token"), "email": "ADMIN@shop.example ",
        "password": ADMIN[1], "next": "/staff/catalog/gpus"})
    assert response.status_code == 303
    assert response.headers["location"] == "/staff/catalog/gpus"
    cookie = next(c for c in response.headers.get_list("set-cookie")
                  if c.startswith("sizer_staff="))
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/staff" in cookie
    assert "Secure" not in cookie  # plain http in tests; https sets Secure (next test)
    with users() as session:
        stored = session.scalars(select(StaffSession.token_hash)).all()
        raw = cookie.split(";")[0].split("=", 1)[1]
        assert raw not in stored and len(stored) == 1  # only the hash is kept
    page = client.get("/staff/quotes")
    token = hidden(page.text, "csrf_token")
    assert client.post("/staff/sign-out", data={"csrf_token": token}).status_code == 303
    with users() as session:
        assert session.scalar(select(func.count()).select_from(StaffSession)) == 0
    assert client.get("/staff/quotes").status_code == 303


def test_cookie_is_secure_over_https(
    make_client: Callable[..., TestClient], users: SessionFactory
) -> None:
    client = make_client()
    client.base_url = client.base_url.copy_with(scheme="https")
    form = client.get("/staff/sign-in")
    response = client.post("/staff/sign-in", data={
        "csrf_token": hidden(form.text, "csrf_token"), "email": SALES[0], "password": SALES[1]})
    cookie = next(c for c in response.headers.get_list("set-cookie")
                  if c.startswith("sizer_staff="))
    assert "Secure" in cookie


def test_wrong_password_is_422_beside_the_field_and_throttled_after_five(
    make_client: Callable[..., TestClient], users: SessionFactory
) -> None:
    client = make_client()
    client.headers["Accept-Language"] = "en"
    token = hidden(client.get("/staff/sign-in").text, "csrf_token")
    for _ in range(5):
        response = client.post("/staff/sign-in", data={
            "csrf_token": token, "email": ADMIN[0], "password": "nope-nope-nope"})
        assert response.status_code == 422
        assert re.search(r'id="err-password" class="field-error">E-mail or password is wrong',
                         response.text)
    response = client.post("/staff/sign-in", data={
        "csrf_token": token, "email": ADMIN[0], "password": ADMIN[1]})
    assert response.status_code == 429 and "Too many failed attempts" in response.text
    # another e-mail from the same address is not locked out
    response = client.post("/staff/sign-in", data={
        "csrf_token": token, "email": SALES[0], "password": SALES[1]})
    assert response.status_code == 303


def test_sign_in_form_without_its_token_is_refused(
    make_client: Callable[..., TestClient], users: SessionFactory
) -> None:
    client = make_client()
    client.get("/staff/sign-in")
    response = client.post("/staff/sign-in", data={"email": ADMIN[0], "password": ADMIN[1]})
    assert response.status_code == 403


def test_next_never_leaves_the_staff_desk(
    make_client: Callable[..., TestClient], users: SessionFactory
) -> None:
    client = make_client()
    for target in ("https://evil.example/", "//evil.example/staff", "/"):
        client.cookies.clear()
        token = hidden(client.get("/staff/sign-in").text, "csrf_token")
        response = client.post("/staff/sign-in", data={
            "csrf_token": token, "email": ADMIN[0], "password": ADMIN[1], "next": target})
        assert response.headers["location"] == "/staff/quotes"


def test_sales_cannot_open_admin_pages(
    staff_client: Callable[..., tuple[TestClient, str]],
) -> None:
    client, _ = staff_client(SALES)
    assert client.get("/staff/audit").status_code == 403
    admin, _ = staff_client(ADMIN)
    assert admin.get("/staff/audit").status_code == 200


def test_passwords_are_argon2id_and_users_unique(users: SessionFactory) -> None:
    with users() as session:
        stored = session.scalars(select(StaffUser.password_hash)).all()
        assert all(h.startswith("$argon2id$") for h in stored)
        assert passwords.verify_password(stored[0], "wrong") is False
        try:
            staff_accounts.create_user(session, email=ADMIN[0].upper(), display_name="x",
                                       password="long-enough-password", role="sales")
        except Conflict:
            pass
        else:
            raise AssertionError("duplicate e-mail accepted")


def test_signed_in_staff_see_the_desk(
    staff_client: Callable[..., tuple[TestClient, str]], make_client: Callable[..., TestClient],
) -> None:
    client, token = staff_client(ADMIN)
    page = client.get("/staff/quotes")
    assert "Ada Admin" in page.text and f'"X-CSRF-Token": "{token}"' in page.text
    assert page.headers["cache-control"] == "no-store"
    assert sign_in(make_client(), SALES)


def test_htmx_sign_in_error_is_the_form_fragment(
    make_client: Callable[..., TestClient], users: SessionFactory
) -> None:
    client = make_client()
    token = hidden(client.get("/staff/sign-in").text, "csrf_token")
    response = client.post("/staff/sign-in", headers={"HX-Request": "true"}, data={
        "csrf_token": token, "email": ADMIN[0], "password": "wrong-wrong-wrong"})
    assert response.status_code == 422
    assert response.text.lstrip().startswith('<form id="sign-in"')
    response = client.post("/staff/sign-in", headers={"HX-Request": "true"}, data={
        "csrf_token": token, "email": ADMIN[0], "password": ADMIN[1]})
    assert response.headers["HX-Redirect"] == "/staff/quotes"


def test_german_desk(staff_client: Callable[..., tuple[TestClient, str]]) -> None:
    client, _ = staff_client(SALES)
    page = client.get("/staff/catalog/gpus", headers={"Accept-Language": "de"}).text
    assert "Mitarbeiterbereich" in page and "Abmelden" in page


def test_an_expired_session_on_an_htmx_post_returns_to_the_page_after_sign_in(
    client: TestClient,
) -> None:
    response = client.post("/staff/catalog/gpus/rtx-pro-6000", headers={
        "HX-Request": "true", "HX-Current-URL": "http://testserver/staff/catalog/gpus/x?a=1"})
    assert response.headers["HX-Redirect"] == "/staff/sign-in?next=/staff/catalog/gpus/x%3Fa%3D1"


@pytest.mark.parametrize("email", ["admin@shop.example\x00", "\x00", "a" * 10_000 + "@x.de",
                                   "<script>alert(1)</script>", "'; DROP TABLE staff_user; --"])
def test_impossible_e_mails_are_a_wrong_sign_in_not_a_server_error(
    make_client: Callable[..., TestClient], users: SessionFactory, email: str
) -> None:
    client = make_client()
    client.headers["Accept-Language"] = "en"
    token = hidden(client.get("/staff/sign-in").text, "csrf_token")
    response = client.post("/staff/sign-in", data={
        "csrf_token": token, "email": email, "password": "whatever-password"})
    assert response.status_code == 422
    assert "<script>alert(1)</script>" not in response.text
    with users() as session:
        assert session.scalar(select(func.count()).select_from(StaffSession)) == 0
