"""The language switch in a real browser: a hostile return path keeps Chromium on our origin.

Chromium drops a tab from a Location header before parsing it, so ``/<TAB>/evil.example/x``
used to land on evil.example (issue 13, point 2). Every request the tab makes is recorded
(redirects included); one for another origin fails the test.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from tests.security.catalogue import RAW_HOSTILE_RETURN_QUERIES

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("raw_query", RAW_HOSTILE_RETURN_QUERIES[:6], ids=ascii)
def test_following_the_switch_stays_on_our_origin(
    browser: Any, base_url: str, raw_query: str
) -> None:
    from playwright.sync_api import Error

    context = browser.new_context()
    requested: list[str] = []  # redirects included (a route handler sees only the first URL)
    context.on("request", lambda request: requested.append(request.url))
    page = context.new_page()
    try:
        # A navigation to another host fails (no network); `requested` says where it went.
        with contextlib.suppress(Error):
            page.goto(f"{base_url}/lang/en?{raw_query}")
        assert [url for url in requested if not url.startswith(base_url + "/")] == []
        assert page.url.startswith(base_url + "/")
        assert page.locator("html").get_attribute("lang") == "en"
    finally:
        context.close()
