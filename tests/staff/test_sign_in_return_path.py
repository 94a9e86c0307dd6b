"""After sign-in the desk sends staff back only to a /staff path, checked like the language
switch's return path (app/html/return_paths.py): a tab, U+2028 or a second slash never leads
off the site, and a character outside Latin-1 is no longer a 500 after a good password."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from app.db.session import SessionFactory
from tests.staff.conftest import ADMIN, hidden

DESK = "/staff/quotes"


@pytest.mark.parametrize(
    ("next_value", "location"),
    [
        ("/staff/catalog/gpus", "/staff/catalog/gpus"),
        ("/staff/quotes?q=M\u00fcller", "/staff/quotes?q=M%C3%BCller"),
        ("/staff\u2028", DESK),
        ("/staff/\t/evil.example", DESK),
        ("/staff\\..\\..\\evil.example", DESK),
        ("//evil.example/staff", DESK),
        ("https://evil.example/staff", DESK),
        ("/lang/en", DESK),
    ],
    ids=ascii,
)
def test_sign_in_returns_only_to_a_staff_path(
    make_client: Callable[..., TestClient], users: SessionFactory, next_value: str,
    location: str,
) -> None:
    client = make_client()
    form = client.get("/staff/sign-in", params={"next": next_value})
    assert form.status_code == 200
    response = client.post("/staff/sign-in", data={
        "csrf_token": hidden(form.text, "csrf_token"), "email": ADMIN[0], "password": ADMIN[1],
        "next": next_value})
    assert response.status_code == 303, response.text[:300]
    assert response.headers["location"] == location
