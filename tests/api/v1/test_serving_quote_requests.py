"""A partner asks for a quote on a serving job: the same record the Serve page stores, sized by
the serving service, marked with the partner; bad input named under ``body.estimate``."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.db.session import SessionFactory
from app.db.tables import QuoteRequest
from tests.api.v1.conftest import assert_problem

SERVING_JOB: dict[str, Any] = {"workload": "serving", "model": "llama-3.1-8b",
                               "context": 32768, "concurrency": 16}


def request_body(**job: Any) -> dict[str, Any]:
    return {
        "item_kind": "gpu", "item_slug": "rtx-pro-6000", "quantity": 1,
        "estimate": {**SERVING_JOB, **job},
        "contact": {"name": "Ada Buyer", "company": "Example GmbH",
                    "email": "ada@example.com", "country": "DE"},
        "partner_reference": "ACME-SERVE-1",
    }


def stored(seeded: SessionFactory) -> QuoteRequest:
    with seeded() as session:
        return session.scalars(select(QuoteRequest)).one()


def test_a_serving_quote_keeps_the_serving_sizing_the_api_gives_for_that_card(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    response = client.post("/api/v1/quote-requests", headers=auth, json=request_body())
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["workload"] == "serving" and created["partner_reference"] == "ACME-SERVE-1"
    estimate = client.post("/api/v1/serving-estimates", headers=auth,
                           json={k: v for k, v in SERVING_JOB.items() if k != "workload"}).json()
    card = next(fit for fit in estimate["fits"] if fit["gpu"] == "rtx-pro-6000")
    row = stored(seeded)
    assert row.workload == "serving" and row.partner_id is not None
    assert row.sizing["workload"] == "serving"
    assert row.sizing["model_name"] == "meta-llama/Llama-3.1-8B"
    assert row.sizing["result"]["engine_version"] == created["engine_version"]
    fit = row.sizing["item_fit"]
    assert (fit["fits"], fit["max_concurrency"], fit["max_context"]) == (
        card["fits"], card["max_concurrency"], card["max_context"])
    assert fit["per_gpu_bytes"]["total"] == card["per_gpu_bytes"]["total"]


def test_its_inputs_are_the_serve_page_s_link(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    client.post("/api/v1/quote-requests", headers=auth,
                json=request_body(weights="fp8", kv_cache="fp8", gpu=["rtx-pro-6000"]))
    assert dict(parse_qsl(stored(seeded).calculator_query)) == {
        "model": "llama-3.1-8b", "weights": "fp8", "kv": "fp8", "context": "32768",
        "users": "16", "gpus": "1", "runtime": "vllm", "gpu": "rtx-pro-6000",
        "speed": "10"}


def test_a_job_the_serve_page_cannot_show_whole_is_marked_as_the_api_s(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    client.post("/api/v1/quote-requests", headers=auth,
                json=request_body(gpu_memory_utilization=0.8))
    assert dict(parse_qsl(stored(seeded).calculator_query))["source"] == "api"


def test_the_customer_s_page_shows_the_serving_job(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    client.post("/api/v1/quote-requests", headers=auth, json=request_body())
    page = client.get(f"/q/{stored(seeded).token}", headers={"Accept-Language": "en"})
    assert page.status_code == 200
    assert "16 concurrent users at 32,768 tokens each" in page.text
    assert "/serve?model=llama-3.1-8b" in page.text


@pytest.mark.parametrize(("job", "location", "status"), [
    ({"context": 0}, "body.estimate.context", 422),
    ({"concurrency": "many"}, "body.estimate.concurrency", 422),
    ({"weights": "int3"}, "body.estimate.weights", 422),
    ({"gpu_memory_bytes": 96 * 2**30}, "body.estimate.gpu_memory_bytes", 422),
    ({"model": None}, "body.estimate.model", 422),
    ({"model": "no-such-model"}, None, 404),
])
def test_bad_serving_input_names_the_field_and_stores_nothing(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory,
    job: dict[str, Any], location: str | None, status: int,
) -> None:
    problem = assert_problem(
        client.post("/api/v1/quote-requests", headers=auth, json=request_body(**job)), status)
    if location is not None:
        assert location in {error["location"] for error in problem["errors"]}
    with seeded() as session:
        assert session.scalar(select(func.count()).select_from(QuoteRequest)) == 0


def test_a_training_quote_says_so(client: TestClient, auth: dict[str, str]) -> None:
    body = request_body()
    body["estimate"] = {"model": "llama-3.1-8b", "method": "lora"}
    assert client.post("/api/v1/quote-requests", headers=auth,
                       json=body).json()["workload"] == "training"
