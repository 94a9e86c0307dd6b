"""The estimates service: one set of bounds for every surface, and answers remembered per
catalog snapshot (same request, same snapshot, same answer without asking the engine again)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from app.catalog.schemas import Catalog
from app.catalog.seed import load_seed_catalog
from app.engine import EstimateResult, GpuSpec, Job, ModelShape
from app.engine import estimate as engine_estimate
from app.engine.speed import AttentionLayers
from app.engine.step_model import StepModels
from app.errors import InvalidInput
from app.estimates import service
from app.estimates.service import EstimateCache, EstimateRequest

LORA = EstimateRequest(job=Job(method="lora", batch_size=4), model_slug="llama-3.1-8b")


@pytest.fixture
def catalog() -> Catalog:
    return load_seed_catalog()


@pytest.fixture
def engine_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    calls: list[str] = []

    def counting(
        shape: ModelShape, job: Job, gpus: Sequence[GpuSpec], *, with_levers: bool = True,
        layers: AttentionLayers | None = None, models: StepModels | None = None,
    ) -> EstimateResult:
        if with_levers:  # the cards (the systems of one card count are held without levers)
            calls.append("engine")
        return engine_estimate(shape, job, gpus, with_levers=with_levers, layers=layers,
                               models=models)

    monkeypatch.setattr(service, "engine_estimate", counting)
    yield calls


@pytest.fixture
def cache() -> EstimateCache:
    """This test's own answers (the app holds one on app.state.caches)."""
    return EstimateCache()


def test_the_same_request_against_the_same_snapshot_is_answered_once(
    catalog: Catalog, engine_calls: list[str], cache: EstimateCache
) -> None:
    first = service.estimate(catalog, LORA, cache=cache)
    again = service.estimate(catalog, dataclasses.replace(LORA), cache=cache)  # equal, not same
    assert again is first
    assert engine_calls == ["engine"]


def test_a_new_catalog_snapshot_or_another_job_is_computed_afresh(
    catalog: Catalog, engine_calls: list[str], cache: EstimateCache
) -> None:
    first = service.estimate(catalog, LORA, cache=cache)
    edited = dataclasses.replace(catalog)  # what a reload after a catalog edit gives
    assert service.estimate(edited, LORA, cache=cache) is not first
    other = dataclasses.replace(LORA, job=dataclasses.replace(LORA.job, batch_size=8))
    assert service.estimate(catalog, other, cache=cache).per_gpu_bytes != first.per_gpu_bytes
    assert len(engine_calls) == 3


def test_inline_configs_are_not_kept(
    catalog: Catalog, engine_calls: list[str], cache: EstimateCache
) -> None:
    config = dict(load_seed_catalog().models[0].config)
    request = EstimateRequest(job=Job(method="lora"), model_config=config)
    service.estimate(catalog, request, cache=cache)
    service.estimate(catalog, request, cache=cache)
    assert len(engine_calls) == 2


def test_the_memory_is_bounded(
    catalog: Catalog, engine_calls: list[str], cache: EstimateCache,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(service, "RESULT_CACHE_SIZE", 3)
    for batch in range(1, 6):
        service.estimate(catalog, dataclasses.replace(
            LORA, job=dataclasses.replace(LORA.job, batch_size=batch)), cache=cache)
    service.estimate(catalog, LORA, cache=cache)  # batch 4: still kept
    assert len(engine_calls) == 5
    service.estimate(catalog, dataclasses.replace(  # batch 1: evicted first
        LORA, job=dataclasses.replace(LORA.job, batch_size=1)), cache=cache)
    assert len(engine_calls) == 6


def test_systems_are_remembered_with_the_cards(
    catalog: Catalog, engine_calls: list[str], cache: EstimateCache
) -> None:
    first = service.sizing(catalog, LORA, cache=cache)
    calls = len(engine_calls)
    again = service.sizing(catalog, LORA, cache=cache)
    assert again.systems is first.systems and again.result is first.result
    assert len(engine_calls) == calls


def test_the_api_document_is_the_engine_document_serialised_once(
    catalog: Catalog, engine_calls: list[str], cache: EstimateCache
) -> None:
    sent = service.estimate_json(catalog, LORA, cache=cache)
    assert json.loads(sent) == service.estimate(catalog, LORA, cache=cache).to_dict()
    assert service.estimate_json(catalog, LORA, cache=cache) is sent
    assert engine_calls == ["engine"]


@pytest.mark.parametrize("field, value", [
    ("batch_size", 4097), ("seq_len", (1 << 20) + 1), ("gpus", 1025), ("lora_rank", 4097),
    ("gradient_accumulation", 65537),
])
def test_every_surface_s_bounds_are_held_in_the_service(
    catalog: Catalog, engine_calls: list[str], cache: EstimateCache, field: str, value: int
) -> None:
    changes: dict[str, Any] = {field: value}  # the field is a parameter, so its type is too
    job = dataclasses.replace(LORA.job, **changes)
    with pytest.raises(InvalidInput, match=f"^{field}: at most"):
        service.estimate(catalog, dataclasses.replace(LORA, job=job), cache=cache)
    assert engine_calls == []


def test_a_new_snapshot_lets_go_of_the_old_one_s_answers(
    catalog: Catalog, engine_calls: list[str], cache: EstimateCache
) -> None:
    service.estimate(catalog, LORA, cache=cache)
    edited = dataclasses.replace(catalog)
    service.estimate(edited, LORA, cache=cache)
    service.estimate(catalog, LORA, cache=cache)  # the old snapshot again: computed afresh
    assert len(engine_calls) == 3
