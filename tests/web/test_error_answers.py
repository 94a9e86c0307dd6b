"""Every error answer from the calculator's fragment routes reaches the page with JavaScript on
(issue 30, point 2).

The walk typed a Hugging Face id while the Hub could not be reached: the server answered 503
with the way on (paste the config.json), htmx dropped it (its default swaps no 4xx or 5xx) and
the page kept the previous model's verdict under the new model's name. Two things make every
error reach the page: templates/base.html tells htmx to swap every 4xx and 5xx answer, and each
answer the routes give is one of our fragments (``Vary: HX-Request``, which static/js/forms.js
reads to tell ours from a proxy's), holding the message."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import TEMPLATES_DIR
from app.html.forms import MAX_FORM_BYTES
from tests.web.conftest import HX

BASE = TEMPLATES_DIR / "base.html"


def _response_handling(template: Path) -> list[dict[str, object]]:
    meta = re.search(r"<meta name=\"htmx-config\" content='([^']*)'>", template.read_text())
    assert meta, "the page configures htmx"
    rules: list[dict[str, object]] = json.loads(meta.group(1))["responseHandling"]
    return rules


def _rule(rules: list[dict[str, object]], status: int) -> dict[str, object]:
    """The rule htmx 2 applies: the first whose code, a regular expression, is found in the
    status (htmx.js, ``codeMatches``: ``new RegExp(code).test(status)``)."""
    return next((rule for rule in rules if re.search(str(rule["code"]), str(status))),
                {"swap": False})


def test_htmx_swaps_every_error_status() -> None:
    rules = _response_handling(BASE)
    dropped = [status for status in range(400, 600) if _rule(rules, status)["swap"] is not True]
    assert dropped == [], f"htmx would drop these answers: {dropped}"


def test_htmx_still_swaps_successes_and_not_an_empty_answer() -> None:
    rules = _response_handling(BASE)
    assert _rule(rules, 200)["swap"] is True
    assert _rule(rules, 204)["swap"] is False


def _ours(headers: Mapping[str, str]) -> bool:
    return "HX-Request" in headers.get("vary", "")


FORM = {"model": "llama-3.1-8b", "method": "lora", "batch": "1", "seq": "2048"}
SERVE = {"model": "llama-3.1-8b", "context": "8192", "users": "1", "gpus": "1"}


@pytest.mark.parametrize(("method", "url", "data", "status", "shown"), [
    ("post", "/", {**FORM, "model": "no-such-model"}, 404, "No such model in our catalog."),
    ("post", "/", {**FORM, "batch": "0"}, 422, "Enter a number from 1 to"),
    ("post", "/", {**FORM, "model": "custom", "config": "x" * (MAX_FORM_BYTES + 10)}, 413,
     "A config.json may be at most 4 MB"),
    ("get", "/?model=llama-3.1-8b&gpu=no-such-card", None, 404, "No such card in our catalog."),
    ("post", "/serve", {**SERVE, "users": "0"}, 422, "Enter a number from 1 to 65,536."),
    ("post", "/serve", {**SERVE, "model": "no-such-model"}, 404,
     "No such model in our catalog."),
    ("get", "/serve?model=gpt-oss-20b&context=200000", None, 422, "131,072"),
])
def test_each_error_answer_is_our_fragment_with_its_message(
    client: TestClient, method: str, url: str, data: dict[str, str] | None, status: int,
    shown: str
) -> None:
    response = client.request(method.upper(), url, data=data, headers=HX)
    assert response.status_code == status
    assert _ours(response.headers), "forms.js swaps only our own answers"
    assert "<html" not in response.text
    assert 'id="result-title"' in response.text  # the result area's heading: it is replaced
    assert shown in response.text.replace("\u00a0", " ")


def test_a_form_sent_as_json_is_answered_in_our_words(client: TestClient) -> None:
    response = client.post("/", content=b"{}", headers={**HX, "Content-Type": "application/json"})
    assert response.status_code == 415
    assert _ours(response.headers)
    assert "format we cannot read" in response.text


def test_the_hub_out_of_reach_replaces_the_old_verdict_with_the_way_on(
    make_client: Callable[..., TestClient]
) -> None:
    """The walk's defect: with the Hub out of reach the 503 names the way on (paste the
    config.json) in the result area and the model field, and no verdict is left standing."""
    client = make_client(hub_endpoint="http://127.0.0.1:9", hub_timeout_s=0.5)
    client.headers["Accept-Language"] = "en"
    response = client.post("/", data={**FORM, "model": "mistralai/Mistral-Small-24B-Instruct-2501"},
                           headers=HX)
    assert response.status_code == 503
    assert _ours(response.headers)
    assert "config.json" in response.text
    assert 'id="result-title"' in response.text
    assert "Fits on" not in response.text and "fits on" not in response.text
    assert re.search(r'<span id="err-model" class="field-error"[^>]*>[^<]+</span>',
                     response.text), "the model field says why"
