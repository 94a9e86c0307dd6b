"""The 256 KB config.json limit, at its edge, on every surface.

Where it is enforced: ``app/catalog/inline_config.py`` (``MAX_CONFIG_BYTES``), checked by the
page's form parser (``app/web/calculator_form.py``: an inline error), the API's request mapping
(``app/api/v1/bodies.py``: 413, inside the body limit of ``app/api/v1/limits.py``)
and ``sizer estimate --model-config`` (``app/cli/estimate.py``). A config of exactly 256 KB is
read for its content; one byte more is refused for its size.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from app.api.v1.limits import MAX_BODY_BYTES
from app.html.forms import MAX_FORM_BYTES
from tests.cli.runner import sizer
from tests.security.catalogue import (
    LARGEST_CONFIG,
    LLAMA,
    MAX_CONFIG_BYTES,
    OVERSIZE_CONFIG,
    padded_config,
)
from tests.security.conftest import RowCounts, Shop
from tests.security.test_bad_inputs_api import assert_problem, post
from tests.security.test_bad_inputs_page import FORM, HX, _encode, inline_error

SIZE_MESSAGE = "A config.json may be at most 256 KB."
UNSUPPORTED_AT_THE_LIMIT = padded_config(MAX_CONFIG_BYTES).replace('"llama"', '"bert" ', 1)


def test_the_edge_documents_are_what_they_say() -> None:
    assert len(LARGEST_CONFIG.encode("utf-8")) == MAX_CONFIG_BYTES == 256 * 1024
    assert len(OVERSIZE_CONFIG.encode("utf-8")) == MAX_CONFIG_BYTES + 1
    assert len(UNSUPPORTED_AT_THE_LIMIT.encode("utf-8")) == MAX_CONFIG_BYTES
    assert json.loads(LARGEST_CONFIG).items() >= LLAMA.items()


def _calculate(shop: Shop, config: str, *, htmx: bool) -> tuple[int, str]:
    body = _encode({"model": "custom", "config": config, "method": "lora"})
    response = shop.client.post(
        "/", content=body.encode("ascii"),
        headers={"Content-Type": FORM, "Accept-Language": "en", **(HX if htmx else {})},
    )
    return response.status_code, response.text


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
def test_the_page_refuses_one_byte_over_beside_the_field(
    shop: Shop, row_counts: Callable[[], RowCounts], htmx: bool
) -> None:
    before = row_counts()
    status, html = _calculate(shop, OVERSIZE_CONFIG, htmx=htmx)
    assert status == 422
    assert inline_error(html, "config") == SIZE_MESSAGE
    assert row_counts() == before


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
def test_the_page_sizes_a_config_of_exactly_256_kb(shop: Shop, htmx: bool) -> None:
    status, html = _calculate(shop, LARGEST_CONFIG, htmx=htmx)
    assert status == 200
    assert inline_error(html, "config") == ""


def test_the_page_reads_a_256_kb_config_for_its_content(shop: Shop) -> None:
    status, html = _calculate(shop, UNSUPPORTED_AT_THE_LIMIT, htmx=True)
    assert status == 200  # a model type the engine does not know, sized approximately
    assert inline_error(html, "config") == ""
    assert "model type bert is not one we count exactly" in html


def test_a_page_body_over_its_limit_is_refused_beside_the_field(shop: Shop) -> None:
    body = _encode({"model": "custom", "config": "x" * (MAX_FORM_BYTES + 1)}).encode("ascii")
    response = shop.client.post("/", content=body, headers={"Content-Type": FORM, **HX})
    assert response.status_code == 413
    assert inline_error(response.text, "config")


def _job(config: str) -> str:
    return '{"method": "lora", "model_config": ' + config + "}"


@pytest.mark.parametrize("path", ["/api/v1/estimates", "/api/v1/recommendations"])
def test_the_api_answers_one_byte_over_with_413(
    shop: Shop, row_counts: Callable[[], RowCounts], path: str
) -> None:
    before = row_counts()
    problem = assert_problem(post(shop, path, _job(OVERSIZE_CONFIG)), 413)
    assert problem["code"] == "content_too_large"
    assert "model_config" in problem["detail"]
    assert row_counts() == before


def test_the_api_answers_an_oversize_quote_request_with_413(
    shop: Shop, row_counts: Callable[[], RowCounts]
) -> None:
    before = row_counts()
    body = ('{"item_kind": "gpu", "item_slug": "rtx-pro-6000", "contact": {"name": "A", '
            '"company": "B", "email": "a@example.com", "country": "DE"}, "estimate": '
            + _job(OVERSIZE_CONFIG) + "}")
    assert_problem(post(shop, "/api/v1/quote-requests", body), 413)
    assert row_counts() == before


def test_the_api_sizes_a_config_of_exactly_256_kb(shop: Shop) -> None:
    response = post(shop, "/api/v1/estimates", _job(LARGEST_CONFIG))
    assert response.status_code == 200, response.text[:500]
    assert response.json()["model_type"] == "llama"


def test_the_api_reads_a_256_kb_config_for_its_content(shop: Shop) -> None:
    response = post(shop, "/api/v1/estimates", _job(UNSUPPORTED_AT_THE_LIMIT))
    assert response.status_code == 200, response.text[:500]
    assert (response.json()["model_type"], response.json()["fidelity"]) == ("bert",
                                                                            "approximate")


def test_an_api_body_over_its_limit_is_refused_before_it_is_read(shop: Shop) -> None:
    body = _job(padded_config(MAX_BODY_BYTES))
    assert_problem(post(shop, "/api/v1/estimates", body), 413)


def test_sizer_refuses_one_byte_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", f"sqlite:///{tmp_path / 'none.db'}")
    path = tmp_path / "config.json"
    path.write_text(OVERSIZE_CONFIG, encoding="utf-8")
    run = sizer("estimate", "--model-config", str(path), "--method", "lora")
    assert run.code == 2
    assert run.stderr == f"sizer estimate: error: model-config: {path}: larger than 256 KB\n"


def test_sizer_sizes_a_config_of_exactly_256_kb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", f"sqlite:///{tmp_path / 'none.db'}")
    path = tmp_path / "config.json"
    path.write_text(LARGEST_CONFIG, encoding="utf-8")
    run = sizer("estimate", "--offline", "--model-config", str(path), "--method", "lora",
                "--format", "json")
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["model_type"] == "llama"
