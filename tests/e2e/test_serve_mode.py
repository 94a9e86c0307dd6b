"""The calculator's Serve mode in a real browser: pick a model, set users and context, read
per card the users it serves and how fast, watch the result follow the form without a reload,
request a quote; in German, and on a phone-sized screen (390 x 844) without sideways scroll.
axe-core must report no serious or critical violation; every request stays on the origin."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_storefront import (
    assert_accessible,
    request_quote,
    send_quote_form,
    text,
    walk,
)

pytestmark = pytest.mark.e2e
__all__ = ["walk"]  # the fixture, shared with the storefront walk


def users_on(page: Any, card: str) -> int:
    return int(text(page, f"#card-{card} td.users").replace(",", "").replace(".", ""))


def test_serve_walk_in_english(walk: Any, artifacts: Path) -> None:
    page = walk(locale="en-US").page
    page.goto("/")
    page.get_by_role("link", name="Serve", exact=True).click()
    page.wait_for_url(re.compile(r"/serve$"))
    page.select_option("#f-model", "llama-3.1-8b")
    page.wait_for_url(re.compile(r"model=llama-3.1-8b"))
    assert "serves 1 user at" in text(page, "#result-title")
    before = users_on(page, "rtx-pro-6000")
    page.fill("#f-context", "32768")
    page.wait_for_url(re.compile(r"context=32768"))
    page.wait_for_function(
        "before => parseInt(document.querySelector('#card-rtx-pro-6000 td.users')"
        ".innerText.replace(/\\D/g, '')) < before", arg=before)
    assert page.locator("tr[id^=card-]").count() == 8
    assert page.locator("#card-rtx-pro-6000 td.speed").inner_text().strip() != "—"
    assert_accessible(page, "serve")
    page.screenshot(path=str(artifacts / "serve.png"), full_page=True)
    request_quote(page, "rtx-pro-6000")


def test_serve_walk_in_german(walk: Any) -> None:
    page = walk(locale="de-DE").page
    page.goto("/serve?model=qwen3-32b&weights=awq&users=8")
    assert page.locator("html").get_attribute("lang") == "de"
    assert text(page, "h1") == "Welche GPU brauche ich, um ein Modell zu betreiben?"
    assert "Gleichzeitige Nutzer" in page.content()
    page.select_option("#f-kv", "fp8")
    page.wait_for_url(re.compile(r"kv=fp8"))
    assert "Tokens/s je Nutzer" in page.content()
    assert_accessible(page, "Inferenz")


def test_serve_on_a_phone(walk: Any, artifacts: Path) -> None:
    page = walk(locale="en-US", viewport={"width": 390, "height": 844},
                device_scale_factor=2, is_mobile=True, has_touch=True).page
    page.goto("/serve?model=llama-3.3-70b&weights=nvfp4&context=32768&users=4")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.locator("tr[id^=system-]").count() >= 1
    assert_accessible(page, "serve on a phone")
    page.screenshot(path=str(artifacts / "serve-phone.png"), full_page=True)


def test_a_serving_quote_from_serve_to_the_stored_request(walk: Any, artifacts: Path) -> None:
    """Issue 17, a user's view: the customer sizes a serving box, asks for a quote from its
    row, and the form and the stored request's page show that row's serving figures."""
    page = walk(locale="en-US").page
    page.goto("/serve?model=qwen3-8b&weights=awq&kv=fp8")
    page.fill("#f-users", "24")
    page.wait_for_url(re.compile(r"users=24"))
    page.fill("#f-context", "16384")
    page.wait_for_url(re.compile(r"context=16384"))
    page.wait_for_load_state("networkidle")
    row = {name: text(page, f"#card-rtx-pro-6000 td.{name}")
           for name in ("users", "speed", "speed-total")}
    page.locator("#card-rtx-pro-6000 a.button").click()
    page.wait_for_url(re.compile(r"/quote\?.*workload=serving"))
    assert "24 concurrent users at 16,384 tokens each" in text(page, "#sizing-inputs")
    for name, value in row.items():
        assert text(page, f"#fig-{name}") == value, name
    send_quote_form(page)
    assert "To serve" in page.content()
    for name, value in row.items():
        assert text(page, f"#fig-{name}") == value, name
    for name in ("weights", "kv", "kv-pool", "total"):
        assert "GB" in text(page, f"#fig-{name}"), name
    assert_accessible(page, "serving quote request")
    page.screenshot(path=str(artifacts / "serve-quote.png"), full_page=True)



@pytest.mark.parametrize(("locale", "labels"), [
    ("en-US", ["Serves it?", "Most users at this context", "Tokens/s per user",
               "Tokens/s in total", "Price"]),
    ("de-DE", ["Schafft sie es?", "Höchstens gleichzeitige Nutzer bei diesem Kontext",
               "Tokens/s je Nutzer", "Tokens/s insgesamt", "Preis"]),
])
def test_on_a_phone_each_figure_of_a_row_says_what_it_is(
    walk: Any, locale: str, labels: list[str]
) -> None:
    """A fresh walk of issue 30: on a phone the tables become cards, and Serve's showed "Yes",
    "8", "30", "237" one under another with no word of what each was (the fine-tune cards
    label every cell); each cell now reads with its column's name, as the fine-tune page's."""
    page = walk(locale=locale, viewport={"width": 390, "height": 844}).page
    page.goto("/serve?model=llama-3.1-70b&weights=awq&context=32768&users=8")
    for row in ("#card-h200-nvl", "#system-srv-2x-h200-nvl"):
        shown = page.locator(f"{row} td:not(.links)").evaluate_all(
            "cells => cells.map(c => getComputedStyle(c, '::before').content)")
        assert shown == [f'"{label}: "' for label in labels], row
