"""The serving estimate service: resolve the model and the cards, then call the serving engine.

The storefront's "Serve" mode, the partner API (``POST /api/v1/serving-estimates`` and
``"workload": "serving"`` recommendations) and ``sizer serving`` all call
:func:`serving_estimate` (or :func:`serving_json`, its JSON bytes); none computes memory
itself, so the three give identical numbers for the same input.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any, Literal

from app.catalog.schemas import Catalog, GpuRecord, SystemRecord
from app.engine import EngineError, ModelShape, parse_config
from app.engine.architectures.approximate import shape_of
from app.engine.serving import (
    DECODE_EFFICIENCY,
    ServingFit,
    ServingGpu,
    ServingJob,
    ServingResult,
    decode_step,
)
from app.engine.serving import serving_estimate as engine_serving_estimate
from app.engine.serving_kv import KvLayout, kv_layout
from app.engine.serving_weights import published_format, sixteen_bit_format, weight_bytes
from app.errors import InvalidInput
from app.estimates.job_input import PUBLISHED as PUBLISHED
from app.estimates.service import (
    CUSTOM_COMPUTE_CAPABILITY,
    CUSTOM_GPU,
    EstimateCache,
    engine_invalid,
    find_model,
    select_gpus,
    system_rows,
)
from app.paths import SEED_DIR


@dataclass(frozen=True, slots=True)
class ServingRequest:
    """A model (a catalog slug or an inline config.json), how to serve it, and which cards."""

    job: ServingJob
    model_slug: str | None = None
    model_config: Mapping[str, Any] | None = None
    gpu_slugs: tuple[str, ...] = field(default=())
    gpu_memory_bytes: int | None = None
    """An ad-hoc card of this driver-reported total instead of catalog cards ("custom")."""
    with_levers: bool = True
    published_weights: bool = False
    """Serve the weights in the checkpoint's published format (``PUBLISHED``, every surface's
    default) instead of ``job.weights``: :func:`resolved_job`."""


WeightChoice = Literal["published", "bf16", "fp16", "fp8", "int8", "awq", "gptq", "nvfp4",
                       "mxfp4", "gguf-q4_k_m", "gguf-q8_0"]
"""What a surface takes for the weights: ``published`` or a format (``WEIGHT_FORMATS``; a test
holds the two to the same formats)."""


def resolved_job(config: Mapping[str, Any], request: ServingRequest) -> ServingJob:
    """The job as it is sized: with ``published_weights``, the weights in the format the
    checkpoint is published in (its ``quantization_config``: MXFP4 for gpt-oss, FP8 for
    DeepSeek-V3/R1 and Kimi K2), 16-bit when it names none or when the runtime cannot load it
    (llama.cpp takes GGUF files or 16-bit weights)."""
    job = request.job
    if not request.published_weights:
        return job
    fmt = published_format(config) or sixteen_bit_format(config)
    if job.runtime == "llama.cpp" and fmt not in ("bf16", "fp16"):
        fmt = sixteen_bit_format(config)
    return replace(job, weights=fmt)


def serving_gpu(record: GpuRecord) -> ServingGpu:
    """A catalog GPU as the serving engine sees it."""
    return ServingGpu(
        slug=record.slug, name=record.name, total_bytes=record.usable_bytes,
        compute_capability=record.compute_capability,
        memory_bandwidth_gbps=record.memory_bandwidth_gbps,
        bf16_tflops=record.bf16_dense_tflops, fp8_tflops=record.fp8_dense_tflops,
        fp4_tflops=record.fp4_dense_tflops,
        unified_memory="unified" in record.memory_type.lower(),
    )


def custom_gpu(total_bytes: int) -> ServingGpu:
    """An ad-hoc card (gpu "custom"); its bandwidth is unknown, so it has no tokens per
    second."""
    return ServingGpu(slug=CUSTOM_GPU, name=CUSTOM_GPU, total_bytes=total_bytes,
                      compute_capability=CUSTOM_COMPUTE_CAPABILITY)


def resolve_model(catalog: Catalog, request: ServingRequest
                  ) -> tuple[ModelShape, KvLayout, ServingJob]:
    """The model's shape and KV layout, and the job as it is sized (:func:`resolved_job`).
    Raises NotFound / InvalidInput naming the field."""
    if (request.model_slug is None) == (request.model_config is None):
        raise InvalidInput("give either a catalog model slug or a config.json object",
                           field="model")
    if request.model_slug is not None:
        config = find_model(catalog, request.model_slug).config
    else:
        config = request.model_config or {}
    try:
        shape = shape_of(config)
        return shape, kv_layout(config, shape), resolved_job(config, request)
    except EngineError as error:
        raise engine_invalid(error, field=f"model_config.{error.field}") from error


def _gpus(catalog: Catalog, request: ServingRequest) -> list[ServingGpu]:
    if request.gpu_memory_bytes is not None:
        return [custom_gpu(request.gpu_memory_bytes)]
    return [serving_gpu(record) for record in select_gpus(catalog, request.gpu_slugs)]


def _compute(catalog: Catalog, request: ServingRequest) -> ServingResult:
    shape, layout, job = resolve_model(catalog, request)
    try:
        result = engine_serving_estimate(shape, layout, job, _gpus(catalog, request),
                                         with_levers=request.with_levers)
    except EngineError as error:
        raise engine_invalid(error) from error
    return replace(result, weights_as_published=request.published_weights)


def serving_estimate(catalog: Catalog, request: ServingRequest, *,
                     cache: EstimateCache) -> ServingResult:
    """The serving engine's answer for this request against the catalog's cards (remembered
    in ``cache`` like training estimates)."""
    return cache.remembered("serving", catalog, request,
                            lambda: _compute(catalog, request))


def serving_json(catalog: Catalog, request: ServingRequest, *, cache: EstimateCache) -> bytes:
    """:func:`serving_estimate`'s document as compact UTF-8 JSON (what the API sends)."""
    return cache.remembered(
        "serving-json", catalog, request,
        lambda: json.dumps(serving_estimate(catalog, request, cache=cache).to_dict(),
                           separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


@dataclass(frozen=True, slots=True)
class ServingSystemFit:
    """A configured system (n cards of one SKU) serving the job tensor-parallel."""

    system: SystemRecord
    gpu: GpuRecord
    gpus: int
    fit: ServingFit


@dataclass(frozen=True, slots=True)
class ServingSizing:
    """What the storefront shows: the cards and the systems."""

    result: ServingResult
    systems: tuple[ServingSystemFit, ...]


def serving_sizing(catalog: Catalog, request: ServingRequest, *,
                   cache: EstimateCache) -> ServingSizing:
    """The serving estimate against every card, and every active system (its cards tensor
    parallel; llama.cpp splits layers instead)."""
    result = serving_estimate(catalog, request, cache=cache)
    systems = cache.remembered("serving-systems", catalog, request,
                               lambda: _system_fits(catalog, request))
    return ServingSizing(result=result, systems=systems)


def serving_system_job(job: ServingJob, gpu_count: int) -> ServingJob:
    """The job on a system's cards: the model split over all of them (tensor parallel;
    llama.cpp splits layers instead), every other setting as the customer chose it."""
    return replace(job, gpus=gpu_count)


def _system_fit(shape: ModelShape, layout: KvLayout, sized: ServingJob,
                system: SystemRecord, gpu: GpuRecord) -> ServingSystemFit:
    """The serving job (as sized, :func:`resolved_job`) on one system: the model split over its
    cards (:func:`serving_system_job`)."""
    job = serving_system_job(sized, system.gpu_count)
    found = engine_serving_estimate(shape, layout, job, [serving_gpu(gpu)],
                                    with_levers=False).fits[0]
    return ServingSystemFit(system=system, gpu=gpu, gpus=system.gpu_count, fit=found)


def _system_fits(catalog: Catalog, request: ServingRequest) -> tuple[ServingSystemFit, ...]:
    shape, layout, job = resolve_model(catalog, request)
    return system_rows(catalog, request, partial(_system_fit, shape, layout, job))


@dataclass(frozen=True, slots=True)
class ServingOption:
    """One way to buy the serving job: ``cards`` x ``gpu`` (loose cards or a system)."""

    kind: str
    slug: str
    name: str
    gpu: str
    cards: int
    quantity: int
    unit_price_eur_net: Decimal | None
    price_eur_net: Decimal | None
    stock_status: str
    fit: ServingFit
    price_indicative: bool = False
    """The price is the seed's public, dated list price, not yet confirmed by staff."""


def _rank(option: ServingOption) -> tuple[int, bool, Decimal, int, str]:
    price = option.price_eur_net
    return (option.cards, price is None, price or Decimal(0), -option.fit.max_concurrency,
            option.slug)


def serving_recommend(catalog: Catalog, request: ServingRequest, *, cache: EstimateCache
                      ) -> tuple[ServingSizing, tuple[ServingOption, ...]]:
    """The sizing and every card or system that serves the job, best first: fewest cards,
    then price (on request last), then the most concurrent requests."""
    sizing = serving_sizing(catalog, request, cache=cache)
    by_slug = {gpu.slug: gpu for gpu in catalog.gpus}
    cards = request.job.gpus
    found: list[ServingOption] = []
    for fit in sizing.result.fits:
        gpu = by_slug.get(fit.gpu)
        if gpu is None or not fit.fits:
            continue
        unit = gpu.price_eur_net
        found.append(ServingOption("gpu", gpu.slug, gpu.name, gpu.slug, cards, cards, unit,
                                   unit * cards if unit is not None else None,
                                   gpu.stock_status, fit,
                                   gpu.price_indicative and unit is not None))
    for row in sizing.systems:
        if not row.fit.fits or (request.gpu_slugs and row.gpu.slug not in request.gpu_slugs):
            continue
        found.append(ServingOption("system", row.system.slug, row.system.name, row.gpu.slug,
                                   row.gpus, 1, row.system.price_eur_net,
                                   row.system.price_eur_net, row.system.stock_status, row.fit,
                                   row.system.price_indicative
                                   and row.system.price_eur_net is not None))
    return sizing, tuple(sorted(found, key=_rank))


MEASUREMENTS_DIR = Path(__file__).resolve().parent / "measurements"
"""Published serving measurements, package data (``app/estimates/measurements/``)."""
DECODE_MEASUREMENTS = MEASUREMENTS_DIR / "decode_measurements.json"


@dataclass(frozen=True, slots=True)
class DecodeCase:
    """One published decode measurement beside the engine's figure for it."""

    id: str
    source: str
    card: str
    runtime: str
    model: str
    format: str
    measured_tokens_per_s: float
    predicted_tokens_per_s: float
    implied_efficiency: float
    """The efficiency factor that would reproduce the measurement exactly."""
    implied_layer_seconds: float
    """The fixed time per layer that would reproduce it exactly at ``DECODE_EFFICIENCY``."""

    @property
    def error(self) -> float:
        return self.predicted_tokens_per_s / self.measured_tokens_per_s - 1


def decode_cases(path: Path = DECODE_MEASUREMENTS) -> tuple[DecodeCase, ...]:
    """Each published measurement with the engine's prediction (the seed models' configs)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    models = SEED_DIR / "models"
    cases: list[DecodeCase] = []
    for item in document["cases"]:
        config = json.loads((models / f"{item['model']}.json").read_text(encoding="utf-8"))
        job = ServingJob(weights=item["format"], context=item["context"],
                         runtime=item["runtime"])
        gpu = ServingGpu(item["card"], item["card"], 1 << 40, CUSTOM_COMPUTE_CAPABILITY,
                         memory_bandwidth_gbps=item["bandwidth_gbps"])
        shape, layout = parse_config(config), kv_layout(config)
        step = decode_step(shape, layout, job, gpu)
        predicted = 1 / step.seconds(item["bandwidth_gbps"])
        measured_seconds = 1 / item["tokens_per_s"]
        implied = step.bytes_read / ((measured_seconds - step.fixed_seconds)
                                     * item["bandwidth_gbps"] * 1e9)
        streaming = step.bytes_read / (item["bandwidth_gbps"] * 1e9 * DECODE_EFFICIENCY)
        cases.append(DecodeCase(
            id=item["id"], source=item["source"], card=item["card"], runtime=item["runtime"],
            model=item["model"], format=item["format"],
            measured_tokens_per_s=item["tokens_per_s"],
            predicted_tokens_per_s=round(predicted, 2), implied_efficiency=implied,
            implied_layer_seconds=(measured_seconds - streaming) / shape.num_layers))
    return tuple(cases)


VLLM_LOGS = MEASUREMENTS_DIR / "vllm_logs.json"


@dataclass(frozen=True, slots=True)
class LogCase:
    """One real vLLM start-up log beside the engine's figures for what it was given."""

    id: str
    source: str
    model: str
    gpu: str
    logged_weights_gib: float | None
    weights_gib: float | None
    weights_note: str | None
    """Why the weights are not held to the log (``weights_check_skipped``), else None."""
    logged_pool_gib: float | None
    pool_gib: float | None
    """The engine's KV pool, where the log prints the card's total (else None)."""
    logged_concurrency: float | None
    concurrency: float | None


def log_cases(path: Path = VLLM_LOGS) -> tuple[LogCase, ...]:
    """Each logged start-up with the engine's weights, KV pool and concurrency for it."""
    document = json.loads(path.read_text(encoding="utf-8"))
    cases: list[LogCase] = []
    for item in document["cases"]:
        config_path = SEED_DIR / "models" / (item["config"] or f"{item['model']}.json")
        config = {**json.loads(config_path.read_text(encoding="utf-8")),
                  **item["config_overrides"]}
        shape = shape_of(config)
        layout = kv_layout(config, shape)
        job = ServingJob(
            weights=item["weights_format"], kv_cache=item["kv_cache_dtype"],
            context=item["max_model_len"], gpus=item["tensor_parallel"],
            gpu_memory_utilization=item["gpu_memory_utilization"],
            max_num_batched_tokens=item["max_num_batched_tokens"],
            max_num_seqs=item["max_num_seqs"])
        logged = item["logged"]
        pool: int | None = None
        if item["capacity_check"]:
            gpu = ServingGpu("logged", item["gpu"] or "",
                             int(item["total_gpu_memory_gib"] * 2**30), "9.0")
            pool = engine_serving_estimate(shape, layout, job, [gpu],
                                           with_levers=False).fits[0].kv_cache_capacity_bytes
        request = layout.request_bytes(job.context, job.gpus, job.kv_dtype_bytes,
                                       item["max_num_batched_tokens"])
        basis = pool if pool is not None else (
            int(logged["available_kv_gib"] * 2**30) if logged["available_kv_gib"] is not None
            else logged["kv_tokens"] * layout.bytes_per_token(job.gpus, job.kv_dtype_bytes))
        cases.append(LogCase(
            id=item["id"], source=item["source"], model=item["checkpoint"],
            gpu=f"{item['tensor_parallel']} x {item['gpu']}" if item["gpu"] else "",
            logged_weights_gib=logged["weights_gib"],
            weights_gib=(round(weight_bytes(shape, job.weights, job.gpus).total / 2**30, 2)
                         if logged["weights_gib"] is not None else None),
            weights_note=item.get("weights_check_skipped"),
            logged_pool_gib=logged["available_kv_gib"],
            pool_gib=round(pool / 2**30, 2) if pool is not None else None,
            logged_concurrency=logged["max_concurrency"],
            concurrency=(round(basis / request, 2) if logged["max_concurrency"] is not None
                         else None)))
    return tuple(cases)


def decode_summary(cases: Sequence[DecodeCase]) -> dict[str, float]:
    """The factor, and the median and largest error of the cases."""
    errors = [abs(case.error) for case in cases]
    return {"efficiency": DECODE_EFFICIENCY, "median_error": statistics.median(errors),
            "max_error": max(errors)}
