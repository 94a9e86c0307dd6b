"""The estimates service: one set of bounds for every surface, and answers remembered per
catalog snapshot (same request, same snapshot, same answer without asking the engine again)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from app.catalog.schemas import Catalog, GpuRecord, SystemRecord
from app.catalog.seed import load_seed_catalog
from app.engine import EstimateResult, GpuSpec, Job, ModelShape
from app.engine import estimate as engine_estimate
from app.engine.setup import cheapest_setup
from app.engine.speed import AttentionLayers
from app.engine.step_model import StepModels
from app.errors import InvalidInput
from app.estimates import advice, service
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
        with_fewest: bool = True,
    ) -> EstimateResult:
        if with_levers:  # the cards (the systems of one card count are held without levers)
            calls.append("engine")
        return engine_estimate(shape, job, gpus, with_levers=with_levers, layers=layers,
                               models=models, with_fewest=with_fewest)

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


def _sized_alone(catalog: Catalog, request: EstimateRequest) -> service.Sizing:
    """The sizing as if every card and every system were asked of the engine on its own: one
    engine call for the cards with no step models shared, one call per system, each setup
    searched afresh (what :func:`service.sizing` shares must never change a figure)."""
    shape, layers = service.resolve_model(catalog, request)
    job, chosen = service.resolved_job(shape, request)
    records = service.select_gpus(catalog, request.gpu_slugs, request.compare_slugs)
    gpus = [service.gpu_spec(record) for record in records]
    allowed = service.allowed_levers(request)
    result = engine_estimate(shape, job, gpus, with_levers=request.with_levers, layers=layers)
    fits = tuple(fit if fit.fits else dataclasses.replace(
        fit, setup=cheapest_setup(shape, job, spec, allowed, layers=layers))
        for fit, spec in zip(result.fits, gpus, strict=True))
    result = dataclasses.replace(result, checkpointing=chosen, fits=fits)

    def alone(system: SystemRecord, gpu: GpuRecord) -> service.SystemFit:
        held = service.system_job(job, system.gpu_count)
        spec = service.system_link(service.gpu_spec(gpu), system)
        found = engine_estimate(shape, held, [spec], with_levers=False, layers=layers).fits[0]
        return service.SystemFit(
            system=system, gpu=gpu, gpus=system.gpu_count, sharding=held.sharding,
            fits=found.fits, total_bytes_per_gpu=found.total_bytes,
            free_bytes_per_gpu=found.free_bytes, max_batch_size=found.max_batch_size,
            warnings=found.warnings, training=found.training,
            setup=None if found.fits else cheapest_setup(shape, held, spec, allowed,
                                                         layers=layers))

    systems = service.system_rows(catalog, request, alone)
    offers = [*service._card_offers(request, result, list(records)),
              *service._system_offers(request, systems)]
    return service.Sizing(
        result=dataclasses.replace(result, recommendation=advice.recommend(offers)),
        systems=systems)


@pytest.mark.parametrize("request_", [
    LORA,
    EstimateRequest(job=Job(method="full", seq_len=4096), model_slug="llama-3.3-70b",
                    checkpointing="auto"),
    EstimateRequest(job=Job(method="lora", batch_size=8), model_slug="llama-3.3-70b",
                    checkpointing="auto", allow_method_change=True),
    EstimateRequest(job=Job(method="qlora", batch_size=16, seq_len=8192),
                    model_slug="qwen3-30b-a3b", checkpointing="auto"),
    EstimateRequest(job=Job(method="full", batch_size=4), model_slug="llama-3.1-8b",
                    compare_slugs=("h200-sxm", "a100-80gb")),
], ids=["lora-8b", "full-70b", "lora-70b-qlora-allowed", "qlora-moe-long", "compared"])
def test_what_one_sizing_shares_changes_no_figure(catalog: Catalog,
                                                  request_: EstimateRequest) -> None:
    """One sizing shares its step models between the cards, the levers, the setups and the
    systems, holds the systems of one card count in one engine call and the cards of one size
    once: every figure is what each card and system asked alone gives."""
    shared = service.sizing(catalog, request_, cache=EstimateCache())
    assert shared == _sized_alone(catalog, request_)
    assert request_ is LORA or shared.result.levers  # cards it does not fit: levers, setups
