"""A quote asked from the Serve page (issue 17) is stored as a serving request: workload
"serving", the Serve inputs, and the serving sizing of the item recomputed by the serving
service (the Serve page's own figures), never a training sizing; bad serving inputs are
refused naming the field. SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import asdict

import pytest
from sqlalchemy.orm import Session

from app.caches import Caches
from app.catalog import service as catalog_service
from app.engine.serving import ServingJob
from app.errors import InvalidInput
from app.estimates import serving as serving_service
from app.estimates.serving import ServingRequest
from app.quotes import service as quotes_service
from app.quotes.schemas import Contact, QuoteRequestRecord

CONTACT = Contact(name="Ada", company="Engines", email="ada@example.com", country="DE",
                  vat_id=None, message=None, quantity=1)
JOB = ServingJob(weights="awq", kv_cache="fp8", context=32768, concurrency=16)
INPUTS = {"model": "llama-3.1-8b", "weights": "awq", "kv": "fp8", "context": "32768",
          "users": "16", "gpus": "1", "runtime": "vllm"}


def _create(session: Session, kind: str, slug: str, job: ServingJob = JOB,
            caches: Caches | None = None) -> QuoteRequestRecord:
    caches = caches or Caches()
    return quotes_service.create_serving_request(
        session, catalog=catalog_service.get_catalog(session, caches.catalog),
        serving=ServingRequest(job=job, model_slug="llama-3.1-8b"), estimates=caches.estimates,
        calculator_query=INPUTS, item_kind=kind,  # type: ignore[arg-type]
        item_slug=slug, contact=CONTACT, locale="de")


def test_a_card_is_stored_with_the_serve_page_s_figures_for_it(seeded_session: Session) -> None:
    caches = Caches()
    record = quotes_service.get_request(
        seeded_session, token=_create(seeded_session, "gpu", "rtx-pro-6000", caches=caches).token)
    sizing = serving_service.serving_sizing(
        catalog_service.get_catalog(seeded_session, caches.catalog),
        ServingRequest(job=JOB, model_slug="llama-3.1-8b"), cache=caches.estimates)
    row = next(fit for fit in sizing.result.fits if fit.gpu == "rtx-pro-6000")
    assert record.workload == "serving"
    assert record.sizing["workload"] == "serving"
    assert record.sizing["calculator"] == INPUTS
    assert record.sizing["model_name"] == "meta-llama/Llama-3.1-8B"
    fit = record.sizing["item_fit"]
    assert fit["max_concurrency"] == row.max_concurrency > 16
    assert fit["kv_cache_capacity_bytes"] == row.kv_cache_capacity_bytes
    assert fit["per_gpu_bytes"] == asdict(row.per_gpu_bytes)
    assert fit["decode_tokens_per_s"] == asdict(row.decode_tokens_per_s)  # type: ignore[arg-type]
    assert record.sizing["result"]["kv_cache_bytes_per_token"] == (
        sizing.result.kv_cache_bytes_per_token)
    assert "model_states_bytes" not in record.sizing["result"]  # no training figure
    assert record.engine_version == sizing.result.engine_version


def test_a_system_is_stored_with_all_its_cards_tensor_parallel(seeded_session: Session) -> None:
    record = _create(seeded_session, "system", "srv-2x-h200-nvl")
    fit = record.sizing["item_fit"]
    assert fit["gpus"] == 2 and fit["gpu"] == "h200-nvl"
    one_card = _create(seeded_session, "gpu", "h200-nvl").sizing["item_fit"]
    assert one_card["gpus"] == 1
    assert fit["per_gpu_bytes"]["weights"] < one_card["per_gpu_bytes"]["weights"]


def test_a_training_request_stays_a_training_request(seeded_session: Session) -> None:
    from app.engine import Job
    from app.estimates.service import EstimateRequest

    caches = Caches()
    record = quotes_service.create_request(
        seeded_session, catalog=catalog_service.get_catalog(seeded_session, caches.catalog),
        estimate=EstimateRequest(job=Job(), model_slug="llama-3.1-8b"),
        estimates=caches.estimates, calculator_query={"model": "llama-3.1-8b"},
        item_kind="gpu", item_slug="rtx-pro-6000", contact=CONTACT, locale="en")
    assert record.workload == "training" and "model_states_bytes" in record.sizing["result"]
    assert quotes_service.get_request(seeded_session, token=record.token).workload == "training"


@pytest.mark.parametrize(("job", "field"), [
    (ServingJob(concurrency=0), "concurrency"),
    (ServingJob(context=0), "context"),
    (ServingJob(runtime="llama.cpp", weights="awq"), "weights"),
])
def test_bad_serving_inputs_are_refused_naming_the_field(
    seeded_session: Session, job: ServingJob, field: str,
) -> None:
    with pytest.raises(InvalidInput) as refused:
        _create(seeded_session, "gpu", "rtx-pro-6000", job=job)
    assert refused.value.field == field
