"""German customer pages have no English (issue 18, point 8): system and sharding names,
levers, warnings, the quote pages and the whole of /how-we-calculate, formulas included."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from tests.english_words import english
from tests.web.test_quotes import CONTACT, QUOTE, _form_fields

GERMAN = {"Accept-Language": "de"}
PAGES = [
    "/", "/?model=llama-3.1-8b&method=full&batch=4",
    "/?model=llama-3.1-70b&method=full&gpus=8&sharding=zero3",
    "/?model=qwen3-32b&method=qlora&quant=nf4&seq=3584&gpu=rtx-pro-5000-48gb",
    "/?model=llama-3.1-8b&batch=0", QUOTE, "/how-we-calculate",
    # a verdict with a setup (issue 27, point 5)
    "/?model=llama-3.1-70b&method=full&optimizer=adamw&ckpt=0",
    "/?model=llama-3.1-8b&method=lora&batch=8&seq=4096",
    "/?model=llama-3.1-8b&method=lora&dataset=1.5B&epochs=3&compare=h100-sxm",
    "/?model=llama-3.1-8b&method=lora&dataset=lots&epochs=0",
]


@pytest.mark.parametrize("path", PAGES)
def test_german_customer_pages_have_no_english(
    make_client: Callable[..., TestClient], path: str,
) -> None:
    page = make_client().get(path, headers=GERMAN)
    assert english(page.text) == [], path


def test_the_customer_request_page_is_german(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    client.headers.update(GERMAN)
    fields = _form_fields(client.get(QUOTE).text)
    target = client.post("/quote", data={**fields, **CONTACT}).headers["location"]
    assert english(client.get(target).text) == []


def test_how_we_calculate_is_german_through_and_through(
    make_client: Callable[..., TestClient],
) -> None:
    """Issue 18, point 8: headings, formulas, sources and the reasons a figure is left out
    follow the reader's language; no part of the page is marked as English."""
    from app.engine.documentation import TERMS

    body = make_client().get("/how-we-calculate", headers=GERMAN).text
    headings = re.findall(r'<section id="term-[\w-]+" class="term">\s*<h2>([^<]+)</h2>', body)
    assert len(headings) == len(TERMS)
    assert "Mehrere GPUs" in headings and "Several GPUs" not in headings
    assert 'lang="en"' not in body.split("<main", 1)[1]
