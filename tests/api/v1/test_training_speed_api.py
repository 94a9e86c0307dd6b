"""The partner API's training speed (issue 26): each card's ``training`` for the customer's
data, the bounds on ``dataset_tokens`` and ``epochs``, comparison cards only when named."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.api.v1.conftest import assert_problem

JOB = {"model": "llama-3.1-8b", "method": "lora", "gradient_checkpointing": "off"}


def test_every_card_has_its_training_time_for_the_data(
    client: TestClient, auth: dict[str, str]
) -> None:
    one = client.post("/api/v1/estimates", headers=auth, json=JOB).json()
    three = client.post("/api/v1/estimates", headers=auth,
                        json={**JOB, "dataset_tokens": 30_000_000, "epochs": 2}).json()
    for small, large in zip(one["fits"], three["fits"], strict=True):
        assert set(small["training"]) == {"tokens_per_s", "step_seconds", "hours", "mfu"}
        assert small["training"]["tokens_per_s"] == large["training"]["tokens_per_s"]
        assert large["training"]["hours"] == pytest.approx(
            60_000_000 / large["training"]["tokens_per_s"] / 3600, abs=0.005)
        assert small["comparison_only"] is False


def test_a_comparison_card_is_held_against_the_job_only_when_named(
    client: TestClient, auth: dict[str, str]
) -> None:
    doc = client.post("/api/v1/estimates", headers=auth,
                      json={**JOB, "gpu": ["a100-80gb", "h200-nvl"]}).json()
    fits = {fit["gpu"]: fit for fit in doc["fits"]}
    assert fits["a100-80gb"]["comparison_only"] and not fits["h200-nvl"]["comparison_only"]
    assert fits["a100-80gb"]["training"]["hours"] > fits["h200-nvl"]["training"]["hours"]
    found = client.post("/api/v1/recommendations", headers=auth,
                        json={**JOB, "gpu": ["a100-80gb"]}).json()
    assert all("a100-80gb" not in (option["slug"], option.get("gpu"))
               for option in found["recommendations"])
    listed = client.get("/api/v1/gpus", headers=auth).json()["items"]
    assert {g["slug"] for g in listed if g["comparison_only"]} >= {"a100-80gb", "h200-sxm"}


@pytest.mark.parametrize("field", [
    {"dataset_tokens": 0}, {"dataset_tokens": 10**13 + 1}, {"dataset_tokens": True},
    {"epochs": 0}, {"epochs": 1001}, {"epochs": 1.5},
])
def test_bad_data_sizes_are_422_naming_the_field(
    client: TestClient, auth: dict[str, str], field: dict[str, object]
) -> None:
    problem = assert_problem(client.post("/api/v1/estimates", headers=auth,
                                         json={**JOB, **field}), 422, "invalid_input")
    assert [e["location"] for e in problem["errors"]] == [f"body.{next(iter(field))}"]


def test_the_cards_may_be_named_gpus_as_the_issue_writes_them(
    client: TestClient, auth: dict[str, str]
) -> None:
    """``"gpus": ["a100-80gb"]`` names the cards as ``gpu`` does (one GPU each); a number in
    ``gpus`` stays the count of GPUs."""
    named = client.post("/api/v1/estimates", headers=auth,
                        json={**JOB, "gpus": ["a100-80gb", "h200-sxm"]})
    assert named.status_code == 200, named.text
    as_gpu = client.post("/api/v1/estimates", headers=auth,
                         json={**JOB, "gpu": ["a100-80gb", "h200-sxm"]}).json()
    doc = named.json()
    assert [fit["gpu"] for fit in doc["fits"]] == ["a100-80gb", "h200-sxm"]
    assert doc["fits"] == as_gpu["fits"]
    two = client.post("/api/v1/estimates", headers=auth,
                      json={**JOB, "gpus": 2, "gpu": ["a100-80gb"]}).json()
    one, both = doc["fits"][0]["training"], two["fits"][0]["training"]
    assert both["tokens_per_s"] > 1.5 * one["tokens_per_s"]  # two GPUs, data parallel


@pytest.mark.parametrize("body", [
    {"gpus": ["a100-80gb"], "gpu": ["h200-sxm"]},
    {"gpus": ["a100\u0000-80gb"]},
    {"gpus": [""]},
    {"gpus": [3]},
])
def test_cards_in_gpus_are_refused_at_gpus(
    client: TestClient, auth: dict[str, str], body: dict[str, object]
) -> None:
    problem = assert_problem(client.post("/api/v1/estimates", headers=auth,
                                         json={**JOB, **body}), 422, "invalid_input")
    assert [e["location"] for e in problem["errors"]] == ["body.gpus"]
