"""An unknown model type on every surface (issue 16, point 2): the page, the API and the CLI
give the same approximate estimate and say so; a config without the standard decoder fields is
refused by each, naming the field (inline on the page, 422 on the API, exit 2 on the CLI)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.config import SEED_DIR
from tests.api.v1.conftest import assert_problem
from tests.cli.runner import sizer

UNKNOWN = {**json.loads((SEED_DIR / "models" / "qwen3-8b.json").read_text()),
           "model_type": "brand_new_lm"}
WITHOUT_VOCAB = {k: v for k, v in UNKNOWN.items() if k != "vocab_size"}
JOB = {"method": "lora", "batch_size": 2, "seq_len": 1024}


def _page(client: TestClient, config: dict[str, Any], language: str) -> tuple[int, str]:
    response = client.post(
        "/", data={"model": "custom", "config": json.dumps(config), "method": "lora",
                   "batch": "2", "seq": "1024"},
        headers={"Accept-Language": language, "HX-Request": "true"})
    return response.status_code, response.text


def _cli(config: dict[str, Any], tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    run = sizer("estimate", "--model-config", str(path), "--method", "lora",
                "--batch-size", "2", "--seq-len", "1024", *extra)
    return run.code, run.stdout, run.stderr


def test_page_api_and_cli_give_the_same_approximate_estimate(
    client: TestClient, auth: dict[str, str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, database_url: str,
) -> None:
    api = client.post("/api/v1/estimates", headers=auth,
                      json={**JOB, "model_config": UNKNOWN})
    assert api.status_code == 200, api.text
    document = api.json()
    assert document["fidelity"] == "approximate"
    assert document["model_type"] == "brand_new_lm"
    assert {"hidden_size", "num_hidden_layers", "vocab_size"} <= set(
        document["approximated_from"])
    assert document["assumptions"][0].startswith("approximate: model type 'brand_new_lm'")

    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    code, out, _ = _cli(UNKNOWN, tmp_path, "--format", "json")
    assert code == 0
    assert json.loads(out) == document

    code, table, _ = _cli(UNKNOWN, tmp_path)
    assert code == 0
    assert "(approximate)" in table.splitlines()[0]
    assert "approximate: model type 'brand_new_lm'" in table

    status, page = _page(client, UNKNOWN, "en")
    assert status == 200
    assert 'id="approximate"' in page
    assert "model type brand_new_lm is not one we count exactly" in page
    total = f"{document['per_gpu_bytes']['total'] / 1e9:.1f}\u00a0GB"
    assert f'id="fig-total">{total}<' in page

    recommendations = client.post("/api/v1/recommendations", headers=auth,
                                  json={**JOB, "model_config": UNKNOWN}).json()
    assert recommendations["fidelity"] == "approximate"


def test_a_known_model_is_exact_on_the_api(client: TestClient, auth: dict[str, str]) -> None:
    document = client.post("/api/v1/estimates", headers=auth,
                           json={**JOB, "model": "qwen3-8b"}).json()
    assert (document["fidelity"], document["approximated_from"]) == ("exact", [])


def test_the_german_page_says_approximate_in_german(client: TestClient) -> None:
    status, page = _page(client, UNKNOWN, "de")
    assert status == 200
    note = re.search(r'<p class="note warn" id="approximate">([^<]+)</p>', page)
    assert note is not None
    assert note.group(1).startswith("Näherung: Den Modelltyp brand_new_lm zählen wir nicht")
    assert "not one we count" not in page


def test_a_config_without_a_standard_field_is_refused_naming_it_everywhere(
    client: TestClient, auth: dict[str, str], tmp_path: Path,
) -> None:
    api = client.post("/api/v1/estimates", headers=auth,
                      json={**JOB, "model_config": WITHOUT_VOCAB})
    body = assert_problem(api, 422)
    assert body["errors"][0]["location"] == "body.model_config.vocab_size"
    assert "approximate estimate needs the standard decoder fields" in (
        body["errors"][0]["reason"])

    code, out, err = _cli(WITHOUT_VOCAB, tmp_path)
    assert code == 2 and out == ""
    assert "vocab_size" in err and "standard decoder fields" in err

    for language, words in (("en", "vocab_size is missing from the config.json"),
                            ("de", "vocab_size fehlt in der config.json")):
        status, page = _page(client, WITHOUT_VOCAB, language)
        assert status == 422
        error = re.search(r'<span id="err-config" class="field-error"[^>]*>([^<]+)</span>', page)
        assert error is not None and error.group(1).startswith(words), language


def test_a_model_type_with_markup_is_echoed_escaped(client: TestClient) -> None:
    status, page = _page(client, {**UNKNOWN, "model_type": "<script>alert(1)</script>"}, "en")
    assert status == 200
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
