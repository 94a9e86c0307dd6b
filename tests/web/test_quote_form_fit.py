"""The fine-tune quote form says whether the chosen card or system fits the job (issue 30,
point 6): the Serve quote form said so, the fine-tune one showed only the total per GPU, so a
buyer could ask for a card the job does not fit without a word."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

FITS = "/quote?item=gpu:rtx-pro-6000&model=llama-3.1-8b&method=lora&batch=1&seq=2048"
SHORT = "/quote?item=gpu:rtx-pro-4500&model=llama-3.3-70b&method=full&batch=1&seq=2048"
SYSTEM_SHORT = "/quote?item=system:ws-1x-rtx-pro-6000&model=llama-3.3-70b&method=full"


def _item_fit(body: str) -> tuple[str, str]:
    found = re.search(r'<p id="item-fit" class="(\w+)"[^>]*>([^<]+)</p>', body)
    assert found, "the form says whether the item fits"
    return found.group(1), found.group(2).replace("\u00a0", " ")


@pytest.mark.parametrize(("url", "state", "words"), [
    (FITS, "yes", "Fits: "),
    (SHORT, "warn", "This job does not fit here: "),
    (SYSTEM_SHORT, "warn", "short per GPU"),
])
def test_the_quote_form_says_whether_the_item_fits(client: TestClient, url: str, state: str,
                                                   words: str) -> None:
    response = client.get(url)
    assert response.status_code == 200
    shown_state, text = _item_fit(response.text)
    assert shown_state == state
    assert words in text


def test_the_warning_is_german_on_german_pages(client: TestClient) -> None:
    body = client.get(SHORT, headers={"Accept-Language": "de"}).text
    assert "Dieser Auftrag passt hier nicht" in _item_fit(body)[1]


SERVE_FITS = "/quote?item=gpu:rtx-pro-6000&workload=serving&model=llama-3.1-8b&users=16"
SERVE_SHORT = "/quote?item=gpu:rtx-pro-4500&workload=serving&model=llama-3.3-70b&users=64"


@pytest.mark.parametrize(("lang", "url", "state", "words"), [
    ("en", SERVE_FITS, "yes", "Serves this load: up to "),
    ("en", SERVE_SHORT, "warn", "This does not serve the load as set."),
    ("de", SERVE_FITS, "yes", "Bedient diese Last: bis zu "),
    ("de", SERVE_SHORT, "warn", "Damit lässt sich diese Last so nicht bedienen."),
])
def test_the_serve_quote_form_says_it_in_a_sentence_too(
    client: TestClient, lang: str, url: str, state: str, words: str
) -> None:
    """A fresh walk: the Serve form's only word on a card that cannot serve the load was
    "Serves it? No" among eight figures, beside tokens/s it would not reach; now it says so in
    a sentence, as the fine-tune form does."""
    response = client.get(url, headers={"Accept-Language": lang})
    assert response.status_code == 200
    found_state, text = _item_fit(response.text)
    assert found_state == state and text.startswith(words)
