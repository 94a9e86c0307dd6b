"""No page is wider than a phone (issue 18, "no horizontal overflow on any page at 390 px").

Every GET route of the app that answers HTML is found by walking the app's routes, so a page
added later is checked without touching this file; a route whose path takes a parameter needs
a sample below (a quote's token, a catalog kind and slug), and the test fails naming a route
that has none. Each page is opened in German (longer words than English) in one Chromium
context at 390x844 as a phone, first the customer's pages, then, signed in, the staff desk's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.responses import HTMLResponse
from fastapi.routing import iter_route_contexts

from app.config import load_settings
from app.main import create_app
from tests.e2e.conftest import SELLER, add_staff_user

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}
EMAIL, PASSWORD = "phone@shop.example", "a-phone-sized-password"
QUOTE = "/quote?item=gpu:rtx-pro-6000&model=llama-3.1-8b&method=lora"
CONTACT = {"name": "Erika Mustermann-Lüdenscheid", "company": "Beispielunternehmen GmbH & Co. KG",
           "email": "erika.mustermann@beispielunternehmen.example", "country": "DE",
           "vat_id": "", "quantity": "2", "message": "Zwei Stück, bitte."}
EXTRA = {
    "/": ["/?model=llama-3.1-70b&method=full&gpus=8&sharding=zero3",
          "/?model=qwen3-32b&method=qlora&quant=nf4&seq=3584&gpu=rtx-pro-5000-48gb"],
    "/models": ["/models?q=llama"],
}
"""Further states of a page worth a look beside its plain address."""


def html_pages() -> list[str]:
    """The path of every GET route that answers HTML, as the app declares it."""
    app = create_app(load_settings(database_url="sqlite://"))
    return sorted({route.path for route in iter_route_contexts(app.routes)
                   if route.path and "GET" in (route.methods or ())
                   and getattr(route, "response_class", None) is HTMLResponse})


def _hidden(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))


def _customer_quote(context: Any) -> str:
    """A storefront request sent the way the quote form sends it; returns its /q/ path."""
    form = context.request.get(QUOTE)
    response = context.request.post("/quote", form={**_hidden(form.text()), **CONTACT})
    assert response.ok, response.status
    return re.sub(r"^https?://[^/]+", "", response.url)


def _sign_in(context: Any) -> None:
    form = context.request.get("/staff/sign-in").text()
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token
    response = context.request.post("/staff/sign-in", form={
        "csrf_token": token.group(1), "email": EMAIL, "password": PASSWORD,
        "next": "/staff/quotes"})
    assert response.ok and "/staff/quotes" in response.url, response.url


def _send(context: Any, reference: str) -> None:
    """Price the request with one long-named line and send it, as the desk's forms do."""
    page = context.request.get(f"/staff/quotes/{reference}").text()
    fields = {"csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', page),
              "version": re.search(r'name="version" value="([^"]+)"', page)}
    assert all(fields.values())
    token, version = (match.group(1) for match in fields.values() if match)
    assert context.request.post(f"/staff/quotes/{reference}/lines", form={
        "csrf_token": token, "version": version, "item_slug": "other:",
        "description": "Server mit 8× NVIDIA RTX PRO 6000 Blackwell Server Edition, "
                       "Installation und Inbetriebnahme vor Ort",
        "quantity": "12", "unit_price": "123.456,78"}).ok
    page = context.request.get(f"/staff/quotes/{reference}").text()
    version_match = re.search(r'name="version" value="([^"]+)"', page)
    assert version_match
    assert context.request.post(f"/staff/quotes/{reference}/send", form={
        "csrf_token": token, "version": version_match.group(1), "confirm": "1"}).ok


@pytest.fixture(scope="module")
def phone(browser: Any, base_url: str) -> Iterator[Any]:
    add_staff_user(base_url, EMAIL, PASSWORD, "Phone Desk")
    context = browser.new_context(base_url=base_url, locale="de-DE", viewport=PHONE,
                                  is_mobile=True, has_touch=True, device_scale_factor=2)
    yield context
    context.close()


def _too_wide(page: Any, path: str) -> str | None:
    """What sticks out of the window on ``path``, or None when nothing does."""
    response = page.goto(path)
    assert response is not None and response.status == 200, (path, response and response.status)
    page.wait_for_load_state("networkidle")
    wide = page.evaluate("Math.max(document.documentElement.scrollWidth,"
                         " document.body.scrollWidth)")
    if wide <= PHONE["width"]:
        return None
    culprits = page.evaluate("""(limit) => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > limit + 0.5
                     && !e.closest('.table-wrap, pre'))
        .slice(0, 5)
        .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
                  + (e.className && typeof e.className === 'string'
                     ? '.' + e.className.trim().split(/\\s+/).join('.') : '')
                  + ' ' + Math.round(e.getBoundingClientRect().right) + 'px')""",
                             PHONE["width"])
    return f"{path} is {wide} px wide: {', '.join(culprits)}"


def test_no_page_is_wider_than_a_phone(phone: Any) -> None:
    """Every HTML page, customer's and staff's, fits 390 px without scrolling sideways."""
    page = phone.new_page()
    sign_in = page.goto("/staff/sign-in")
    assert sign_in is not None and sign_in.status == 200
    customer_requested = _customer_quote(phone)
    customer_sent = _customer_quote(phone)
    staff_pages = [p for p in html_pages() if p.startswith("/staff")]
    wide = [_too_wide(page, "/staff/sign-in")]
    _sign_in(phone)
    desk = phone.request.get("/staff/quotes").text()
    references = re.findall(r'href="/staff/quotes/(Q-[A-Z0-9]+)"', desk)
    assert len(references) >= 2
    _send(phone, references[0])
    sent = phone.request.get(customer_sent).text()
    assert "priced-quote" in sent and SELLER["contact_email"] in sent, "the newest is priced"
    samples = {
        "/quote": [QUOTE],
        "/q/{token}": [customer_requested, customer_sent],
        "/staff/quotes/{reference}": [f"/staff/quotes/{ref}" for ref in references[:2]],
        "/staff/quotes/{reference}/print": [f"/staff/quotes/{references[0]}/print"],
        "/staff/catalog/{plural}": [f"/staff/catalog/{kind}"
                                    for kind in ("gpus", "systems", "models")],
        "/staff/catalog/{plural}/new": ["/staff/catalog/gpus/new",
                                        "/staff/catalog/systems/new"],
        "/staff/catalog/{plural}/{slug}": ["/staff/catalog/gpus/rtx-pro-6000",
                                           "/staff/catalog/systems/" + _first_system(phone),
                                           "/staff/catalog/models/llama-3.1-70b"],
    }
    missing = [p for p in html_pages() if "{" in p and p not in samples]
    assert missing == [], "give these pages a sample address in tests/e2e/test_phone_width.py"
    for route in html_pages():
        if route == "/staff/sign-in":
            continue
        for path in samples.get(route, [route]) + EXTRA.get(route, []):
            wide.append(_too_wide(page, path))
    assert len(staff_pages) >= 8
    assert [w for w in wide if w] == []


def _first_system(context: Any) -> str:
    listing = context.request.get("/staff/catalog/systems").text()
    match = re.search(r'href="/staff/catalog/systems/([\w.-]+)"', listing)
    assert match
    return match.group(1)


def test_a_sent_quote_shows_its_net_column_and_a_checkbox_a_finger_can_hit(phone: Any) -> None:
    """Issue 30, point 6: on a phone /q/ pushed the lines' net column off-screen and the accept
    checkbox was about 13 px; the lines now stack, and the box is 24 px (WCAG 2.2's target)."""
    path = _customer_quote(phone)
    if "/staff/sign-in" in phone.request.get("/staff/quotes").url:  # not yet signed in
        _sign_in(phone)
    desk = phone.request.get("/staff/quotes").text()
    newest = re.findall(r'href="/staff/quotes/(Q-[A-Z0-9]+)"', desk)[0]
    _send(phone, newest)
    page = phone.new_page()
    page.goto(path)
    net = page.locator(".quote-lines td.net").first
    box = net.bounding_box()
    assert net.is_visible() and box is not None
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    checkbox = page.locator("#f-confirm").bounding_box()
    assert checkbox is not None
    assert checkbox["width"] >= 24 and checkbox["height"] >= 24
    page.close()
