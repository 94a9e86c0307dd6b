"""One estimate: a model, a way of training it, and the cards it is held against.

This composes :mod:`shapes`, :mod:`states`, :mod:`activations`, :mod:`overhead`, :mod:`fit` and
:mod:`capabilities` into one plain result. The web pages, the partner API and the CLI all call
:func:`estimate` through the estimates service; none of them computes memory itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from app.engine import framework_litgpt as litgpt
from app.engine import framework_unsloth as unsloth
from app.engine.assumptions import Assumption, assumption_items, assumptions
from app.engine.capabilities import capabilities
from app.engine.checkpointing import Checkpointing, as_set
from app.engine.fit import StepModel, StepTotals
from app.engine.job import GpuSpec, Job, headroom_bytes, validate
from app.engine.job_speed import speed_job
from app.engine.levers import (
    Lever,
    fewest_cards_zero3,
    lever_options,
    lever_pairs,
    levers_for,
)
from app.engine.shapes import ModelShape
from app.engine.speed import AttentionLayers, StepWork, Training, step_work, training
from app.engine.states import ACCOUNTINGS, ModelStates
from app.engine.step_model import StepModels, model_states, single_gpu_job_states

# Semantic: major when a field's meaning changes, minor when the arithmetic changes; what each
# version changed is in CHANGELOG.md ("Engine versions").
ENGINE_VERSION = "1.26.1"
"""Bumped whenever a figure for the same input can change; returned with every result."""


# Warnings are part of the JSON document (API, CLI) as these English sentences; surfaces that
# translate them compare against these names, never against the wording.
UNIFIED_MEMORY_WARNING = (
    "unified memory: the operating system and CPU processes share it; the usable "
    "figure already leaves a reserve for them"
)
ZERO3_WITHOUT_NVLINK_WARNING = (
    "zero3 gathers every layer's parameters over the GPU link each step; this card "
    "has no NVLink, so that traffic goes over PCIe or the network"
)
PAGED_OPTIMIZER_WARNING = (
    "paged optimizers move states to CPU memory only under memory pressure; they are "
    "counted on the GPU here"
)

Fidelity = Literal["exact", "approximate"]
"""How the parameters were counted: see :attr:`EstimateResult.fidelity`."""


@dataclass(frozen=True, slots=True)
class Breakdown:
    weights: int
    adapter: int
    gradients: int
    optimizer: int
    activations: int
    overhead: int
    total: int


@dataclass(frozen=True, slots=True)
class Setup:
    """The standard settings that make a job fit a card it does not fit as set
    (:mod:`app.engine.setup`): what changes, the memory per GPU with them, and the speed."""

    changes: dict[str, object]
    total_bytes: int
    training: Training | None


@dataclass(frozen=True, slots=True)
class Recommendation:
    """The offer to buy: the cheapest priced card or system that fits the job as set or with a
    :class:`Setup` (the estimates service ranks the catalog's offers)."""

    kind: str
    """``gpu`` (``cards`` loose cards) or ``system``."""
    slug: str
    setup: Setup | None
    """None when it fits as set."""
    price: str | None
    """Net EUR for the offer (cards x unit price, or the system's), as the API writes money;
    None: price on request."""
    hours: float | None
    """The training time for the customer's data on it (with the setup), where known."""
    price_indicative: bool = False
    """The price is a public, dated list price from the seed catalog, not yet confirmed by
    the shop's staff (shown "indicative")."""


@dataclass(frozen=True, slots=True)
class CardFit:
    gpu: str
    name: str
    usable_bytes: int
    total_bytes: int
    free_bytes: int
    fits: bool
    max_batch_size: int
    max_seq_len: int
    fewest_cards_zero3: int | None
    formats: tuple[str, ...]
    warnings: tuple[str, ...]
    training: Training | None = None
    """How fast the job trains on this card (speed.py); None without the card's figures."""
    comparison_only: bool = False
    """A card the shop does not sell, named to compare with."""
    setup: Setup | None = None
    """The cheapest standard settings that make the job fit when it does not fit as set
    (the estimates service searches them); None when it fits as set or cannot fit."""

    @property
    def roomy(self) -> bool:
        """Fits with :func:`headroom_bytes` to spare (not in the JSON: derived)."""
        return self.fits and self.free_bytes >= headroom_bytes(self.usable_bytes)


@dataclass(frozen=True, slots=True)
class ParamCounts:
    total: int
    trainable: int
    linear: int
    other: int
    active: int


@dataclass(frozen=True, slots=True)
class EstimateResult:
    engine_version: str
    model_type: str
    params: ParamCounts
    per_gpu_bytes: Breakdown
    model_states_bytes: int
    model_states_by_accounting: dict[str, int]
    peak_phase: str
    peak_live_bytes: int
    # What PyTorch's counters would show for the step (overhead.py): the live-tensor peak with
    # the model states as its floor (max_memory_allocated) and that plus the caching
    # allocator's reserve (max_memory_reserved). per_gpu_bytes.total adds the CUDA context.
    allocated_bytes: int
    reserved_bytes: int
    phases: dict[str, int]
    fits: tuple[CardFit, ...]
    levers: tuple[Lever, ...]
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...] = field(default=())
    assumption_items: tuple[Assumption, ...] = field(default=())
    """``assumptions`` as keys and values, for pages that translate them (not in the JSON)."""
    fidelity: Fidelity = "exact"
    """``exact``: the parameters counted as transformers builds the model; ``approximate``: a
    model type no builder knows, counted from its standard fields
    (``architectures/approximate.py``)."""
    approximated_from: tuple[str, ...] = ()
    """The config fields an approximate count was made from (empty when exact)."""
    recommendation: Recommendation | None = None
    """What to buy (the estimates service, from the catalog's prices); None from the engine
    alone, or when no offer fits even with a setup."""
    checkpointing: Checkpointing = field(default=as_set(False))
    """Gradient checkpointing as asked and as used (``auto``: what the rule chose and why,
    :mod:`app.engine.checkpointing`); the engine itself reports the job's as set."""

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-ready data: the document `sizer estimate --format json` prints."""
        data = plain(self)
        assert isinstance(data, dict)
        del data["assumption_items"]
        return data


def plain(value: object) -> object:
    """Dataclasses as dicts, tuples as lists, recursively. ``dataclasses.asdict`` does the same
    but deep-copies every leaf: it was half the API's per-estimate time, for immutable data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


def estimate(
    shape: ModelShape,
    job: Job,
    gpus: Sequence[GpuSpec],
    *,
    with_levers: bool = True,
    layers: AttentionLayers | None = None,
    models: StepModels | None = None,
    with_fewest: bool = True,
) -> EstimateResult:
    """Memory per GPU for ``job`` on ``shape``, held against each card in ``gpus``, and how
    fast it trains on each (``layers``: which layers attend how, from the config's attention
    layout; None: every non-mixer layer in full). ``models``: step models of this shape as
    built, shared by a caller between calls for variants of one job. ``with_fewest`` False:
    ``fewest_cards_zero3`` left None (a job already spread over a system's cards)."""
    given = shape
    shape, job, models, states, model, totals, fits = _fitted(shape, job, gpus, layers,
                                                              models, with_fewest)
    levers = _levers(models, job, gpus, fits) if with_levers else ()
    by_accounting: dict[str, int] = {
        acc: single_gpu_job_states(shape, job, acc).total_bytes for acc in ACCOUNTINGS
    }
    return EstimateResult(
        engine_version=ENGINE_VERSION,
        model_type=shape.model_type,
        params=ParamCounts(
            total=shape.total_params,
            trainable=states.trainable_params,
            linear=shape.split.linear,
            other=shape.total_params - shape.split.linear,
            active=shape.active_params,
        ),
        per_gpu_bytes=_breakdown(states, model, totals),
        model_states_bytes=states.total_bytes,
        model_states_by_accounting=by_accounting,
        peak_phase=totals.peak_moment.phase,
        peak_live_bytes=totals.peak_live_bytes,
        allocated_bytes=totals.allocated_bytes,
        reserved_bytes=totals.reserved_bytes,
        phases={m.name: m.live(job.batch_size, job.seq_len) for m in model.moments},
        fits=fits,
        levers=levers,
        assumptions=assumptions(given, job),
        warnings=_job_warnings(shape, job),
        assumption_items=assumption_items(given, job),
        fidelity="exact" if shape.approximation is None else "approximate",
        approximated_from=() if shape.approximation is None else shape.approximation.fields,
        checkpointing=as_set(job.gradient_checkpointing),
    )


def card_fits(
    shape: ModelShape,
    job: Job,
    gpus: Sequence[GpuSpec],
    *,
    layers: AttentionLayers | None = None,
    models: StepModels | None = None,
    with_fewest: bool = True,
) -> tuple[CardFit, ...]:
    """:func:`estimate`'s ``fits`` alone, the same figures, without the rest of its answer
    (the breakdown, the accountings, the assumptions): for a caller that reads only the
    cards, as the service's systems do."""
    return _fitted(shape, job, gpus, layers, models, with_fewest)[-1]


def _fitted(
    shape: ModelShape,
    job: Job,
    gpus: Sequence[GpuSpec],
    layers: AttentionLayers | None,
    models: StepModels | None,
    with_fewest: bool,
) -> tuple[ModelShape, Job, StepModels, ModelStates, StepModel, StepTotals,
           tuple[CardFit, ...]]:
    """The job checked and as it runs, the shape as built, the step models, the model
    states, the job's step model, its totals and its fit on each card."""
    validate(shape, job)
    job = unsloth.as_run(job)
    shape = litgpt.as_built(shape, job.framework)
    if models is None or models.shape != shape:
        models = StepModels(shape)
    states = model_states(shape, job)
    model = models.get(job)
    totals = model.totals(job.batch_size, job.seq_len)
    total = totals.total_bytes
    work = step_work(shape, speed_job(shape, job, states.trainable_params), layers)
    by_memory: dict[int, _MemoryFit] = {}
    fits = tuple(_card_fit(models, job, model, total, gpu, work, by_memory, with_fewest)
                 for gpu in gpus)
    return shape, job, models, states, model, totals, fits


def _levers(models: StepModels, job: Job, gpus: Sequence[GpuSpec],
            fits: tuple[CardFit, ...]) -> tuple[Lever, ...]:
    """The levers for every card the job does not fit as set (levers.py)."""
    levers: list[Lever] = []
    if not all(fit.fits for fit in fits):
        options = lever_options(job)
        pairs = lever_pairs(job, options)
        by_memory: dict[int, list[Lever]] = {}  # a card's levers depend on its memory alone
        for fit, gpu in zip(fits, gpus, strict=True):
            if fit.fits:
                continue
            found = by_memory.get(gpu.usable_bytes)
            if found is None:
                found = by_memory[gpu.usable_bytes] = levers_for(models, job, gpu, options, pairs)
            levers.extend(dataclasses.replace(lever, gpu=gpu.slug, change=dict(lever.change))
                          for lever in found)
    return tuple(levers)


def _breakdown(states: ModelStates, model: StepModel, totals: StepTotals) -> Breakdown:
    """The per-GPU bytes by kind. Resident states: the article's model states less autocast's
    transient bf16 copies (hf accounting only), which are counted with the activations, where
    PyTorch's MemTracker finds them too (tools/calibrate/README.md)."""
    resident_bytes = model.model_states_bytes
    activations = max(0, totals.peak_live_bytes - resident_bytes)
    total = totals.total_bytes
    return Breakdown(
        weights=states.weights_bytes - (states.total_bytes - resident_bytes),
        adapter=states.adapter_bytes,
        gradients=states.gradients_bytes,
        optimizer=states.optimizer_bytes,
        activations=activations,
        overhead=total - resident_bytes - activations,
        total=total,
    )


@dataclass(frozen=True, slots=True)
class _MemoryFit:
    """What a card's fit takes from its memory alone: cards of one size share it."""

    max_batch_size: int
    max_seq_len: int
    fewest_cards_zero3: int | None


def _card_fit(
    models: StepModels, job: Job, model: StepModel, total: int, gpu: GpuSpec, work: StepWork,
    by_memory: dict[int, _MemoryFit], with_fewest: bool = True,
) -> CardFit:
    usable = gpu.usable_bytes
    sized = by_memory.get(usable)
    if sized is None:
        sized = by_memory[usable] = _MemoryFit(
            model.max_batch_size(usable, job.seq_len),
            model.max_seq_len(usable, job.batch_size, models.shape.max_positions),
            fewest_cards_zero3(models, job, usable) if with_fewest else None)
    warnings: list[str] = []
    if gpu.unified_memory:
        warnings.append(UNIFIED_MEMORY_WARNING)
    if job.sharding == "zero3" and job.gpus > 1 and gpu.interconnect != "nvlink":
        warnings.append(ZERO3_WITHOUT_NVLINK_WARNING)
    return CardFit(
        gpu=gpu.slug,
        name=gpu.name,
        usable_bytes=usable,
        total_bytes=total,
        free_bytes=usable - total,
        fits=total <= usable,
        max_batch_size=sized.max_batch_size,
        max_seq_len=sized.max_seq_len,
        fewest_cards_zero3=sized.fewest_cards_zero3,
        formats=capabilities(gpu.compute_capability).formats,
        warnings=tuple(warnings),
        training=training(work, gpu.speed, dataset_tokens=job.dataset_tokens,
                          epochs=job.epochs),
        comparison_only=gpu.comparison_only,
    )


def _job_warnings(shape: ModelShape, job: Job) -> tuple[str, ...]:
    warnings: list[str] = []
    if job.optimizer.startswith("paged_"):
        warnings.append(PAGED_OPTIMIZER_WARNING)
    return tuple(warnings)


