"""Security headers on every kind of response, and templates the CSP can hold to its word.

``app/html/middleware.py`` sets them on everything the app answers (storefront, fragments,
error pages, static files, the partner API, the probes): a Content-Security-Policy whose
scripts and styles come from the site only (no ``'unsafe-inline'``, no ``'unsafe-eval'``),
``frame-ancestors`` from the settings, ``X-Content-Type-Options: nosniff`` and a
``Referrer-Policy``. Such a policy only holds if no page needs inline script or style: the
templates are checked for inline ``<script>``, ``on*=`` handlers, ``<style>`` and ``style=``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest
from fastapi.testclient import TestClient
from httpx2 import Response  # what starlette's TestClient returns
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.v1.limits import MAX_BODY_BYTES
from app.config import TEMPLATES_DIR, load_settings
from app.main import create_app
from tests.security.conftest import Shop

HX = {"HX-Request": "true"}
HTML = {"Accept": "text/html", "Accept-Language": "en"}
UNREACHABLE_DATABASE = "postgresql+psycopg://sizer@127.0.0.1:9/sizer"
"""A PostgreSQL URL nothing answers (port 9, discard, is closed): a database outage."""
UNSAFE = ("'unsafe-inline'", "'unsafe-eval'", "'unsafe-hashes'", "*")

INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
EVENT_HANDLER = re.compile(r"<[^>]*\son[a-z]+\s*=", re.IGNORECASE)
STYLE_ATTRIBUTE = re.compile(r"<[^>]*\sstyle\s*=", re.IGNORECASE)
STYLE_ELEMENT = re.compile(r"<style\b", re.IGNORECASE)


def policy(response: Response) -> dict[str, list[str]]:
    """The response's CSP as directive -> sources."""
    header = response.headers.get("content-security-policy")
    assert header, f"no Content-Security-Policy on {response.request.url}"
    directives: dict[str, list[str]] = {}
    for part in header.split(";"):
        name, *sources = part.split()
        directives[name.lower()] = sources
    return directives


def assert_secure(response: Response, *, frame_ancestors: tuple[str, ...] = ("'self'",)) -> None:
    csp = policy(response)
    for directive in ("script-src", "style-src"):
        sources = csp.get(directive, csp.get("default-src"))
        assert sources, f"{directive} (or default-src) missing"
        assert not set(sources) & set(UNSAFE), (directive, sources)
    assert csp["object-src"] == ["'none'"]
    assert tuple(csp["frame-ancestors"]) == frame_ancestors
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] in (
        "no-referrer", "same-origin", "strict-origin", "strict-origin-when-cross-origin"
    )


def _quote_page(shop: Shop) -> str:
    response = shop.client.post("/quote", data={
        "item": "gpu:rtx-pro-6000", "model": "llama-3.1-8b", "method": "lora",
        "name": "Ada Buyer", "company": "Example GmbH", "email": "ada@example.com",
        "country": "DE", "quantity": "1",
    })
    assert response.status_code == 303
    return str(response.headers["location"])


RESPONSES: dict[str, Callable[[Shop], Response]] = {
    "storefront page": lambda shop: shop.client.get("/?model=qwen3-8b", headers=HTML),
    "result fragment": lambda shop: shop.client.get("/?model=qwen3-8b", headers={**HTML, **HX}),
    "quote form": lambda shop: shop.client.get("/quote?item=gpu:rtx-pro-6000&model=qwen3-8b",
                                               headers=HTML),
    "quote request page": lambda shop: shop.client.get(_quote_page(shop), headers=HTML),
    "how we calculate": lambda shop: shop.client.get("/how-we-calculate", headers=HTML),
    "staff sign-in": lambda shop: shop.client.get("/staff/sign-in", headers=HTML),
    "staff redirect": lambda shop: shop.client.get("/staff/quotes", headers=HTML),
    "404 page": lambda shop: shop.client.get("/no-such-page", headers=HTML),
    "422 page": lambda shop: shop.client.get("/?batch=0", headers=HTML),
    "405 page": lambda shop: shop.client.delete("/", headers=HTML),
    "static css": lambda shop: shop.client.get("/static/css/site.css"),
    "static script": lambda shop: shop.client.get("/static/js/htmx.min.js"),
    "static 404": lambda shop: shop.client.get("/static/no-such-file.js"),
    "api json": lambda shop: shop.client.get("/api/v1/gpus", headers=shop.auth),
    "api 304": lambda shop: shop.client.get(
        "/api/v1/gpus", headers={**shop.auth, "If-None-Match": "*"}),
    "api 401 problem": lambda shop: shop.client.get("/api/v1/gpus"),
    "api 422 problem": lambda shop: shop.client.post(
        "/api/v1/estimates", json={"method": "lora", "model": "x", "batch_size": 0},
        headers=shop.auth),
    "api docs": lambda shop: shop.client.get("/api/v1/docs"),
    "openapi": lambda shop: shop.client.get("/api/v1/openapi.json"),
    "healthz": lambda shop: shop.client.get("/healthz"),
    "readyz": lambda shop: shop.client.get("/readyz"),
}


@pytest.mark.parametrize("kind", list(RESPONSES))
def test_every_kind_of_response_carries_the_security_headers(shop: Shop, kind: str) -> None:
    response = RESPONSES[kind](shop)
    assert response.status_code < 500, response.text[:300]
    assert_secure(response)


@pytest.mark.parametrize("kind", [k for k in RESPONSES if not k.startswith(("static", "api"))
                                  and k not in ("openapi", "healthz", "readyz")])
def test_rendered_pages_have_no_inline_script_or_style(shop: Shop, kind: str) -> None:
    html = RESPONSES[kind](shop).text
    assert not INLINE_SCRIPT.search(html)
    assert not EVENT_HANDLER.search(html)
    assert not STYLE_ELEMENT.search(html)
    assert not STYLE_ATTRIBUTE.search(html)


def test_frame_ancestors_come_from_the_settings(database_url: str) -> None:
    sources = ("'self'", "https://shop.example", "https://*.partner.example")
    app = create_app(load_settings(database_url=database_url, frame_ancestors=list(sources)))
    with TestClient(app) as client:
        for response in (client.get("/healthz"), client.get("/static/css/site.css"),
                         client.get("/no-such-page", headers=HTML), client.get("/api/v1/gpus")):
            assert_secure(response, frame_ancestors=sources)


TEMPLATES = sorted(TEMPLATES_DIR.rglob("*.html")) + sorted(TEMPLATES_DIR.rglob("*.svg"))


def test_the_template_check_sees_the_templates() -> None:
    assert len(TEMPLATES) >= 10
    assert INLINE_SCRIPT.search("<script>alert(1)</script>")
    assert not INLINE_SCRIPT.search('<script src="/static/js/htmx.min.js" defer></script>')
    assert EVENT_HANDLER.search('<button type="button" onclick="go()">')
    assert not EVENT_HANDLER.search('<a href="/" hx-on="x">')  # hx-on is htmx, not inline JS
    assert STYLE_ATTRIBUTE.search('<div class="a" style="color: red">')


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: str(p.relative_to(TEMPLATES_DIR)))
def test_no_template_has_inline_script_or_style(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert not INLINE_SCRIPT.search(source), "inline <script> (CSP script-src 'self')"
    assert not EVENT_HANDLER.search(source), "on*= event handler (CSP script-src 'self')"
    assert not STYLE_ELEMENT.search(source), "<style> element (CSP style-src 'self')"
    assert not STYLE_ATTRIBUTE.search(source), "style= attribute (CSP style-src 'self')"


class _FailingMiddleware:
    """A middleware that raises for one path: an exception outside every route's handler."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/fails-in-middleware":
            raise RuntimeError("a middleware failed")
        await self.app(scope, receive, send)


def _fails_in_route(_request: Request) -> NoReturn:
    raise RuntimeError("a route failed")


@pytest.mark.parametrize("path", ["/fails-in-route", "/fails-in-middleware"])
def test_a_500_made_by_starlette_itself_carries_the_security_headers(
    database_url: str, path: str
) -> None:
    """Starlette's ServerErrorMiddleware answers an unhandled exception (in a route or in a
    middleware) outside every other middleware; the headers must be set outside it."""
    app = create_app(load_settings(database_url=database_url))
    app.router.routes.insert(0, Route("/fails-in-route", _fails_in_route))
    app.add_middleware(_FailingMiddleware)
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get(path, headers=HTML)
    assert response.status_code == 500
    assert_secure(response)


def test_the_outage_page_carries_the_security_headers() -> None:
    """No database at all (nothing listens on the discard port): the 503 pages and problems."""
    app = create_app(load_settings(database_url=UNREACHABLE_DATABASE))
    with TestClient(app, raise_server_exceptions=False) as client:
        for path, headers in (("/?model=llama-3.1-8b", HTML), ("/readyz", {}),
                              ("/api/v1/gpus", {"Authorization": "Bearer sizer_nokey"})):
            response = client.get(path, headers=headers)
            assert response.status_code in (401, 503), (path, response.status_code)
            assert_secure(response)


def test_answers_the_partner_api_s_middleware_sends_itself_carry_the_headers(
    shop: Shop,
) -> None:
    """The API's body limit answers 413 before any handler runs."""
    response = shop.client.post("/api/v1/estimates", content=b"x" * (MAX_BODY_BYTES + 1),
                                headers={**shop.auth, "Content-Type": "application/json"})
    assert response.status_code == 413
    assert_secure(response)
