"""Serve mode in a real browser with a model the catalog lacks (issue 29, point 6): the
customer pastes a config.json, or types a Hugging Face repository id into the search box (the
app asks a fake Hub on 127.0.0.1), and the result follows without a reload, in English and in
German; axe-core reports no serious or critical violation; every request stays on the
origin."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from app.config import SEED_DIR
from tests.e2e.conftest import served_app
from tests.e2e.test_storefront import assert_accessible, text, walking
from tests.fake_hub import FakeHub, FakeRepo, running_hub

pytestmark = pytest.mark.e2e

QWEN3_8B: dict[str, Any] = json.loads((SEED_DIR / "models" / "qwen3-8b.json").read_text())
NEW_MODEL: dict[str, Any] = {**QWEN3_8B, "num_hidden_layers": 40}
REPO = "Acme/New-Model-9B"
SHA = "c" * 40


@pytest.fixture(scope="module")
def fake_hub() -> Iterator[FakeHub]:
    for hub in running_hub():
        hub.add(FakeRepo(REPO, NEW_MODEL, revisions={"main": SHA}))
        yield hub


@pytest.fixture(scope="module")
def hub_base_url(tmp_path_factory: pytest.TempPathFactory, fake_hub: FakeHub) -> Iterator[str]:
    yield from served_app(tmp_path_factory, hub_endpoint=fake_hub.endpoint, hub_timeout_s=5)


@pytest.fixture
def walk(browser: Any, hub_base_url: str) -> Iterator[Any]:
    yield from walking(browser, hub_base_url)


@pytest.mark.parametrize(("locale", "words"), [
    ("en-US", {"yours": "Your model", "commit": f"config.json of {REPO} at commit {SHA[:12]}",
               "serves": "serves 1 user"}),
    ("de-DE", {"yours": "Ihr Modell", "commit": f"config.json von {REPO} beim Commit {SHA[:12]}",
               "serves": "bedient 1 Nutzer"}),
])
def test_serve_sizes_a_pasted_config_and_a_hub_id(walk: Any, locale: str,
                                                  words: dict[str, str]) -> None:
    page = walk(locale=locale).page
    page.goto("/serve?model=llama-3.1-8b")
    assert not page.locator("#f-config").is_visible()
    page.select_option("#f-model", "custom")
    page.locator("#f-config").fill(json.dumps(NEW_MODEL))
    page.wait_for_function(
        "yours => document.querySelector('#result .model-line')?.innerText.includes(yours)",
        arg=words["yours"])
    assert "(qwen3)" in text(page, "#result .model-line")
    assert words["serves"] in text(page, "#result-title")
    assert page.locator("#result a.button").count() == 0  # no quote link carries a paste
    assert_accessible(page, f"serve with a pasted config ({locale})")

    page.fill("#f-q", REPO)
    page.wait_for_url(re.compile(r"model=Acme%2FNew-Model-9B"))
    page.wait_for_function(
        "commit => document.querySelector('#hub-commit')?.innerText.includes(commit)",
        arg=words["commit"])
    assert page.locator("#f-model").input_value() == REPO
    assert words["serves"] in text(page, "#result-title")
    assert page.locator("tr[id^=card-]").count() == 8
    assert page.locator("#result a.button").count() >= 1  # a Hub id travels in a quote link
    assert_accessible(page, f"serve with a Hugging Face id ({locale})")
