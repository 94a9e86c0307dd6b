"""Serve mode names a model every way the fine-tune page does (issue 29, point 6): the same
search, a pasted config.json, a Hugging Face repository id with its revision (through
``app/catalog/hub.py``, against the fake Hub on 127.0.0.1) and the same approximate marking;
and ``POST /api/v1/serving-estimates`` and ``sizer serving`` take the same three, with the page's
numbers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.config import SEED_DIR
from app.db.session import SessionFactory
from app.db.tables import QuoteRequest
from tests.api.v1.conftest import assert_problem
from tests.cli.runner import sizer
from tests.fake_hub import FakeHub, FakeRepo, running_hub

QWEN3_8B: dict[str, Any] = json.loads((SEED_DIR / "models" / "qwen3-8b.json").read_text())
NEW_MODEL: dict[str, Any] = {**QWEN3_8B, "num_hidden_layers": 40}
UNKNOWN: dict[str, Any] = {**QWEN3_8B, "model_type": "brand_new_lm"}
REPO = "Acme/New-Model-9B"
MODELOPT_REPO = "Acme/New-Model-9B-FP8"
HF_QUANT_CONFIG: dict[str, Any] = {
    "producer": {"name": "modelopt", "version": "0.29.0"},
    "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": None,
                     "exclude_modules": ["lm_head"]}}
"""ModelOpt's file beside a config.json that names no quantisation (releases by ModelOpt 0.29
and before)."""
REVISION = "v2"
JOB = {"context": 16384, "concurrency": 4}
FORM = {"context": "16384", "users": "4"}
HX = {"HX-Request": "true"}


@pytest.fixture
def fake_hub() -> Iterator[FakeHub]:
    for hub in running_hub():
        hub.add(FakeRepo(REPO, NEW_MODEL, revisions={REVISION: "b" * 40}))
        hub.add(FakeRepo("acme/unknown-type", UNKNOWN))
        hub.add(FakeRepo(MODELOPT_REPO, NEW_MODEL, hf_quant_config=HF_QUANT_CONFIG))
        yield hub


@pytest.fixture
def client(api: Callable[..., TestClient], fake_hub: FakeHub) -> TestClient:
    client = api(hub_endpoint=fake_hub.endpoint, hub_timeout_s=2)
    client.headers["Accept-Language"] = "en"  # English pages unless a test asks for German
    return client


def _users(page: str) -> dict[str, int]:
    """Each card row's most users, as the page shows them."""
    return {slug: int(users.replace(",", "").replace(".", ""))
            for slug, users in re.findall(
                r'<tr id="card-([a-z0-9-]+)".*?<td class="users"[^>]*>([\d,.]+)</td>', page, re.S)}


def _api_users(document: dict[str, Any]) -> dict[str, int]:
    return {fit["gpu"]: fit["max_concurrency"] for fit in document["fits"]}


def test_a_pasted_config_is_served_as_the_api_serves_it(
    client: TestClient, auth: dict[str, str]
) -> None:
    api = client.post("/api/v1/serving-estimates", headers=auth,
                      json={**JOB, "model_config": NEW_MODEL})
    assert api.status_code == 200, api.text
    page = client.post("/serve", data={"model": "custom", "config": json.dumps(NEW_MODEL),
                                       **FORM}, headers={**HX, "Accept-Language": "en"})
    assert page.status_code == 200, page.text[:2000]
    assert page.headers["HX-Push-Url"] == "false"  # a pasted config fits no address
    assert _users(page.text) == _api_users(api.json())
    assert "<strong>Your model</strong> (qwen3)" in page.text
    assert "Request a quote" not in page.text  # no link can carry the pasted config
    assert 'id="share-link"' not in page.text

    whole = client.post("/serve", data={"model": "custom", "config": json.dumps(NEW_MODEL),
                                        **FORM}, headers={"Accept-Language": "en"})
    assert whole.status_code == 200  # no JavaScript: sized at once, not redirected
    assert '<option value="custom" selected>' in whole.text
    assert "&#34;num_hidden_layers&#34;: 40" in whole.text  # the paste is given back


@pytest.mark.parametrize(("language", "words"), [
    ("en", "Not valid JSON (line 1, column 2)"), ("de", "Kein gültiges JSON (Zeile 1, Spalte 2)")])
def test_a_broken_paste_is_refused_beside_the_config_field(
    client: TestClient, language: str, words: str
) -> None:
    page = client.post("/serve", data={"model": "custom", "config": "{nope", **FORM},
                       headers={**HX, "Accept-Language": language})
    assert page.status_code == 422
    error = re.search(r'<span id="err-config" class="field-error"[^>]*>([^<]+)</span>',
                      page.text)
    assert error is not None and error.group(1).startswith(words), page.text[:1500]


def test_an_unknown_type_is_marked_approximate_in_both_languages(
    client: TestClient, auth: dict[str, str]
) -> None:
    api = client.post("/api/v1/serving-estimates", headers=auth,
                      json={**JOB, "model_config": UNKNOWN}).json()
    assert api["fidelity"] == "approximate"
    for language, words in (("en", "Approximate: the model type brand_new_lm is not one we "
                                   "count exactly"),
                            ("de", "Näherung: Den Modelltyp brand_new_lm zählen wir nicht")):
        page = client.post("/serve", data={"model": "custom", "config": json.dumps(UNKNOWN),
                                           **FORM}, headers={**HX, "Accept-Language": language})
        assert page.status_code == 200
        note = re.search(r'<p class="note warn" id="approximate">([^<]+)</p>', page.text)
        assert note is not None and note.group(1).startswith(words), language
        assert _users(page.text) == _api_users(api)
    exact = client.post("/serve", data={"model": "custom", "config": json.dumps(QWEN3_8B),
                                        **FORM}, headers=HX)
    assert 'id="approximate"' not in exact.text


def test_a_repository_id_with_a_revision_is_served_from_its_config(
    client: TestClient, auth: dict[str, str], fake_hub: FakeHub
) -> None:
    model = f"{REPO}@{REVISION}"
    page = client.get("/serve", params={"model": model, **FORM},
                      headers={**HX, "Accept-Language": "en"})
    assert page.status_code == 200, page.text[:2000]
    assert f"config.json of {REPO} at commit {'b' * 12}" in page.text
    by_config = client.post("/api/v1/serving-estimates", headers=auth,
                            json={**JOB, "model_config": NEW_MODEL}).json()
    assert _users(page.text) == _api_users(by_config)
    by_id = client.post("/api/v1/serving-estimates", headers=auth, json={**JOB, "model": model})
    assert by_id.status_code == 200, by_id.text
    assert by_id.json() == by_config
    assert any(path.endswith(f"/resolve/{'b' * 40}/config.json") for path in fake_hub.paths())

    full = client.get("/serve", params={"model": model, **FORM}).text
    assert f'<option value="{model}" selected>{model} (Hugging Face)</option>' in full
    assert "/quote?item=gpu%3A" in full and "model=Acme%2FNew-Model-9B%40v2" in full


def test_a_repository_in_the_catalog_is_the_catalog_model(
    client: TestClient, fake_hub: FakeHub
) -> None:
    by_id = client.get("/serve", params={"model": "Qwen/Qwen3-8B", **FORM}, headers=HX)
    by_slug = client.get("/serve", params={"model": "qwen3-8b", **FORM}, headers=HX)
    assert by_id.status_code == 200
    assert _users(by_id.text) == _users(by_slug.text)
    assert fake_hub.paths() == []


@pytest.mark.parametrize(("language", "words"), [
    ("en", "Hugging Face has no public model nobody/nothing"),
    ("de", "Hugging Face hat kein öffentliches Modell nobody/nothing")])
def test_a_missing_repository_is_said_beside_the_model(
    client: TestClient, auth: dict[str, str], language: str, words: str
) -> None:
    page = client.get("/serve", params={"model": "nobody/nothing"},
                      headers={**HX, "Accept-Language": language})
    assert page.status_code == 404
    error = re.search(r'<span id="err-model" class="field-error"[^>]*>([^<]+)</span>', page.text)
    assert error is not None and error.group(1).startswith(words)
    api = assert_problem(client.post("/api/v1/serving-estimates", headers=auth,
                                     json={**JOB, "model": "nobody/nothing"}), 404)
    assert api["detail"].startswith("model: the Hugging Face Hub has no public model")


def test_the_serve_search_finds_catalog_models_and_offers_a_repository(
    client: TestClient
) -> None:
    found = client.get("/serve/models", params={"q": "qwen3 8b"}, headers=HX)
    assert found.status_code == 200
    assert re.search(r'<option value="qwen3-8b" selected>', found.text)
    assert found.headers["HX-Trigger-After-Settle"] == "models-filtered"
    assert 'hx-post="/serve"' not in found.text  # the model list only
    repo = client.get("/serve/models", params={"q": REPO}, headers=HX)
    assert f'<option value="{REPO}" selected>' in repo.text
    nothing = client.get("/serve/models", params={"q": "zzzz qqqq"}, headers=HX)
    assert "No model matches" in nothing.text
    assert "HX-Trigger-After-Settle" not in nothing.headers
    page = client.get("/serve").text
    assert 'hx-get="/serve/models"' in page and 'id="f-config"' in page


def test_a_serving_quote_for_a_repository_is_sized_from_its_config(
    client: TestClient, seeded: SessionFactory
) -> None:
    form = client.get("/quote", params={"item": "gpu:rtx-pro-6000", "workload": "serving",
                                        "model": REPO, **FORM})
    assert form.status_code == 200, form.text[:800]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.text))
    assert fields["model"] == REPO and fields["workload"] == "serving"
    contact = {"name": "Ada Lovelace", "company": "Analytical Engines GmbH",
               "email": "ada@example.com", "country": "DE", "quantity": "1"}
    stored = client.post("/quote", data={**fields, **contact})
    assert stored.status_code == 303, stored.text[:800]
    with seeded() as session:
        row = session.scalars(select(QuoteRequest)).one()
    assert row.workload == "serving"
    assert row.sizing["calculator"]["model"] == REPO
    assert row.sizing["result"]["params"]["total"] > QWEN3_8B["num_hidden_layers"]
    # the customer's page and the desk name the repository asked for, not the config's type
    # ("qwen3": a fresh walk of issue 30 found it so; a Hub config.json names no repository)
    assert row.sizing["model_name"] == REPO
    page = client.get(stored.headers["location"]).text
    inputs = re.search(r'id="sizing-inputs">([^<]*)', page)
    assert inputs and inputs.group(1).startswith(f"{REPO} · ")


def test_the_cli_serves_a_repository_id_as_the_api(
    client: TestClient, auth: dict[str, str], fake_hub: FakeHub, database_url: str,
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    monkeypatch.setenv("SIZER_HUB_ENDPOINT", fake_hub.endpoint)
    argv = ["serving", "--model", REPO, "--context", "16384", "--concurrency", "4"]
    run = sizer(*argv, "--format", "json")
    assert run.code == 0, run.stderr
    api = client.post("/api/v1/serving-estimates", headers=auth,
                      json={**JOB, "model": REPO}).json()
    assert json.loads(run.stdout) == api
    assert sizer(*argv).stdout.startswith(f"{REPO}: config.json at commit ")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(NEW_MODEL))
    pasted = sizer("serving", "--model-config", str(path), "--context", "16384",
                   "--concurrency", "4", "--format", "json")
    assert json.loads(pasted.stdout) == api
    missing = sizer("serving", "--model", "nobody/nothing")
    assert missing.code == 2 and missing.stdout == ""
    assert missing.stderr.startswith("sizer serving: error: model: the Hugging Face Hub has no "
                                     "public model nobody/nothing")


def test_a_modelopt_release_is_served_in_the_format_of_its_hf_quant_config(
    client: TestClient, auth: dict[str, str], fake_hub: FakeHub, database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its config.json names no quantisation; vLLM reads hf_quant_config.json instead, and
    so do page, API and CLI: FP8 as published, not 16 bits."""
    api = client.post("/api/v1/serving-estimates", headers=auth,
                      json={**JOB, "model": MODELOPT_REPO}).json()
    assert (api["weights"], api["weights_as_published"]) == ("fp8", True)
    assert any(path.endswith("/hf_quant_config.json") for path in fake_hub.paths())
    sixteen = client.post("/api/v1/serving-estimates", headers=auth,
                          json={**JOB, "model": REPO}).json()
    assert sixteen["weights"] == "bf16"
    page = client.get("/serve", params={"model": MODELOPT_REPO, **FORM},
                      headers={**HX, "Accept-Language": "en"}).text
    assert '<span id="weights-format">weights FP8, as published</span>' in page
    assert _users(page) == _api_users(api)
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    monkeypatch.setenv("SIZER_HUB_ENDPOINT", fake_hub.endpoint)
    run = sizer("serving", "--model", MODELOPT_REPO, "--context", "16384", "--concurrency", "4",
                "--format", "json")
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout) == api
