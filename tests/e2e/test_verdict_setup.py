"""The verdict with a setup on a phone (issue 27, point 5): a job no card or system holds as
set leads with the offer that holds it with a standard setting, says what it changes and
shows each row's setup, in English and German, with nothing wider than the phone."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}
JOB = "/?model=llama-3.1-70b&method=full&optimizer=adamw&ckpt=0"
"""Full fine-tuning of 70B with 32-bit AdamW and checkpointing off: nothing holds it as set."""


@pytest.mark.parametrize(("lang", "fits", "with_word"), [
    ("en", "with a standard setting", "optimizer states in CPU memory"),
    ("de", "mit einer Standardeinstellung", "Optimizer-Zuständen im CPU-Speicher"),
])
def test_the_verdict_leads_with_the_setup_on_a_phone(browser: Any, base_url: str, lang: str,
                                                     fits: str, with_word: str) -> None:
    context = browser.new_context(viewport=PHONE, locale=lang,
                                  extra_http_headers={"Accept-Language": lang})
    page = context.new_page()
    page.goto(base_url + JOB)
    assert fits in page.inner_text("#result-title")
    line = page.locator("#recommendation")
    assert line.is_visible()
    assert with_word in line.inner_text()
    assert page.locator("p.setup").count() >= 1
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    context.close()
