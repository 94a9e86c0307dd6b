"""A result's quote links, the form's part encoded once (``quote_urls``, both modes), are the
addresses the whole form urlencoded with the item gives for each card and system."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from app.web import calculator_form, serving_form, serving_view
from app.web.calculator_form import CalculatorInput
from app.web.result_view import quote_urls
from app.web.serving_form import ServeInput


def quote_url(calc: CalculatorInput, item: str) -> str:
    """The address of one item's quote form, the fine-tune form urlencoded whole."""
    return "/quote?" + urlencode({"item": item, **calc.query()})


def serve_quote_url(calc: ServeInput, item: str) -> str:
    """The same for Serve: every input and ``workload=serving``; none for a pasted config."""
    if calc.is_custom:
        return ""
    return "/quote?" + urlencode({"item": item, "workload": "serving", **calc.quote_query()})

FORMS = [
    {"model": "llama-3.1-8b", "method": "lora"},
    {"model": "llama-3.3-70b", "method": "full", "seq": "4096", "batch": "4", "gpus": "4"},
    {"model": "qwen3-30b-a3b", "method": "qlora", "ckpt": "on", "gpu": "h200-nvl"},
    {"model": "llama-3.1-8b", "method": "full", "optimizer": "adamw_8bit", "attention": "eager"},
]
ITEMS = ["gpu:h200-nvl", "system:dgx-spark", "gpu:rtx-pro-6000 blackwell&x=1"]


@pytest.mark.parametrize("data", FORMS)
def test_quote_urls_are_quote_url(data: dict[str, str]) -> None:
    calc, _ = calculator_form.parse(data)
    url = quote_urls(calc)
    for item in ITEMS:
        assert url(item) == quote_url(calc, item)
    assert url(ITEMS[0]).startswith("/quote?item=gpu%3Ah200-nvl&model=")


@pytest.mark.parametrize("data", [
    {"model": "llama-3.1-8b", "users": "20"},
    {"model": "llama-3.3-70b", "weights": "awq", "kv": "fp8", "context": "32768", "gpus": "2",
     "runtime": "sglang", "gpu": "h200-nvl", "speed": "50"},
    {"model": "meta-llama/Llama-3.1-8B@main"},
    {"model": "custom", "config": "{}"},
])
def test_serve_quote_urls_are_quote_url(data: dict[str, str]) -> None:
    calc, _ = serving_form.parse(data)
    url = serving_view.quote_urls(calc)
    for item in ITEMS:
        assert url(item) == serve_quote_url(calc, item)
