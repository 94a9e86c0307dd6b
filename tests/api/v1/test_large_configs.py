"""A quantised checkpoint's config.json of several MB on the pages and the API (issue 29,
point 3): NVIDIA's MiniMax-M3-NVFP4 export (3,087,083 bytes, 2.41 MB of it the ModelOpt list of
quantised layers) was refused by the page's 1 MB form limit and the API's 300 KB body limit
before the reader could summarise it. Both take a config.json up to
``inline_config.MAX_POSTED_BYTES`` (4 MB) now, the pasted one read as the Hub's and the CLI's
are; beyond it the page says so beside the field (413 past the form limit) and the API answers
413."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient

from app.api.v1.limits import MAX_BODY_BYTES
from app.catalog import inline_config
from app.html.forms import MAX_FORM_BYTES
from tests.api.v1.conftest import assert_problem

RAW = (Path(__file__).resolve().parents[2] / "fixtures" / "hf_configs"
       / "minimax-m3-nvfp4.json").read_text(encoding="utf-8")
CONFIG: dict[str, Any] = json.loads(RAW)
FORM = "application/x-www-form-urlencoded"
MB_MESSAGE = {"en": "A config.json may be at most 4 MB (a quantised checkpoint's list of layers "
                    "included).",
              "de": "Eine config.json darf höchstens 4 MB groß sein (samt der Schichtliste "
                    "eines quantisierten Checkpoints)."}


def _bigger(size: int) -> str:
    """The real config.json with its list of quantised layers grown until the document takes
    ``size`` bytes or a little more (the shape of a model with more layers)."""
    layers = CONFIG["quantization_config"]["quantized_layers"]
    name, entry = next(iter(layers.items()))
    grown = dict(layers)
    text = RAW
    index = 0
    while len(text.encode()) < size:
        for _ in range(2000):
            grown[f"{name}.copy{index}"] = entry
            index += 1
        text = json.dumps({**CONFIG, "quantization_config": {
            **CONFIG["quantization_config"], "quantized_layers": grown}}, indent=2)
    return text


def _error(page: str, field: str) -> str:
    found = re.search(rf'<span id="err-{field}" class="field-error"[^>]*>([^<]*)</span>', page)
    assert found is not None, page[:1000]
    return found.group(1).replace("&#39;", "'")


def test_the_real_config_fits_the_limits_as_a_paste_and_as_a_body() -> None:
    assert inline_config.MAX_CONFIG_BYTES < len(RAW.encode()) < inline_config.MAX_POSTED_BYTES
    assert len(urlencode({"config": RAW})) < MAX_FORM_BYTES
    # any config.json within the paste limit fits the form, however it percent-encodes
    assert MAX_FORM_BYTES > 3 * inline_config.MAX_POSTED_BYTES
    assert MAX_BODY_BYTES > inline_config.MAX_POSTED_BYTES


@pytest.mark.parametrize(("page", "form", "endpoint"), [
    ("/", {"method": "lora"}, ("/api/v1/estimates", {"method": "lora"})),
    ("/serve", {"users": "4"}, ("/api/v1/serving-estimates", {"concurrency": 4})),
])
def test_the_pages_and_the_api_size_the_3_mb_config(
    client: TestClient, auth: dict[str, str], page: str, form: dict[str, str],
    endpoint: tuple[str, dict[str, Any]],
) -> None:
    answer = client.post(page, data={"model": "custom", "config": RAW, **form},
                         headers={"HX-Request": "true", "Accept-Language": "en"})
    assert answer.status_code == 200, answer.text[:1500]
    assert _error(answer.text, "config") == ""
    assert "<strong>Your model</strong> (minimax_m3_vl)" in answer.text
    path, job = endpoint
    body = json.dumps({**job, "model_config": CONFIG})
    assert len(body) > 2 * 1024 * 1024
    document = client.post(path, content=body,
                           headers={**auth, "Content-Type": "application/json"})
    assert document.status_code == 200, document.text[:1500]
    total = document.json()["params"]["total"]
    assert f"{total:,}" in answer.text  # the page's model line: the API's count


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("page", ["/", "/serve"])
def test_a_paste_over_4_mb_is_refused_beside_the_field(
    client: TestClient, page: str, language: str
) -> None:
    text = _bigger(inline_config.MAX_POSTED_BYTES + 1)
    answer = client.post(page, data={"model": "custom", "config": text},
                         headers={"HX-Request": "true", "Accept-Language": language})
    assert answer.status_code == 422
    assert _error(answer.text, "config") == MB_MESSAGE[language]


@pytest.mark.parametrize("page", ["/", "/serve"])
def test_a_form_over_its_limit_is_413_beside_the_field(client: TestClient, page: str) -> None:
    body = urlencode({"model": "custom", "config": "{" * (MAX_FORM_BYTES // 3 + 1)})
    assert len(body) > MAX_FORM_BYTES
    answer = client.post(page, content=body.encode("ascii"),
                         headers={"Content-Type": FORM, "HX-Request": "true",
                                  "Accept-Language": "en"})
    assert answer.status_code == 413
    assert _error(answer.text, "config") == MB_MESSAGE["en"]


def test_an_api_body_over_its_limit_is_413(client: TestClient, auth: dict[str, str]) -> None:
    text = _bigger(MAX_BODY_BYTES + 1)
    body = '{"method": "lora", "model_config": ' + text + "}"
    problem = assert_problem(client.post("/api/v1/estimates", content=body,
                                         headers={**auth, "Content-Type": "application/json"}),
                             413)
    assert problem["detail"] == f"The body may be at most {MAX_BODY_BYTES // 1024} KB."


def test_the_api_still_refuses_what_summarising_cannot_shrink(
    client: TestClient, auth: dict[str, str]
) -> None:
    """A large section the engine does not summarise (not the quantisation list) keeps the
    256 KB bound on what is kept."""
    config = {**CONFIG, "notes": "x" * inline_config.MAX_CONFIG_BYTES}
    problem = assert_problem(client.post("/api/v1/serving-estimates", headers=auth,
                                         json={"model_config": config}), 413)
    assert "256 KB" in problem["detail"]
