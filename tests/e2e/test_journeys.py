"""The German customer journey and the staff journey at desktop and phone size (issue 18).

At 1366x900 and 390x844: every page passes axe-core (serious and critical), no page is wider
than the window, and a screenshot of each step is kept in tests/e2e/artifacts/ (git-ignored,
kept by CI as artefacts). On the phone the verdict, the price and "Request a quote" are in
the first screen (the verdict bar above the form), and the card table is stacked into cards.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import add_staff_user
from tests.e2e.test_storefront import assert_accessible

pytestmark = pytest.mark.e2e

VIEWPORTS = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
EMAIL, PASSWORD = "journey@shop.example", "another-long-password"
CONTACT = {"#f-name": "Erika Mustermann", "#f-company": "Beispiel GmbH",
           "#f-email": "erika@example.com", "#f-quantity": "1"}


@pytest.fixture(scope="module")
def desk_user(base_url: str) -> None:
    add_staff_user(base_url, EMAIL, PASSWORD, "Journey Desk")


@pytest.fixture(params=list(VIEWPORTS))
def german(request: pytest.FixtureRequest, browser: Any, base_url: str) -> Iterator[Any]:
    size = request.param
    phone = size == "phone"
    context = browser.new_context(base_url=base_url, locale="de-DE",
                                  viewport=VIEWPORTS[size], is_mobile=phone, has_touch=phone,
                                  device_scale_factor=2 if phone else 1)
    page = context.new_page()
    page.size = size
    yield page
    context.close()


def check(page: Any, name: str, artifacts: Path) -> None:
    """axe clean, nothing wider than the window, a screenshot kept."""
    page.wait_for_load_state("networkidle")
    # the viewport's own width: a phone's window (innerWidth) widens to content that overflows
    width = VIEWPORTS[page.size]["width"]
    wide = page.evaluate("document.documentElement.scrollWidth")
    assert wide <= width, f"{name} is {wide} px wide in a {width} px window"
    assert_accessible(page, name)
    page.screenshot(path=str(artifacts / f"{page.size}-{name}.png"), full_page=True)


def test_german_customer_journey(german: Any, artifacts: Path) -> None:
    page = german
    page.goto("/?model=llama-3.1-8b&method=lora")
    check(page, "rechner", artifacts)
    if page.size == "phone":
        bar = page.locator("#verdict-bar")
        box = bar.bounding_box()
        assert box and box["y"] + box["height"] <= 844, "the verdict is in the first screen"
        assert "Passt" in bar.inner_text() and bar.locator("a.button").is_visible()
        card = page.locator("tr[id^=card-]").first.bounding_box()
        assert card and card["width"] <= 390
        page.screenshot(path=str(artifacts / "storefront-phone.png"), scale="css")
    page.fill("#f-batch", "2")
    page.wait_for_url(re.compile(r"batch=2"))
    page.wait_for_load_state("networkidle")
    if page.size == "phone":
        page.locator("#verdict-bar a.button").click()
    else:
        page.locator("tr.recommended a.button").click()
    page.wait_for_url(re.compile(r"/quote\?"))
    check(page, "angebotsformular", artifacts)
    for selector, value in CONTACT.items():
        page.fill(selector, value)
    page.select_option("#f-country", "DE")
    page.locator("#quote button[type=submit]").click()
    page.wait_for_url(re.compile(r"/q/[A-Za-z0-9_-]{32}$"))
    assert "Ihre Angebotsanfrage" in page.content()
    check(page, "anfrage", artifacts)
    page.goto("/how-we-calculate")
    check(page, "so-rechnen-wir", artifacts)


def test_german_staff_journey(german: Any, desk_user: None, artifacts: Path) -> None:
    page = german
    page.goto("/quote?item=gpu:rtx-pro-6000&model=llama-3.1-8b&method=lora")
    for selector, value in CONTACT.items():
        page.fill(selector, value)
    page.select_option("#f-country", "AT")
    page.fill("#f-vat_id", "ATU12345678")
    page.locator("#quote button[type=submit]").click()
    page.wait_for_url(re.compile(r"/q/[A-Za-z0-9_-]{32}$"))
    customer_url = page.url
    reference = re.search(r"Q-[A-Z0-9]{8}", page.content())
    assert reference

    page.goto("/staff/quotes")
    page.wait_for_url(re.compile(r"/staff/sign-in"))
    page.fill("#f-email", EMAIL)
    page.fill("#f-password", PASSWORD)
    check(page, "anmelden", artifacts)
    page.locator("#sign-in button[type=submit]").click()
    # The sign-in URL itself ends in "next=/staff/quotes": anchor on the port so the wait
    # lasts until htmx's redirect has navigated (CI stop 21 ran axe mid-navigation).
    page.wait_for_url(re.compile(r":\d+/staff/quotes$"))
    check(page, "angebote", artifacts)
    page.locator(f"a:has-text('{reference.group(0)}')").click()
    page.wait_for_selector("#sizing")
    page.fill("#f-unit_price", "8.499")
    page.locator("#add-line button[type=submit]").click()
    page.wait_for_selector("#lines tbody tr[id^=line-]")
    check(page, "angebot", artifacts)
    page.check("#f-confirm")
    page.locator("#send button[type=submit]").click()
    page.wait_for_selector("#sent-note")
    check(page, "angebot-versendet", artifacts)
    page.goto("/staff/catalog/gpus")
    check(page, "katalog", artifacts)
    page.goto("/staff/audit")
    check(page, "protokoll", artifacts)
    page.goto(customer_url)
    page.wait_for_selector("#priced-quote")
    assert "8.499,00" in page.locator("#priced-quote").inner_text()
    check(page, "angebot-kunde", artifacts)
