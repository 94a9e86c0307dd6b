"""LoRA Llama 3.1 8B at batch 4 and 2,048 tokens, on page, API and CLI alike: the same
recommendation (the cheapest priced offer that holds the job, never the H200 NVL), the same
per-card setups (the RTX PRO 5000 48GB with gradient checkpointing), an indicative seed price
marked as such, and the JSON document of ``sizer estimate --format json`` with ``recommendation``
and ``fits[i].setup``."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from decimal import Decimal
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.cli import main as sizer
from app.estimates import advice

BODY = {"model": "llama-3.1-8b", "method": "lora", "batch_size": 4, "seq_len": 2048}
ARGS = ("--model", "llama-3.1-8b", "--method", "lora", "--batch-size", "4", "--seq-len", "2048")
PAGE = "/?model=llama-3.1-8b&method=lora&batch=4&seq=2048"


def cli(monkeypatch: pytest.MonkeyPatch, database_url: str) -> dict[str, Any]:
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    out = io.StringIO()
    with redirect_stdout(out):
        assert sizer(["estimate", *ARGS, "--format", "json"]) == 0
    document: dict[str, Any] = json.loads(out.getvalue())
    return document


def test_page_api_and_cli_recommend_alike_with_the_same_setups(
    client: TestClient, auth: dict[str, str], database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = client.post("/api/v1/estimates", headers=auth, json=BODY).json()
    document = cli(monkeypatch, database_url)
    rec = api["recommendation"]
    assert document["recommendation"] == rec
    assert rec["slug"] != "h200-nvl"
    # the cheapest priced offer that fits, as set or with its setup (app/estimates/advice.py)
    gpus = {g["slug"]: g for g in client.get("/api/v1/gpus", headers=auth).json()["items"]}
    systems = {s["slug"]: s for s in client.get("/api/v1/systems",
                                                headers=auth).json()["items"]}
    working = [(Decimal(gpus[f["gpu"]]["price_eur_net"]), "gpu", f["gpu"])
               for f in api["fits"] if (f["fits"] or f["setup"]) and f["gpu"] in gpus
               and gpus[f["gpu"]]["price_eur_net"] is not None]
    listed = client.post("/api/v1/recommendations", headers=auth, json=BODY).json()
    working += [(Decimal(r["price_eur_net"]), "system", r["slug"])
                for r in listed["recommendations"]
                if r["kind"] == "system" and r["price_eur_net"] is not None]
    cheapest = min(working)
    assert (Decimal(rec["price"]), rec["kind"], rec["slug"]) == cheapest
    assert rec["price_indicative"] is (gpus.get(rec["slug"]) or systems[rec["slug"]])[
        "price_indicative"] is True
    assert advice.money(cheapest[0]) == rec["price"]
    # per card: the setup the 48 GB card fits with, the same in both documents
    for doc in (api, document):
        card = next(f for f in doc["fits"] if f["gpu"] == "rtx-pro-5000-48gb")
        assert not card["fits"]
        assert card["setup"]["changes"] == {"gradient_checkpointing": True}
        assert card["setup"]["total_bytes"] <= card["usable_bytes"]
        assert card["setup"]["training"]["hours"] > 0
    assert [f["setup"] for f in api["fits"]] == [f["setup"] for f in document["fits"]]
    # the page names the same offer, its indicative price, and the 48 GB card's setup
    page = client.get(PAGE, headers={"Accept-Language": "en"}).text
    title = re.search(r'<h2 id="result-title"[^>]*>(.*?)</h2>', page, re.S)
    assert title and "DGX Spark" in title.group(1)
    line = re.search(r'<p id="recommendation".*?</p>', page, re.S)
    assert line and "indicative" in line.group(0) and "3,445.33" in line.group(0)
    setup = re.search(r'<p class="setup" id="setup-rtx-pro-5000-48gb">(.*?)</p>', page, re.S)
    assert setup and "gradient checkpointing" in setup.group(1)


def test_the_cli_table_names_the_recommendation_and_its_indicative_price(
    client: TestClient, database_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """(``client`` seeds the database the command reads.)"""
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    out = io.StringIO()
    with redirect_stdout(out):
        assert sizer(["estimate", *ARGS]) == 0
    table = out.getvalue()
    assert re.search(r"recommendation: gpu dgx-spark, 3445\.33 EUR net \(indicative list "
                     r"price\), [\d.]+ h, as set", table)
    assert re.search(r"rtx-pro-5000-48gb .*\n    fits with gradient_checkpointing True: "
                     r"[\d.]+ GB", table)


def test_qwen3_8b_qlora_at_batch_4_needs_under_40_gb_by_default_on_every_surface(
    client: TestClient, auth: dict[str, str], database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """QLoRA turns gradient checkpointing on by default (PEFT's
    prepare_model_for_kbit_training), on the API, the CLI and the page alike."""
    body = {"model": "qwen3-8b", "method": "qlora", "batch_size": 4}
    api = client.post("/api/v1/estimates", headers=auth, json=body).json()
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    out = io.StringIO()
    with redirect_stdout(out):
        assert sizer(["estimate", "--model", "qwen3-8b", "--method", "qlora", "--batch-size",
                      "4", "--format", "json"]) == 0
    document = json.loads(out.getvalue())
    assert api["per_gpu_bytes"]["total"] == document["per_gpu_bytes"]["total"] < 40e9
    assert api["checkpointing"] == {"setting": "auto", "enabled": True, "reason": "qlora"}
    page = client.get("/?model=qwen3-8b&method=qlora&batch=4",
                      headers={"Accept-Language": "en"}).text
    total = re.search(r"Needs ([\d.]+)\u00a0GB per GPU", page)
    assert total and float(total.group(1)) < 40
