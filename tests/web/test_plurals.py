"""One user, one token: the pages say "1 user" and "1 token", never "1 users" or "1 tokens"
(issue 30, point 6, "serves 1 users"). A fresh walk still found "serves 1 user at 1 tokens" in
the Serve verdict at a context of 1, "micro-batch 1, 1 tokens" on the quote form at a sequence
of 1, "about 1 min for 1 tokens" for a dataset of one token and, on a Serve quote, "1 user at 1
tokens" and "up to 1 users at once"; German "1 Tokens" likewise. English and German, the whole
page and the htmx result."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from tests.web.conftest import HX

ONE_PLURAL = re.compile(r"(?<![\d.,])1\s(?:users|tokens|Tokens)(?![/\w])")
SERVE_QUOTE = ("/quote?item=gpu%3Artx-pro-4500&workload=serving&model={model}&weights=published"
               "&kv=auto&context={context}&users={users}&speed=10&gpus=1&runtime=vllm")


def _text(body: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body))).replace(
        "\u00a0", " ")


def _plurals(client: TestClient, url: str, lang: str, headers: dict[str, str]) -> list[str]:
    response = client.get(url, headers={**headers, "Accept-Language": lang})
    assert response.status_code == 200, (url, response.status_code)
    text = _text(response.text)
    return [text[max(0, m.start() - 50):m.end()] for m in ONE_PLURAL.finditer(text)]


@pytest.mark.parametrize("headers", [{}, HX], ids=["page", "htmx"])
@pytest.mark.parametrize("url", [
    "/serve?model=llama-3.1-8b&context=1",
    "/serve?model=llama-3.1-8b&context=1&users=3",
    "/?model=llama-3.1-8b&method=lora&dataset=1",
])
def test_the_result_says_1_token_and_1_user(client: TestClient, lang: str, url: str,
                                            headers: dict[str, str]) -> None:
    assert _plurals(client, url, lang, headers) == []


@pytest.mark.parametrize("url", [
    "/quote?item=gpu:rtx-pro-6000&model=llama-3.1-8b&method=lora&seq=1",
    SERVE_QUOTE.format(model="llama-3.1-8b", context=1, users=1),
    SERVE_QUOTE.format(model="llama-3.1-8b", context=1, users=3),
    SERVE_QUOTE.format(model="deepseek-r1-distill-qwen-7b", context=131072, users=1),
])
def test_the_quote_form_says_1_token_and_1_user(client: TestClient, lang: str, url: str) -> None:
    assert _plurals(client, url, lang, {}) == []


@pytest.mark.parametrize(("lang", "users", "words"), [
    ("en", 1, "serves 1 user at 1 token, up to"),
    ("en", 3, "serves 3 users at 1 token each, up to"),
    ("de", 1, "bedient 1 Nutzer mit 1 Token, bis zu"),
    ("de", 3, "bedient 3 Nutzer mit je 1 Token, bis zu"),
])
def test_the_serve_verdict_at_a_context_of_one_token(client: TestClient, lang: str, users: int,
                                                     words: str) -> None:
    body = client.get(f"/serve?model=llama-3.1-8b&context=1&users={users}",
                      headers={"Accept-Language": lang}).text
    title = re.search(r'id="result-title"[^>]*>([^<]*)<', body)
    assert title and words in html.unescape(title.group(1))
