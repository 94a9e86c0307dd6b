"""POST /serving-estimates and /recommendations with "workload": "serving": the serving
engine's document, the same as ``sizer serving --format json``, and problem+json naming the
field for bad input."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.catalog.seed import load_seed_catalog
from app.cli import main as sizer
from app.engine import ENGINE_VERSION
from tests.api.v1.conftest import assert_problem

SEED = load_seed_catalog()


def _post(client: TestClient, auth: dict[str, str], body: dict[str, Any]) -> Any:
    return client.post("/api/v1/serving-estimates", headers=auth, json=body)


def test_a_serving_estimate_is_the_engine_s_document(client: TestClient,
                                                     auth: dict[str, str]) -> None:
    doc = _post(client, auth, {"model": "llama-3.1-8b", "context": 16384,
                               "concurrency": 8}).json()
    assert doc["engine_version"] == ENGINE_VERSION
    assert doc["params"] == {"total": 8_030_261_248, "active": 8_030_261_248}
    assert doc["kv_cache_bytes_per_token"] == 131_072
    assert {fit["gpu"] for fit in doc["fits"]} == {
        gpu.slug for gpu in SEED.gpus if not gpu.comparison_only}  # comparison cards: named


@pytest.mark.parametrize("body", [
    {"model": "llama-3.1-8b", "context": 32768, "concurrency": 16},
    {"model": "qwen3-30b-a3b", "weights": "fp8", "kv_cache": "fp8", "gpus": 2},
    {"model": "gemma-2-9b", "weights": "awq", "runtime": "sglang", "gpu": ["rtx-pro-4500"]},
    {"model": "llama-3.2-3b", "weights": "gguf-q4_k_m", "runtime": "llama.cpp",
     "concurrency": 4},
    {"model": "qwen3-32b", "weights": "nvfp4", "gpu_memory_utilization": 0.8,
     "max_num_batched_tokens": 4096},
])
def test_the_api_and_the_cli_give_the_same_document(
        client: TestClient, auth: dict[str, str], body: dict[str, Any], database_url: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)  # the CLI reads the same catalog
    api = _post(client, auth, body)
    assert api.status_code == 200, api.text
    argv = ["serving", "--model", body["model"], "--format", "json"]
    for field, value in body.items():
        if field == "model":
            continue
        for item in value if isinstance(value, list) else [value]:
            argv += [f"--{field.replace('_', '-')}", str(item)]
    out = io.StringIO()
    with redirect_stdout(out):
        assert sizer(argv) == 0
    assert json.loads(out.getvalue()) == api.json()


def test_a_custom_card_by_its_memory(client: TestClient, auth: dict[str, str]) -> None:
    doc = _post(client, auth, {"model": "llama-3.1-8b", "gpu_memory_bytes": 24 * 1024**3}).json()
    assert [(fit["gpu"], fit["usable_bytes"]) for fit in doc["fits"]] == [
        ("custom", 24 * 1024**3)]


@pytest.mark.parametrize(("body", "location"), [
    ({"model": "llama-3.1-8b", "context": 0}, "body.context"),
    ({"model": "llama-3.1-8b", "weights": "int3"}, "body.weights"),
    ({"model": "llama-3.1-8b", "gpu_memory_utilization": 1.5}, "body.gpu_memory_utilization"),
    ({"model": "llama-3.1-8b", "concurrency": True}, "body.concurrency"),
    ({"model": "llama-3.1-8b", "runtime": "llama.cpp", "weights": "awq"}, "body.weights"),
    ({"model": "llama-3.1-8b", "method": "lora"}, "body.method"),
])
def test_bad_input_is_a_problem_naming_the_field(client: TestClient, auth: dict[str, str],
                                                 body: dict[str, Any], location: str) -> None:
    problem = assert_problem(_post(client, auth, body), 422)
    assert location in [entry["location"] for entry in problem["errors"]], problem


def test_an_unknown_model_is_404(client: TestClient, auth: dict[str, str]) -> None:
    assert_problem(_post(client, auth, {"model": "no-such-model"}), 404)


def test_serving_recommendations_fit_and_are_ranked(client: TestClient,
                                                    auth: dict[str, str]) -> None:
    response = client.post("/api/v1/recommendations", headers=auth, json={
        "workload": "serving", "model": "llama-3.1-8b", "context": 32768, "concurrency": 32,
    })
    assert response.status_code == 200, response.text
    doc = response.json()
    assert doc["workload"] == "serving" and doc["engine_version"] == ENGINE_VERSION
    recs = doc["recommendations"]
    assert recs and all(r["max_concurrency"] >= 32 for r in recs)
    keys = [(r["cards"], r["price_eur_net"] is None, float(r["price_eur_net"] or 0),
             -r["max_concurrency"]) for r in recs]
    assert keys == sorted(keys)
    assert any(r["kind"] == "system" for r in recs)
    assert all(r["quote_url"] and "model=llama-3.1-8b" in r["quote_url"] for r in recs)
    # the seed's list prices are marked indicative, the rest are on request
    small = client.post("/api/v1/recommendations", headers=auth, json={
        "workload": "serving", "model": "llama-3.1-8b", "context": 8192, "concurrency": 4,
    }).json()["recommendations"]
    indicative = {r["slug"] for r in small if r["price_indicative"]}
    assert indicative and indicative <= {"rtx-pro-6000", "dgx-spark", "dgx-spark-1x"}
    assert all(r["price_eur_net"] is not None for r in small if r["price_indicative"])


def test_training_recommendations_are_unchanged_without_a_workload(
        client: TestClient, auth: dict[str, str]) -> None:
    doc = client.post("/api/v1/recommendations", headers=auth, json={
        "model": "qwen3-8b", "method": "lora"}).json()
    assert "max_batch_size" in doc["recommendations"][0]
    serving = client.post("/api/v1/recommendations", headers=auth, json={
        "workload": "serving", "model": "qwen3-8b", "method": "lora"})
    assert_problem(serving, 422)
