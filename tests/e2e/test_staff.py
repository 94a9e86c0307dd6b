"""The staff desk in a real browser: sign in; two tabs edit one price (the second gets the
conflict); import a model from its config.json; turn a customer's storefront request into a
sent, printable quote that the customer then sees on /q/.

The live server and its seeded SQLite database come from tests/e2e/conftest.py; the staff
user is added straight to that database (the file under the session's ``e2e`` temp folder).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.config import SEED_DIR
from tests.e2e.conftest import add_staff_user
from tests.e2e.test_storefront import assert_accessible

pytestmark = pytest.mark.e2e

NBSP = "\u00a0"
EMAIL, PASSWORD = "desk@shop.example", "a-good-long-password"
CARD = "rtx-pro-5000-72gb"


@pytest.fixture(scope="module")
def staff_user(base_url: str) -> Iterator[None]:
    add_staff_user(base_url, EMAIL, PASSWORD, "Desk Tester")
    yield


@pytest.fixture
def context(browser: Any, base_url: str, staff_user: None) -> Iterator[Any]:
    ctx = browser.new_context(base_url=base_url, locale="en-US",
                              viewport={"width": 1280, "height": 900})
    yield ctx
    ctx.close()


def text(page: Any, selector: str) -> str:
    return str(page.locator(selector).inner_text()).replace(NBSP, " ").strip()


def sign_in(page: Any) -> None:
    page.goto("/staff/quotes")
    page.wait_for_url(re.compile(r"/staff/sign-in\?next="))
    page.fill("#f-email", EMAIL)
    page.fill("#f-password", "wrong password!")
    page.locator("#sign-in button[type=submit]").click()
    page.wait_for_selector("#err-password:has-text('E-mail or password is wrong')")
    assert_accessible(page, "sign-in with an error")
    page.fill("#f-password", PASSWORD)
    page.locator("#sign-in button[type=submit]").click()
    page.wait_for_url(re.compile(r":\d+/staff/quotes$"))
    assert "Desk Tester" in page.content()


def set_price(page: Any, price: str) -> None:
    page.fill("#f-price_eur_net", price)
    page.locator("#catalog-form button[type=submit]").click()


def test_sign_in_conflict_import_and_quote_to_the_customer(
    context: Any, browser: Any, base_url: str, artifacts: Path
) -> None:
    page = context.new_page()
    sign_in(page)

    # two tabs open the same card; the first save wins, the second gets the conflict
    first, second = context.new_page(), context.new_page()
    first.goto(f"/staff/catalog/gpus/{CARD}")
    second.goto(f"/staff/catalog/gpus/{CARD}")
    set_price(first, "9999.00")
    first.wait_for_selector("#saved")
    first.wait_for_function("() => document.activeElement.id === 'saved'")
    set_price(second, "7777.00")
    second.wait_for_selector("#conflict")
    assert "Someone else saved this entry" in text(second, "#conflict")
    # the answer takes the focus, so a long form scrolls to it (issue 18, point 10)
    second.wait_for_function("() => document.activeElement.id === 'conflict'")
    assert_accessible(second, "catalog form with a conflict")
    assert second.input_value("#f-price_eur_net") == "9,999.00"  # the current version
    second.screenshot(path=str(artifacts / "staff-conflict.png"), full_page=True)
    first.close()
    second.close()

    # model import: preview first, then save
    config = (SEED_DIR / "models" / "qwen3-0.6b.json").read_text()
    page.goto("/staff/models/import")
    page.fill("#f-config", "{ not json")
    page.locator("button[value=preview]").click()
    page.wait_for_selector("#err-config:has-text('Not valid JSON')")
    page.fill("#f-config", config)
    page.locator("button[value=preview]").click()
    page.wait_for_selector("#preview")
    assert_accessible(page, "model import preview")
    expected = json.loads(config)
    assert expected["model_type"] in text(page, "#preview")
    assert text(page, "#p-total").replace(",", "").isdigit()
    page.fill("#f-slug", "my-qwen3-0.6b")
    page.fill("#f-hf_id", "me/qwen3-0.6b")
    page.fill("#f-family", "Qwen3")
    page.fill("#f-license", "apache-2.0")
    page.locator("#save-model").click()
    page.wait_for_url(re.compile(r"/staff/catalog/models/my-qwen3-0.6b\?saved=1"))

    # a customer asks for a quote on the storefront
    customer_ctx = browser.new_context(base_url=base_url, locale="en-US")
    customer = customer_ctx.new_page()
    customer.goto(f"/quote?item=gpu:{CARD}&model=llama-3.1-8b&method=lora")
    customer.fill("#f-name", "Grace Hopper")
    customer.fill("#f-company", "Compilers Ltd")
    customer.fill("#f-email", "grace@example.com")
    customer.fill("#f-quantity", "2")
    customer.select_option("#f-country", "DE")
    customer.locator("#quote button[type=submit]").click()
    customer.wait_for_url(re.compile(r"/q/[A-Za-z0-9_-]{32}$"))
    reference = re.search(r"Q-[A-Z0-9]{8}", customer.content())
    assert reference
    q_url = customer.url

    # staff price it: the catalog price is prefilled; add a line, a date, send
    page.goto("/staff/quotes?status=new")
    page.locator(f"a:has-text('{reference.group(0)}')").click()
    page.wait_for_selector("#sizing")
    assert page.input_value("#f-unit_price") == "9,999.00"
    page.fill("#f-discount_percent", "5")
    page.locator("#add-line button[type=submit]").click()
    page.wait_for_selector("#lines tbody tr[id^=line-]")
    assert_accessible(page, "quote with an editable line")
    # 2 x 9999.00 less 5 % = 18998.10 net; 19 % VAT = 3609.64; gross 22607.74
    assert text(page, "#total-net") == "€18,998.10"
    assert text(page, "#total-gross") == "€22,607.74"
    page.fill("#f-valid_until", "2099-06-30")
    page.fill("#f-staff_notes", "Delivery within two weeks.")
    page.locator("#details button[type=submit]").click()
    page.wait_for_selector("#f-valid_until[value='2099-06-30']")
    page.check("#f-confirm")
    page.locator("#send button[type=submit]").click()
    page.wait_for_selector("#sent-note")
    assert_accessible(page, "sent quote")
    assert "Prices are frozen" in text(page, "#sent-note")

    # the printable view: lines, totals, sizing, terms; print CSS hides the navigation
    page.locator("#print-link").click()
    page.wait_for_selector("#printable")
    assert "Sizing breakdown" in text(page, "#printable")
    assert "valid until Jun 30, 2099" in text(page, "#printable")
    page.emulate_media(media="print")
    assert not page.locator("header.site").is_visible()
    page.screenshot(path=str(artifacts / "staff-quote-print.png"), full_page=True)
    page.emulate_media(media="screen")

    # the catalog price changes later; the sent quote keeps its price
    page.goto(f"/staff/catalog/gpus/{CARD}")
    set_price(page, "")
    page.wait_for_selector("#saved")

    customer.goto(q_url)
    customer.wait_for_selector("#priced-quote")
    quote = text(customer, "#priced-quote")
    assert_accessible(customer, "customer's priced quote")
    assert "€22,607.74" in quote and "Delivery within two weeks." in quote
    assert "Our general terms and conditions apply." in quote
    customer.emulate_media(media="print")
    assert not customer.locator("header.site").is_visible()
    customer_ctx.close()

    # sign out: the desk is closed again
    page.locator("form.sign-out button").click()
    page.wait_for_url(re.compile(r"/staff/sign-in"))
    page.goto("/staff/quotes")
    page.wait_for_url(re.compile(r"/staff/sign-in\?next="))
