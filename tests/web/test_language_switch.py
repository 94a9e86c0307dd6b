"""The language switch sends people back only to a path on this site (issue 13, point 2).

Browsers drop tab, CR and LF anywhere in a URL and read ``\\`` as ``/`` (WHATWG URL standard),
so a Location of ``/<TAB>/evil.example/x`` took Chromium to evil.example, and ``U+2028`` in a
Location header was a 500. Every hostile return path below must give a 303 whose Location is
a plain ASCII path that resolves to our own host, whatever a browser does to it first.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator
from functools import partial
from urllib.parse import urljoin, urlsplit

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from app.config import load_settings
from app.html.return_paths import MAX_RETURN_PATH_LENGTH
from app.main import create_app
from app.web.pages import HOME, safe_next
from tests.security.catalogue import HOSTILE_RETURN_PATHS, RAW_HOSTILE_RETURN_QUERIES

ORIGIN = "https://shop.example"
BROWSER_DROPS = str.maketrans("", "", "\t\n\r")
"""What the WHATWG URL parser removes from anywhere in a URL before parsing it."""
VISIBLE_ASCII = frozenset(string.ascii_letters + string.digits + string.punctuation)


def browser_resolves(location: str) -> str:
    """The host a browser on ORIGIN would go to: its normalisation first (tabs and newlines
    dropped, leading controls and spaces stripped, backslash read as slash), then a join."""
    normalised = location.translate(BROWSER_DROPS).lstrip("".join(map(chr, range(0x21))))
    return urlsplit(urljoin(ORIGIN + "/", normalised.replace("\\", "/"))).netloc


def assert_same_origin_path(location: str) -> None:
    assert location.startswith("/") and not location.startswith("//"), location
    assert set(location) <= VISIBLE_ASCII and "\\" not in location, location
    assert browser_resolves(location) == "shop.example", location


@pytest.fixture(scope="module")
def switch_app(database_url: str) -> FastAPI:
    """One app per backend for this module's 124 cases: the switch reads neither the database
    nor anything the app keeps (``switch_language``), so each case gets a client of its own
    (no cookie carried over) on it instead of building and seeding a shop of its own."""
    return create_app(load_settings(database_url=database_url))


@pytest.fixture
def switch(switch_app: FastAPI) -> Iterator[Callable[..., str]]:
    with TestClient(switch_app, follow_redirects=False) as client:
        yield partial(_follow, client)


def _follow(client: TestClient, next_value: str | None = None,
            raw_query: str | None = None) -> str:
    if raw_query is not None:
        response = client.get(f"/lang/en?{raw_query}")
    else:
        response = client.get("/lang/en", params={"next": next_value})
    assert response.status_code == 303, response.text[:300]
    assert "lang=en" in response.headers["set-cookie"]  # the switch itself still works
    location: str = response.headers["location"]
    assert_same_origin_path(location)
    return location


@pytest.mark.parametrize("target", HOSTILE_RETURN_PATHS, ids=ascii)
def test_a_hostile_return_path_goes_home(switch: Callable[..., str], target: str) -> None:
    assert switch(target) == HOME


@pytest.mark.parametrize("raw_query", RAW_HOSTILE_RETURN_QUERIES, ids=ascii)
def test_a_percent_encoded_hostile_return_path_stays_on_site(
    switch: Callable[..., str], raw_query: str
) -> None:
    switch(raw_query=raw_query)


def test_the_issue_s_reproductions_go_home(switch: Callable[..., str]) -> None:
    assert switch(raw_query="next=/%09/evil.example/x") == HOME
    assert switch(raw_query="next=/%E2%80%A8") == HOME


@pytest.mark.parametrize(
    ("target", "location"),
    [
        ("/", "/"),
        ("/?model=qwen3-8b&batch=2", "/?model=qwen3-8b&batch=2"),
        ("/staff/quotes?status=new", "/staff/quotes?status=new"),
        ("/how-we-calculate#memory", "/how-we-calculate"),
        ("/?q=M\u00fcller", "/?q=M%C3%BCller"),
        ("/\u65e5\u672c", "/%E6%97%A5%E6%9C%AC"),
        ("/%2F%2Fevil.example", "/%2F%2Fevil.example"),  # an escaped slash stays a path
        ("/a:b@c", "/a:b@c"),
    ],
    ids=ascii,
)
def test_a_path_on_this_site_is_kept_from_its_parsed_path_and_query(
    switch: Callable[..., str], target: str, location: str
) -> None:
    assert switch(target) == location


def test_a_return_path_longer_than_the_limit_goes_home(switch: Callable[..., str]) -> None:
    assert switch("/?" + "a" * (MAX_RETURN_PATH_LENGTH - 2)) != HOME
    assert switch("/?" + "a" * (MAX_RETURN_PATH_LENGTH - 1)) == HOME


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40) | st.text(alphabet="/\\\t\n\r :%.@?#ae\u2028\u00a0", max_size=12))
def test_whatever_is_asked_the_answer_is_a_path_on_this_site(target: str) -> None:
    location = safe_next(target)
    assert_same_origin_path(location)
