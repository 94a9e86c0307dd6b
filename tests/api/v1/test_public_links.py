"""Absolute links come from SIZER_PUBLIC_BASE_URL alone (issue 13, point 9).

The API built ``quote_url`` from the request's Host header, and Starlette's trailing-slash
redirects still do: a forged ``Host: evil.example`` came back as a link to evil.example (with a
shared cache in front, for everybody). Every answer below, API and pages, is sent with forged
Host and forwarding headers; none may mention the forged host anywhere, in its body or its
headers, and every absolute link must start with the configured origin.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from httpx2 import Response  # what starlette's TestClient returns

from tests.api.v1.test_quote_requests import request_body
from tests.web.test_quotes import CONTACT, QUOTE, _form_fields

PUBLIC = "https://sizer.shop.example"
FORGED = "evil.example"
FORGED_HEADERS = {
    "Host": FORGED, "X-Forwarded-Host": FORGED, "X-Forwarded-Proto": "https",
    "X-Forwarded-Server": FORGED, "Forwarded": f"host={FORGED};proto=https",
    "X-Original-URL": f"https://{FORGED}/", "Referer": f"https://{FORGED}/",
}
ESTIMATE = {"model": "qwen3-8b", "method": "lora", "batch_size": 2, "seq_len": 1024}


def assert_no_forged_host(response: Response) -> None:
    assert response.status_code < 500, response.text[:300]
    assert FORGED not in response.text
    for name, value in response.headers.items():
        assert FORGED not in value, (name, value)


@pytest.fixture
def shop(api: Callable[..., TestClient], auth: dict[str, str]) -> TestClient:
    """The whole app with SIZER_PUBLIC_BASE_URL set, every request with forged headers."""
    client = api(public_base_url=PUBLIC)
    client.headers.update({**FORGED_HEADERS, **auth, "Accept-Language": "en"})
    return client


def test_api_quote_urls_start_with_the_public_base_url(shop: TestClient) -> None:
    response = shop.post("/api/v1/recommendations", json=ESTIMATE)
    assert_no_forged_host(response)
    urls = [r["quote_url"] for r in response.json()["recommendations"]]
    assert urls and all(url.startswith(f"{PUBLIC}/quote?item=") for url in urls)


def test_without_the_setting_links_use_the_loopback_default_not_the_host(
    api: Callable[..., TestClient], auth: dict[str, str]
) -> None:
    response = api().post("/api/v1/recommendations", json=ESTIMATE,
                          headers={**FORGED_HEADERS, **auth})
    assert_no_forged_host(response)
    urls = [r["quote_url"] for r in response.json()["recommendations"]]
    assert urls and all(url.startswith("http://127.0.0.1:8000/quote?") for url in urls)


@pytest.mark.parametrize(
    "path",
    ["/api/v1/models/", "/api/v1/docs/", "/how-we-calculate/", "/staff/", "/staff/quotes/",
     "/lang/en/", "/static", "/q/some-token/"],
)
def test_trailing_slash_redirects_lead_to_the_public_origin(shop: TestClient, path: str) -> None:
    response = shop.get(path)
    assert_no_forged_host(response)
    assert response.status_code == 307
    assert response.headers["location"].startswith(PUBLIC + "/")


@pytest.mark.parametrize("host", ["", f"{FORGED}:99999", f"{FORGED}:x"])
def test_without_a_usable_host_redirects_still_lead_to_the_public_origin(
    shop: TestClient, host: str
) -> None:
    """Starlette then spells the request's URL with our listening address instead."""
    response = shop.get("/staff/", headers={"Host": host})
    assert response.headers["location"] == f"{PUBLIC}/staff"


@pytest.mark.parametrize(
    "path",
    ["/", "/?model=llama-3.1-8b&method=lora", QUOTE, "/how-we-calculate", "/lang/en?next=/",
     "/staff", "/staff/sign-in", "/api/v1/models", "/api/v1/docs", "/api/v1/openapi.json",
     "/api/v1/quote-requests", "/healthz", "/readyz", "/no/such/page"],
)
def test_no_answer_mentions_a_forged_host(shop: TestClient, path: str) -> None:
    assert_no_forged_host(shop.get(path))


def test_a_stored_quote_request_links_to_the_public_origin(shop: TestClient) -> None:
    fields = _form_fields(shop.get(QUOTE).text)
    # posted from the shop's own page: the forged Referer would be refused as cross-site (403)
    stored = shop.post("/quote", data={**fields, **CONTACT},
                       headers={"Referer": f"{PUBLIC}/quote"})
    assert_no_forged_host(stored)
    assert stored.status_code == 303
    page = shop.get(stored.headers["location"])
    assert_no_forged_host(page)
    token = stored.headers["location"].removeprefix("/q/")
    assert re.search(rf'id="permalink" href="/q/{token}">{re.escape(PUBLIC)}/q/{token}<',
                     page.text)
    created = shop.post("/api/v1/quote-requests", json=request_body())
    assert_no_forged_host(created)
    assert created.status_code == 201
    assert_no_forged_host(shop.get(created.headers["location"]))
