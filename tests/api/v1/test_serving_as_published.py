"""Serving as buyers ask it (issue 27, points 2 and 6), on page, API and CLI alike: weights in
the checkpoint's published format by default (its config.json's quantization_config), and a
speed floor every user must get (default 10 tokens/s)."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.cli import main as sizer


def cli(monkeypatch: pytest.MonkeyPatch, database_url: str, *args: str) -> dict[str, Any]:
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    out = io.StringIO()
    with redirect_stdout(out):
        assert sizer(["serving", *args, "--format", "json"]) == 0
    document: dict[str, Any] = json.loads(out.getvalue())
    return document


def row(page: str, prefix: str, slug: str) -> str:
    found = re.search(rf'<tr id="{prefix}-{re.escape(slug)}".*?</tr>', page, re.S)
    assert found, slug
    return found.group(0)


def serves(page: str, prefix: str, slug: str) -> bool:
    return ' class="ok' in row(page, prefix, slug)


def fit(document: dict[str, Any], gpu: str) -> dict[str, Any]:
    found: dict[str, Any] = next(f for f in document["fits"] if f["gpu"] == gpu)
    return found


def test_gpt_oss_120b_serves_in_mxfp4_on_one_rtx_pro_6000_by_default(
    client: TestClient, auth: dict[str, str], database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It was sized in bf16 by default, where no single card serves it."""
    api = client.post("/api/v1/serving-estimates", headers=auth,
                      json={"model": "gpt-oss-120b"}).json()
    assert (api["weights"], api["weights_as_published"]) == ("mxfp4", True)
    assert cli(monkeypatch, database_url, "--model", "gpt-oss-120b") == api
    assert fit(api, "rtx-pro-6000")["fits"] and fit(api, "rtx-pro-6000")["max_concurrency"] > 12
    page = client.get("/serve?model=gpt-oss-120b", headers={"Accept-Language": "en"}).text
    assert serves(page, "card", "rtx-pro-6000")
    assert '<span id="weights-format">weights MXFP4, as published</span>' in page
    german = client.get("/serve?model=gpt-oss-120b", headers={"Accept-Language": "de"}).text
    assert '<span id="weights-format">Gewichte MXFP4, wie veröffentlicht</span>' in german
    sixteen = client.post("/api/v1/serving-estimates", headers=auth,
                          json={"model": "gpt-oss-120b", "weights": "bf16"}).json()
    assert not fit(sixteen, "rtx-pro-6000")["fits"] and not sixteen["weights_as_published"]


def test_deepseek_v3_serves_in_fp8_on_the_eight_h200_nvl_server(
    client: TestClient, auth: dict[str, str], database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = client.post("/api/v1/serving-estimates", headers=auth,
                      json={"model": "deepseek-v3", "gpus": 8, "gpu": ["h200-nvl"]}).json()
    assert api["weights"] == "fp8" and api["fits"][0]["fits"]
    assert cli(monkeypatch, database_url, "--model", "deepseek-v3", "--gpus", "8", "--gpu",
               "h200-nvl") == api
    recommended = client.post("/api/v1/recommendations", headers=auth,
                              json={"workload": "serving", "model": "deepseek-v3"}).json()
    assert "srv-8x-h200-nvl" in {r["slug"] for r in recommended["recommendations"]}
    assert serves(client.get("/serve?model=deepseek-v3").text, "system", "srv-8x-h200-nvl")


def test_a_model_whose_config_names_no_format_is_served_in_16_bit(
    client: TestClient, auth: dict[str, str]
) -> None:
    api = client.post("/api/v1/serving-estimates", headers=auth,
                      json={"model": "llama-3.1-8b"}).json()
    assert (api["weights"], api["weights_as_published"]) == ("bf16", True)


def test_a_dgx_spark_does_not_serve_20_gpt_oss_users_below_the_speed_floor(
    client: TestClient, auth: dict[str, str], database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It "served" them at about 4-5 tokens/s each; at the default floor of 10 tokens/s it
    does not, and its most users count only those that each get the floor."""
    job = {"model": "gpt-oss-120b", "concurrency": 20, "gpu": ["dgx-spark"]}
    api = client.post("/api/v1/serving-estimates", headers=auth, json=job).json()
    spark = api["fits"][0]
    assert spark["decode_tokens_per_s"]["per_request"] < 10
    assert not spark["fits"] and spark["max_concurrency"] < 20
    assert cli(monkeypatch, database_url, "--model", "gpt-oss-120b", "--concurrency", "20",
               "--gpu", "dgx-spark") == api
    memory_only = client.post("/api/v1/serving-estimates", headers=auth,
                              json={**job, "min_tokens_per_s": 0}).json()["fits"][0]
    assert memory_only["fits"] and memory_only["max_concurrency"] > 20
    page = client.get("/serve?model=gpt-oss-120b&users=20").text
    assert not serves(page, "card", "dgx-spark") and serves(page, "card", "rtx-pro-6000")
    assert serves(client.get("/serve?model=gpt-oss-120b&users=20&speed=0").text,
                  "card", "dgx-spark")
    refused = client.post("/api/v1/serving-estimates", headers=auth,
                          json={**job, "min_tokens_per_s": -1})
    assert refused.status_code == 422 and "min_tokens_per_s" in refused.text


def test_nemotron_3_super_serves_in_fp8_as_its_modelopt_release(
    client: TestClient, auth: dict[str, str], database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 keeps its FP8 scheme in ModelOpt's
    hf_quant_config.json, not in config.json: it was sized in bf16 (241 GB of weights), where
    no single H200 NVL holds it."""
    slug = "nvidia-nemotron-3-super-120b-a12b"
    api = client.post("/api/v1/serving-estimates", headers=auth, json={"model": slug}).json()
    assert (api["weights"], api["weights_as_published"]) == ("fp8", True)
    assert cli(monkeypatch, database_url, "--model", slug) == api
    assert fit(api, "h200-nvl")["fits"]
    page = client.get(f"/serve?model={slug}", headers={"Accept-Language": "en"}).text
    assert '<span id="weights-format">weights FP8, as published</span>' in page
    assert serves(page, "card", "h200-nvl")
    sixteen = client.post("/api/v1/serving-estimates", headers=auth,
                          json={"model": slug, "weights": "bf16"}).json()
    assert not fit(sixteen, "h200-nvl")["fits"] and not sixteen["weights_as_published"]
