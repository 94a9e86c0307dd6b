"""POST /estimates and /recommendations: the engine's numbers, engine_version, bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.api.v1.limits import MAX_BODY_BYTES
from app.catalog.seed import load_seed_catalog
from app.engine import ENGINE_VERSION
from app.estimates.recommendations import rank_key
from tests.api.v1.conftest import assert_problem

SEED = load_seed_catalog()


def test_an_estimate_is_the_engine_s_document(client: TestClient, auth: dict[str, str]) -> None:
    doc = client.post("/api/v1/estimates", headers=auth, json={
        "model": "llama-3.1-8b", "method": "lora", "batch_size": 4, "seq_len": 1024,
    }).json()
    assert doc["engine_version"] == ENGINE_VERSION
    assert doc["params"]["total"] == 8030261248
    assert {fit["gpu"] for fit in doc["fits"]} == {
        gpu.slug for gpu in SEED.gpus if not gpu.comparison_only}  # comparison cards: named


def test_an_inline_config_and_a_card_subset(client: TestClient, auth: dict[str, str]) -> None:
    config = dict(SEED.model("qwen3-8b").config)
    doc = client.post("/api/v1/estimates", headers=auth, json={
        "model_config": config, "method": "qlora", "gpu": ["rtx-pro-4500"],
        "lora_targets": "q_proj,v_proj", "chunked_loss": True,
    }).json()
    assert doc["model_type"] == "qwen3"
    assert [fit["gpu"] for fit in doc["fits"]] == ["rtx-pro-4500"]


def test_recommendations_fit_are_ranked_and_carry_quote_urls(
    client: TestClient, auth: dict[str, str]
) -> None:
    body = {"model": "qwen3-8b", "method": "lora", "batch_size": 2, "seq_len": 1024}
    doc = client.post("/api/v1/recommendations", headers=auth, json=body).json()
    assert doc["engine_version"] == ENGINE_VERSION
    recs = doc["recommendations"]
    assert recs and [r["rank"] for r in recs] == list(range(1, len(recs) + 1))
    assert all(r["free_bytes_per_gpu"] >= 0 for r in recs)
    assert all(r["max_batch_size"] >= 2 for r in recs if r["setup"] is None)
    # ranked as the estimate's recommendation: priced first, cheapest first (issue 27)
    prices = [r["price_eur_net"] for r in recs]
    priced = [float(p) for p in prices if p is not None]
    assert priced and priced == sorted(priced)
    assert prices == [*(p for p in prices if p is not None), *(p for p in prices if p is None)]
    assert {r["kind"] for r in recs} == {"gpu", "system"}
    first = recs[0]
    assert first["quote_url"].startswith("http://127.0.0.1:8000/quote?item=")  # the default
    assert "model=qwen3-8b" in first["quote_url"]
    estimate = client.post("/api/v1/estimates", headers=auth, json=body).json()
    rec = estimate["recommendation"]
    assert (first["kind"], first["slug"], first["setup"]) == (rec["kind"], rec["slug"],
                                                               rec["setup"])
    assert (first["price_eur_net"], first["price_indicative"]) == (rec["price"],
                                                                    rec["price_indicative"])


def test_recommendations_list_offers_that_fit_with_a_setup(
    client: TestClient, auth: dict[str, str]
) -> None:
    """LoRA Llama 3.1 8B, batch 4 at 2,048 tokens: the 48 GB card fits only with gradient
    checkpointing; the list names it with that setup, as the estimate's fits[i].setup does."""
    body = {"model": "llama-3.1-8b", "method": "lora", "batch_size": 4, "seq_len": 2048}
    recs = client.post("/api/v1/recommendations", headers=auth, json=body).json()
    estimate = client.post("/api/v1/estimates", headers=auth, json=body).json()
    setups = {f["gpu"]: f["setup"] for f in estimate["fits"] if not f["fits"] and f["setup"]}
    listed = {r["slug"]: r for r in recs["recommendations"] if r["kind"] == "gpu"}
    assert setups.get("rtx-pro-5000-48gb", {}).get("changes") == {"gradient_checkpointing": True}
    assert setups and set(setups) - {"h200-sxm", "h100-sxm", "h100-nvl", "a100-80gb", "l40s",
                                     "rtx-5090", "rtx-6000-ada"} <= set(listed)
    for slug, setup in setups.items():
        if slug in listed:
            assert listed[slug]["setup"] == setup
            assert listed[slug]["total_bytes_per_gpu"] == setup["total_bytes"]


def test_recommendations_for_an_inline_config_have_no_storefront_link(
    client: TestClient, auth: dict[str, str]
) -> None:
    recs = client.post("/api/v1/recommendations", headers=auth, json={
        "model_config": dict(SEED.model("qwen3-0.6b").config), "method": "lora",
    }).json()["recommendations"]
    assert recs and all(r["quote_url"] is None for r in recs)


def test_nothing_fits_is_an_empty_list(client: TestClient, auth: dict[str, str]) -> None:
    doc = client.post("/api/v1/recommendations", headers=auth, json={
        "model": "llama-3.1-405b", "method": "full", "seq_len": 131072, "batch_size": 64,
    }).json()
    assert doc["recommendations"] == []


def test_rank_key_puts_price_on_request_last() -> None:
    """As the estimate's recommendation: priced first, cheapest first; equal prices by time;
    price on request last, the smallest memory first."""
    from decimal import Decimal

    from app.estimates.recommendations import Option

    def option(slug: str, cards: int, price: str | None, hours: float, memory: int) -> Option:
        value = Decimal(price) if price else None
        return Option("gpu", slug, slug, slug, cards, cards, "none", value, value,
                      "in_stock", 1, 1, 1, hours=hours, memory_bytes=memory)

    ranked = sorted([option("a", 2, "1.00", 9.0, 9), option("b", 1, None, 1.0, 9),
                     option("c", 1, "5.00", 2.0, 1), option("d", 1, "5.00", 1.0, 7),
                     option("e", 1, None, 1.0, 5)], key=rank_key)
    assert [o.slug for o in ranked] == ["a", "d", "c", "e", "b"]


ERRORS: list[tuple[Any, set[str]]] = [
    ({"model": "llama-3.1-8b"}, {"body.method"}),
    ({"model": "llama-3.1-8b", "method": "dpo"}, {"body.method"}),
    ({"model": "llama-3.1-8b", "method": "lora", "batch_size": 0, "seq_len": "long"},
     {"body.batch_size", "body.seq_len"}),
    ({"model": "llama-3.1-8b", "method": "lora", "batch_size": 10**30}, {"body.batch_size"}),
    ({"model": "llama-3.1-8b", "method": "lora", "lora_dropout": 1.5}, {"body.lora_dropout"}),
    ({"model": "llama-3.1-8b", "method": "lora", "surprise": 1}, {"body.surprise"}),
    ({"model": "llama-3.1-8b", "method": "lora", "gpu": "h200-nvl"}, {"body.gpu"}),
    ({"model": ["x"], "method": "lora"}, {"body.model"}),
    ({"model_config": {"model_type": "llama", "hidden_size": 10**40}, "method": "lora"},
     {"body.model_config"}),
    ({"model_config": "config.json", "method": "lora"}, {"body.model_config"}),
    ([1, 2], {"body"}),
    ({"method": "lora"}, {"body.model"}),
    ({"model": "llama-3.1-8b", "model_config": {}, "method": "lora"}, {"body.model"}),
    ({"model_config": {"model_type": "llama"}, "method": "lora"}, {"body.model_config.*"}),
    ({"model": "llama-3.1-8b", "method": "full", "quant": "nf4"}, {"body.quant"}),
    ({"model": "llama-3.1-8b", "method": "lora", "bnb_version": "0.41"}, {"body.bnb_version"}),
    ({"model": "llama-3.1-8b", "method": "qlora", "bnb_version": "0.39"}, {"body.bnb_version"}),
    ({"model": "llama-3.1-8b", "method": "lora", "gpus": 2, "sharding": "zero2",
      "sharding_impl": "fsdp"}, {"body.sharding_impl"}),
    ({"model": "llama-3.1-8b", "method": "lora", "sharding_impl": "megatron"},
     {"body.sharding_impl"}),
    ({"model": "qwen3-30b-a3b", "method": "lora", "moe_lora": "per-layer"}, {"body.moe_lora"}),
    ({"model": "llama-3.1-8b", "method": "lora", "seq_len": 1 << 20}, {"body.seq_len"}),
]


@pytest.mark.parametrize(("path"), ["/api/v1/estimates", "/api/v1/recommendations"])
@pytest.mark.parametrize(("body", "locations"), ERRORS)
def test_bad_input_is_422_with_one_entry_per_invalid_field(
    client: TestClient, auth: dict[str, str], path: str, body: Any, locations: set[str]
) -> None:
    problem = assert_problem(client.post(path, headers=auth, json=body), 422, "invalid_input")
    found = [error["location"] for error in problem["errors"]]
    assert len(found) == len(set(found)) == len(locations)
    for expected in locations:
        if expected.endswith(".*"):
            assert any(f.startswith(expected[:-1]) for f in found), found
        else:
            assert expected in found, found


@pytest.mark.parametrize("raw", [
    b'{"model": "llama-3.1-8b", "method": "lora", "lora_dropout": NaN}',
    b'{"model": "llama-3.1-8b", "method": "lora", "lora_dropout": Infinity}',
    b'{"model_config": {"model_type": "llama", "rope_theta": NaN}, "method": "lora"}',
    b'{"model": "llama-3.1-8b", "method": "lora"',
    b'{"model": "\\ud800", "method": "lora"}',
    b"\xff\xfe",
    b"[" * 5000 + b"]" * 5000,
    b'{"model_config": ' + b'{"a": ' * 100 + b"1" + b"}" * 100 + b', "method": "lora"}',
])
def test_malformed_json_never_breaks_the_server(
    client: TestClient, auth: dict[str, str], raw: bytes
) -> None:
    response = client.post("/api/v1/estimates", content=raw,
                           headers={**auth, "Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize("slug", ["ünïcødé", "💥" * 10])
def test_unicode_slugs_are_404(client: TestClient, auth: dict[str, str], slug: str) -> None:
    assert_problem(client.post("/api/v1/estimates", headers=auth,
                               json={"model": slug, "method": "lora"}), 404)


def test_a_slug_with_a_nul_is_422_naming_the_field(client: TestClient,
                                                    auth: dict[str, str]) -> None:
    """A control character is refused before any look-up (issue 24, point 1)."""
    response = client.post("/api/v1/estimates", headers=auth,
                           json={"model": "llama-3.1-8b\u0000", "method": "lora"})
    assert_problem(response, 422)
    assert response.json()["errors"][0]["location"] == "body.model"


def test_an_unknown_card_is_404(client: TestClient, auth: dict[str, str]) -> None:
    assert_problem(client.post("/api/v1/estimates", headers=auth, json={
        "model": "llama-3.1-8b", "method": "lora", "gpu": ["no-such-card"]}), 404)


def test_oversize_bodies_are_413_before_parsing(client: TestClient, auth: dict[str, str]) -> None:
    big = b'{"model": "' + b"x" * MAX_BODY_BYTES + b'"}'
    assert_problem(client.post("/api/v1/estimates", content=big,
                               headers={**auth, "Content-Type": "application/json"}), 413)

    def chunks() -> Any:
        for _ in range(MAX_BODY_BYTES // 10_000 + 1):
            yield b" " * 10_000

    assert_problem(client.post("/api/v1/estimates", content=chunks(),
                               headers={**auth, "Content-Type": "application/json"}), 413)


def test_a_config_over_256_kb_is_413(client: TestClient, auth: dict[str, str]) -> None:
    config = {"model_type": "llama", "padding": "x" * (270 * 1024)}
    body = json.dumps({"model_config": config, "method": "lora"})
    assert len(body) < MAX_BODY_BYTES
    problem = assert_problem(client.post("/api/v1/estimates", content=body,
                                         headers={**auth, "Content-Type": "application/json"}),
                             413)
    assert "256 KB" in str(problem["detail"])


def test_recommendations_keep_to_the_cards_asked_for(
    client: TestClient, auth: dict[str, str]
) -> None:
    recs = client.post("/api/v1/recommendations", headers=auth, json={
        "model": "qwen3-8b", "method": "lora", "gpu": ["h200-nvl"],
    }).json()["recommendations"]
    assert recs and {r["gpu"] for r in recs} == {"h200-nvl"}
    assert {r["kind"] for r in recs} == {"gpu", "system"}


def test_a_quote_link_carries_the_training_precision(
    client: TestClient, auth: dict[str, str]
) -> None:
    """The storefront link reproduces the job, precision options included (issue 15)."""
    recs = client.post("/api/v1/recommendations", headers=auth, json={
        "model": "qwen3-8b", "method": "lora", "framework": "litgpt",
        "adapter_dtype": "bf16",
    }).json()["recommendations"]
    assert recs and all("framework=litgpt" in r["quote_url"] for r in recs)
    assert all("adapter=bf16" in r["quote_url"] for r in recs)


def test_bnb_version_sizes_old_qlora_and_the_quote_link_carries_it(
    client: TestClient, auth: dict[str, str]
) -> None:
    """bnb_version 0.41: bitsandbytes 0.41-0.43.1's saved 4-bit inputs (issue 15, point 1)."""
    job = {"model": "llama-3.1-8b", "method": "qlora", "gradient_checkpointing": "off"}
    current = client.post("/api/v1/estimates", headers=auth, json=job).json()
    old = client.post("/api/v1/estimates", headers=auth,
                      json={**job, "bnb_version": "0.41"}).json()
    assert old["per_gpu_bytes"]["activations"] > current["per_gpu_bytes"]["activations"]
    recs = client.post("/api/v1/recommendations", headers=auth,
                       json={**job, "bnb_version": "0.41"}).json()["recommendations"]
    assert recs and all("bnb=0.41" in r["quote_url"] for r in recs)
    plain = client.post("/api/v1/recommendations", headers=auth, json=job).json()
    assert all("bnb=" not in r["quote_url"] for r in plain["recommendations"])
