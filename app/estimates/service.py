"""The estimate service: resolve the model and the cards in the catalog, then call the engine.

The storefront, the partner API and the ``sizer estimate`` command all call :func:`estimate`;
none of them computes memory itself, so the three give identical numbers for the same input.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar, cast

from app.catalog.schemas import Catalog, GpuRecord, ModelRecord, SystemRecord
from app.engine import (
    EngineError,
    EstimateResult,
    GpuSpec,
    Job,
    ModelShape,
    checkpointing,
    shape_of,
)
from app.engine import estimate as engine_estimate
from app.engine.checkpointing import Checkpointing, CheckpointingSetting
from app.engine.estimate import CardFit, Setup, card_fits
from app.engine.framework_litgpt import as_built
from app.engine.job import with_changes
from app.engine.precision import BnbVersion, bnb_saves_inputs
from app.engine.setup import cheapest_change, setup_on
from app.engine.sharding import ShardingImpl, checked_impl
from app.engine.speed import AttentionLayers, StepWork, Training, config_attention_layers
from app.engine.step_model import StepModels
from app.errors import InvalidInput, NotFound
from app.estimates import advice, job_limits

_T = TypeVar("_T")
_Row = TypeVar("_Row")


class CachedRequest(Protocol):
    """What :class:`EstimateCache` keys an answer by: a hashable request (a frozen dataclass,
    the training :class:`EstimateRequest` or the serving ``ServingRequest``) whose inline
    config.json, when it has one, keeps it out of the cache."""

    @property
    def model_config(self) -> Mapping[str, Any] | None: ...

    def __hash__(self) -> int: ...


class CustomCardRequest(Protocol):
    """A request that may hold its job against an ad-hoc card instead of the catalog's."""

    @property
    def gpu_memory_bytes(self) -> int | None: ...

RESULT_CACHE_SIZE = 512
"""Answers kept per worker, least recently used out first. The engine is deterministic, so the
same request against the same catalog snapshot has the same answer; customers ask the same
popular jobs (the calculator's defaults, the catalog's headline models) again and again, and the
engine's work was most of an API estimate's server time (``make load``). Keyed by the catalog
snapshot itself, so a catalog edit starts afresh (and the old snapshot's answers are let go);
inline config.json requests are not kept."""


class EstimateCache:
    """This process's remembered answers (results, the API's JSON bytes, system fits): an LRU of
    :data:`RESULT_CACHE_SIZE` entries for one catalog snapshot at a time. Held by the
    application (``app.state.caches.estimates``, see :mod:`app.caches`) or by a CLI command and
    passed to :func:`estimate`, :func:`estimate_json` and :func:`sizing`. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: OrderedDict[tuple[str, int, CachedRequest], tuple[Catalog, object]] = (
            OrderedDict())

    def remembered(self, kind: str, catalog: Catalog, request: CachedRequest,
                   compute: Callable[[], _T]) -> _T:
        """``compute()``, or what it gave for this request against this very catalog
        snapshot."""
        if request.model_config is not None:
            return compute()
        key = (kind, id(catalog), request)
        with self._lock:
            hit = self._answers.get(key)
            if hit is not None and hit[0] is catalog:
                self._answers.move_to_end(key)
                return cast(_T, hit[1])
        value = compute()
        with self._lock:
            if self._answers and next(reversed(self._answers.values()))[0] is not catalog:
                self._answers.clear()  # a new snapshot: the old one's answers are never asked
            self._answers[key] = (catalog, value)
            self._answers.move_to_end(key)
            while len(self._answers) > RESULT_CACHE_SIZE:
                self._answers.popitem(last=False)
        return value

    def knows(self, kind: str, catalog: Catalog, request: CachedRequest) -> bool:
        """Whether :meth:`remembered` would answer without computing: what lets an async route
        answer on the event loop and send only a computation to a thread."""
        if request.model_config is not None:
            return False
        hit = self._answers.get((kind, id(catalog), request))
        return hit is not None and hit[0] is catalog

    def forget(self) -> None:
        """Drop every remembered answer (never needed for correctness)."""
        with self._lock:
            self._answers.clear()


@dataclass(frozen=True, slots=True)
class EstimateRequest:
    """A model (a catalog slug or an inline config.json) and how to train it."""

    job: Job
    model_slug: str | None = None
    model_config: Mapping[str, Any] | None = None
    gpu_slugs: tuple[str, ...] = field(default=())
    with_levers: bool = True
    gpu_memory_bytes: int | None = None
    """An ad-hoc card of this driver-reported total instead of catalog cards (gpu "custom")."""
    compare_slugs: tuple[str, ...] = ()
    """Comparison cards to hold the job against besides the default cards (the page's
    "compare with a card I already have"); each must be a comparison card of the catalog."""
    checkpointing: CheckpointingSetting | None = None
    """Gradient checkpointing ``auto``, ``on`` or ``off`` (every surface's default is
    ``auto``); None: as ``job.gradient_checkpointing`` says, set explicitly."""
    allow_method_change: bool = False
    """Whether a setup may turn LoRA into QLoRA (:func:`allowed_levers`)."""


DEFAULT_JOB = Job()
"""Every surface's defaults: a setting still at its default is one the customer left to us."""


def allowed_levers(request: EstimateRequest) -> tuple[str, ...]:
    """The standard settings a setup may change (``app/engine/setup.py``): never one the
    customer set. Gradient checkpointing only when left ``auto``; the micro-batch always (the
    effective batch is kept); the optimizer and the offload only at their defaults; LoRA to
    QLoRA only when the customer allows the method to change."""
    job = request.job
    allowed = ["micro_batch"]
    if request.checkpointing == "auto":
        allowed.append("gradient_checkpointing")
    if job.optimizer == DEFAULT_JOB.optimizer:
        allowed.append("optimizer_8bit")
    if job.offload == DEFAULT_JOB.offload:
        allowed.append("offload_optimizer")
    if request.allow_method_change:
        allowed.append("qlora")
    return tuple(allowed)


def resolved_job(shape: ModelShape, request: EstimateRequest) -> tuple[Job, Checkpointing]:
    """The job as it is sized: gradient checkpointing settled by the one rule for catalog,
    pasted and Hub models alike (:func:`app.engine.checkpointing.choose`, the parameters counted
    from the config), and what was chosen."""
    job = request.job
    if request.checkpointing is None:
        return job, checkpointing.as_set(job.gradient_checkpointing)
    try:
        chosen = checkpointing.choose(request.checkpointing, method=job.method,
                                      total_params=shape.total_params, seq_len=job.seq_len)
    except EngineError as error:
        raise engine_invalid(error) from error
    return replace(job, gradient_checkpointing=chosen.enabled), chosen


def gpu_spec(record: GpuRecord) -> GpuSpec:
    """A catalog GPU as the engine sees it."""
    return GpuSpec(
        slug=record.slug,
        name=record.name,
        usable_bytes=record.usable_bytes,
        compute_capability=record.compute_capability,
        interconnect=record.interconnect,
        unified_memory="unified" in record.memory_type.lower(),
        bf16_tflops=record.bf16_dense_tflops,
        fp4_tflops=record.fp4_dense_tflops,
        memory_bandwidth_gbps=record.memory_bandwidth_gbps,
        interconnect_bandwidth_gbps=record.interconnect_bandwidth_gbps,
        comparison_only=record.comparison_only,
    )


CUSTOM_GPU = "custom"
"""The slug of an ad-hoc card given by its memory (``--gpu-memory 24GiB``)."""
CUSTOM_COMPUTE_CAPABILITY = "8.9"
"""What an ad-hoc card is assumed to compute in: FP8 yes, FP4 no (Ada/Hopper-like)."""


def custom_gpu_spec(total_bytes: int) -> GpuSpec:
    """An ad-hoc card of a driver-reported total, reported as gpu "custom"."""
    return GpuSpec(slug=CUSTOM_GPU, name=CUSTOM_GPU, usable_bytes=total_bytes,
                   compute_capability=CUSTOM_COMPUTE_CAPABILITY)


def resolve_shape(catalog: Catalog, request: EstimateRequest) -> tuple[ModelShape, str | None]:
    """The model's shape and, for a catalog model, its slug. Raises NotFound / InvalidInput."""
    shape, _ = resolve_model(catalog, request)
    return shape, request.model_slug


def resolve_model(catalog: Catalog, request: EstimateRequest
                  ) -> tuple[ModelShape, AttentionLayers | None]:
    """The model's shape and its attention layout (full, sliding, linear layers) for the
    speed. Raises NotFound / InvalidInput."""
    if (request.model_slug is None) == (request.model_config is None):
        raise InvalidInput("give either a catalog model slug or a config.json object",
                           field="model")
    config: Mapping[str, Any]
    if request.model_slug is not None:
        config = find_model(catalog, request.model_slug).config
    else:
        config = request.model_config or {}
    try:
        shape = shape_of(config)
    except EngineError as error:
        raise engine_invalid(error, field=f"model_config.{error.field}") from error
    return shape, config_attention_layers(config, shape)


def engine_invalid(error: EngineError, *, field: str | None = None) -> InvalidInput:
    """The engine's refusal as the services' error: its field (``field`` when the engine's
    field sits elsewhere in the request, as a config.json's fields do), its English reason, its
    key and values (the engine's field among them) for the pages to translate."""
    return InvalidInput(error.reason, field=error.field if field is None else field,
                        key=error.key, params={"field": error.field, **error.params})


@dataclass(frozen=True, slots=True)
class LibrarySwitches:
    """The two job switches users name by library (``bnb_version``, ``sharding_impl``) as the
    engine's Job takes them."""

    bnb_saves_inputs: bool
    sharding_impl: ShardingImpl


def library_switches(
    *, bnb_version: str, method: str, sharding_impl: str, sharding: str
) -> LibrarySwitches:
    """Check the bitsandbytes release and the sharding implementation against the job (0.41
    only for QLoRA, fsdp only with zero3) the same way for API and CLI; refusals name the
    field (:func:`engine_invalid`)."""
    try:
        return LibrarySwitches(
            bnb_saves_inputs(cast(BnbVersion, bnb_version), method),
            checked_impl(cast(ShardingImpl, sharding_impl), sharding),
        )
    except EngineError as error:
        raise engine_invalid(error) from error


def find_model(catalog: Catalog, slug: str) -> ModelRecord:
    for model in catalog.models:
        if model.slug == slug:
            return model
    raise NotFound(f"no model '{slug}' in the catalog", field="model")


def select_gpus(catalog: Catalog, slugs: Sequence[str],
                compare: Sequence[str] = ()) -> list[GpuRecord]:
    """The cards to hold the job against: the named ones (comparison cards among them), or
    every active card the shop sells and the comparison cards in ``compare`` (comparison
    cards only when named). Raises NotFound naming ``gpu`` or ``compare``."""
    if not slugs:
        extra = {gpu.slug: gpu for gpu in catalog.gpus if gpu.comparison_only}
        unknown = [slug for slug in compare if slug not in extra]
        if unknown:
            raise NotFound(f"no comparison card {', '.join(repr(s) for s in unknown)} in the "
                           "catalog", field="compare")
        return ([gpu for gpu in catalog.gpus if not gpu.comparison_only]
                + [extra[slug] for slug in dict.fromkeys(compare)])
    by_slug = {gpu.slug: gpu for gpu in catalog.gpus}
    missing = [slug for slug in slugs if slug not in by_slug]
    if missing:
        raise NotFound(f"no GPU {', '.join(repr(s) for s in missing)} in the catalog", field="gpu")
    return [by_slug[slug] for slug in slugs]


def estimate(catalog: Catalog, request: EstimateRequest, *,
             cache: EstimateCache) -> EstimateResult:
    """The engine's answer for this request against the catalog's cards (remembered in
    ``cache``).

    Engine input errors become :class:`InvalidInput` with the field named, so each surface can
    point at it."""
    job_limits.check(request.job)
    result = _remembered_sizing(catalog, request, cache).result
    _count(request.job.method)
    return result


def _count(method: str) -> None:
    """One more estimate of ``method`` in the process's metrics, where the process has them:
    the web application imports ``app.ops.metrics`` for ``/metrics`` (``app/ops/router.py``);
    a ``sizer`` command, which has no endpoint to count for, starts without prometheus_client
    (``benchmarks/test_cli_speed.py`` times it)."""
    metrics = sys.modules.get("app.ops.metrics")
    if metrics is not None:
        metrics.ESTIMATES.labels(method).inc()


def estimate_json(catalog: Catalog, request: EstimateRequest, *, cache: EstimateCache) -> bytes:
    """:func:`estimate`'s document as compact UTF-8 JSON, what the partner API sends; kept
    like the result itself, so a repeated request is neither computed nor serialised again."""
    job_limits.check(request.job)
    document = cache.remembered(
        "json", catalog, request,
        lambda: json.dumps(_estimate_uncounted(catalog, request, cache).to_dict(),
                           separators=(",", ":"), ensure_ascii=False).encode("utf-8"),
    )
    _count(request.job.method)
    return document


def remembered_estimate_json(catalog: Catalog, request: EstimateRequest, *,
                             cache: EstimateCache) -> bytes | None:
    """:func:`estimate_json` when ``cache`` already holds the answer, else None (nothing is
    computed): the partner API's async route sends only a computation to a thread."""
    if not cache.knows("json", catalog, request):
        return None
    return estimate_json(catalog, request, cache=cache)


def _estimate_uncounted(catalog: Catalog, request: EstimateRequest,
                        cache: EstimateCache) -> EstimateResult:
    return _remembered_sizing(catalog, request, cache).result


def _remembered_sizing(catalog: Catalog, request: EstimateRequest,
                       cache: EstimateCache) -> Sizing:
    return cache.remembered("sizing", catalog, request, lambda: _sized(catalog, request))


def _sized(catalog: Catalog, request: EstimateRequest) -> Sizing:
    """The cards (each with its setup where it does not fit as set), the systems (likewise)
    and the recommendation over them all (:mod:`app.estimates.advice`). The model is read and
    the job settled once for all of them (:class:`_Sizer`)."""
    sizer = _Sizer.of(catalog, request)
    result, records = _estimate(catalog, request, sizer)
    systems = sizer.systems(catalog, request)
    offers = [*_card_offers(request, result, records), *_system_offers(request, systems)]
    return Sizing(result=replace(result, recommendation=advice.recommend(offers)),
                  systems=systems)


def _estimate(catalog: Catalog, request: EstimateRequest, sizer: _Sizer | None = None
              ) -> tuple[EstimateResult, list[GpuRecord | None]]:
    """The job against the cards, with a setup for each card it does not fit as set, and the
    cards' catalog records (None for an ad-hoc card)."""
    sizer = sizer or _Sizer.of(catalog, request)
    records: list[GpuRecord | None]
    if request.gpu_memory_bytes is not None:
        records, gpus = [None], [custom_gpu_spec(request.gpu_memory_bytes)]
    else:
        found = select_gpus(catalog, request.gpu_slugs, request.compare_slugs)
        records, gpus = list(found), [gpu_spec(record) for record in found]
    try:
        result = engine_estimate(sizer.shape, sizer.job, gpus, with_levers=request.with_levers,
                                 layers=sizer.layers, models=sizer.models)
        fits = tuple(fit if fit.fits else replace(fit, setup=sizer.setup(sizer.job, spec))
                     for fit, spec in zip(result.fits, gpus, strict=True))
    except EngineError as error:
        raise engine_invalid(error) from error
    return replace(result, checkpointing=sizer.chosen, fits=fits), records


@dataclass(slots=True)
class _Sizer:
    """What one sizing reads once and shares between its cards and systems: the model's
    shape and attention layout, the job as settled, the levers a setup may change, and the
    step models by job (:class:`StepModels`), which the engine's cards and levers and every
    setup search ask for again and again (the same variants of the same job). The systems of
    one card count are held against their job in one engine call, as the cards are: the engine
    sizes each card of a call on its own, so each figure is what a call of its own gives."""

    shape: ModelShape
    layers: AttentionLayers | None
    job: Job
    chosen: Checkpointing
    allowed: tuple[str, ...]
    models: StepModels
    changes: dict[tuple[Job, int], tuple[Job, dict[str, object], int] | None] = field(
        default_factory=dict)
    """The setups' searches by job and memory size (:meth:`setup`)."""
    works: dict[Job, StepWork] = field(default_factory=dict)
    """The step work of each job a setup settles on, for its speed on every card."""

    @classmethod
    def of(cls, catalog: Catalog, request: EstimateRequest) -> _Sizer:
        shape, layers = resolve_model(catalog, request)
        job, chosen = resolved_job(shape, request)
        return cls(shape, layers, job, chosen, allowed_levers(request),
                   StepModels(as_built(shape, job.framework)))

    def setup(self, job: Job, spec: GpuSpec) -> Setup | None:
        """The cheapest setup that makes ``job`` fit ``spec`` (``app/engine/setup.py``); the
        search is made once per job and memory size in this sizing, the step work once per
        job settled on, the speed per card."""
        key = (job, spec.usable_bytes)
        if key not in self.changes:
            self.changes[key] = cheapest_change(self.models, job, spec, self.allowed)
        return setup_on(self.models.shape, self.changes[key], spec, self.layers, self.works)

    def systems(self, catalog: Catalog, request: EstimateRequest) -> tuple[SystemFit, ...]:
        """Every system (:func:`system_rows`), one engine call per card count, the job spread
        over each card count and each system's cards as it links them made once."""
        by_count: dict[int, list[SystemRecord]] = {}
        gpus = {gpu.slug: gpu for gpu in catalog.gpus}
        for system in catalog.systems:
            by_count.setdefault(system.gpu_count, []).append(system)
        fits: dict[str, CardFit] = {}
        linked: dict[str, GpuSpec] = {}
        jobs: dict[int, Job] = {}

        def held(system: SystemRecord, gpu: GpuRecord) -> SystemFit:
            job = jobs.get(system.gpu_count)
            if job is None:
                job = jobs[system.gpu_count] = system_job(self.job, system.gpu_count)
            if system.slug not in fits:
                group = [(other, gpus[other.gpu_slug]) for other in by_count[system.gpu_count]
                         if other.gpu_slug in gpus and not gpus[other.gpu_slug].comparison_only]
                specs = [system_link(gpu_spec(card), other) for other, card in group]
                held_fits = card_fits(self.shape, job, specs, layers=self.layers,
                                      models=self.models, with_fewest=False)
                for (other, _), spec, fit in zip(group, specs, held_fits, strict=True):
                    fits[other.slug], linked[other.slug] = fit, spec
            found = fits[system.slug]
            return SystemFit(
                system=system, gpu=gpu, gpus=system.gpu_count, sharding=job.sharding,
                fits=found.fits, total_bytes_per_gpu=found.total_bytes,
                free_bytes_per_gpu=found.free_bytes, max_batch_size=found.max_batch_size,
                warnings=found.warnings, training=found.training,
                setup=None if found.fits else self.setup(job, linked[system.slug]))

        return system_rows(catalog, request, held)


def _hours(training: Training | None) -> float | None:
    return training.hours if training is not None else None


def _card_offers(request: EstimateRequest, result: EstimateResult,
                 records: Sequence[GpuRecord | None]) -> list[advice.Offer]:
    cards = request.job.gpus
    offers: list[advice.Offer] = []
    for fit, record in zip(result.fits, records, strict=True):
        if fit.comparison_only:
            continue
        unit = record.price_eur_net if record is not None else None
        offers.append(advice.Offer(
            kind="gpu", slug=fit.gpu, price_eur_net=unit * cards if unit is not None else None,
            memory_bytes=fit.usable_bytes * cards, fits=fit.fits, setup=fit.setup,
            hours=_hours(fit.training if fit.fits or fit.setup is None
                         else fit.setup.training),
            price_indicative=record is not None and record.price_indicative))
    return offers


def _system_offers(request: EstimateRequest, systems: Sequence[SystemFit]
                   ) -> list[advice.Offer]:
    return [advice.Offer(
        kind="system", slug=row.system.slug, price_eur_net=row.system.price_eur_net,
        memory_bytes=row.gpu.usable_bytes * row.gpus, fits=row.fits, setup=row.setup,
        hours=_hours(row.training if row.fits or row.setup is None else row.setup.training),
        price_indicative=row.system.price_indicative)
        for row in systems
        if not (request.gpu_slugs and row.gpu.slug not in request.gpu_slugs)]


@dataclass(frozen=True, slots=True)
class SystemFit:
    """A configured system (n cards of one SKU) held against the job, per GPU."""

    system: SystemRecord
    gpu: GpuRecord
    gpus: int
    sharding: str
    fits: bool
    total_bytes_per_gpu: int
    free_bytes_per_gpu: int
    max_batch_size: int
    warnings: tuple[str, ...] = ()
    """The engine's warnings for one of its cards in this configuration."""
    training: Training | None = None
    """How fast the job trains on the system's cards together (app/engine/speed.py)."""
    setup: Setup | None = None
    """The cheapest standard settings that make the job fit the system when it does not fit
    as set (``app/engine/setup.py``)."""


@dataclass(frozen=True, slots=True)
class Sizing:
    """What the storefront shows: the estimate for the cards, and the systems."""

    result: EstimateResult
    systems: tuple[SystemFit, ...]


def system_job(job: Job, gpu_count: int) -> Job:
    """The job spread over a system's cards. A system with several cards shards the model
    states with ZeRO-3 / FSDP full shard unless the customer chose a sharding, because that is
    what makes a job that does not fit one card fit several (DGX Spark playbook's 70B LoRA)."""
    sharding = job.sharding if job.sharding != "none" or gpu_count == 1 else "zero3"
    offload = job.offload if sharding == "zero3" or job.offload != "optimizer+params" else "none"
    return with_changes(job, gpus=gpu_count, sharding=sharding, offload=offload)


def sizing(catalog: Catalog, request: EstimateRequest, *, cache: EstimateCache) -> Sizing:
    """The estimate against every active card, and every active system (remembered in
    ``cache``)."""
    job_limits.check(request.job)
    found = _remembered_sizing(catalog, request, cache)
    _count(request.job.method)
    return found


def system_rows(catalog: Catalog, request: CustomCardRequest,
                fit: Callable[[SystemRecord, GpuRecord], _Row]) -> tuple[_Row, ...]:
    """``fit(system, its card)`` for every active system whose card the catalog sells, in the
    catalog's order; none for a job held against an ad-hoc card (``--gpu-memory``). The one
    loop over systems both workloads size (training here, serving in
    :mod:`app.estimates.serving`), each with its own way to spread a job over the cards. The
    engine's refusal names its field (:func:`engine_invalid`)."""
    if request.gpu_memory_bytes is not None:
        return ()
    gpus = {gpu.slug: gpu for gpu in catalog.gpus}
    rows: list[_Row] = []
    for system in catalog.systems:
        gpu = gpus.get(system.gpu_slug)
        if gpu is None or gpu.comparison_only:
            continue
        try:
            rows.append(fit(system, gpu))
        except EngineError as error:
            raise engine_invalid(error) from error
    return tuple(rows)


PCIE5_X16_GBPS = 128.0
"""PCIe 5.0 x16, both directions together (the seed's convention, app/catalog/seed/gpus.json)."""


def system_link(spec: GpuSpec, system: SystemRecord) -> GpuSpec:
    """The card as the system links it: NVLink cards in several NVLink domains joined by PCIe
    (8 H200 NVL: two 4-way bridges) run their ring collectives at PCIe's speed."""
    text = system.gpu_interconnect.lower()
    if spec.interconnect == "nvlink" and "pcie" in text:
        return replace(spec, collective_link="pcie", interconnect_bandwidth_gbps=PCIE5_X16_GBPS)
    return spec
