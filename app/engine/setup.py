"""The cheapest setup that works: the standard settings that make a job fit a card.

A buyer asks "which card", not "which card at my exact settings": most jobs that miss a card by
a few gigabytes fit it as the recipes run them. For a card the job does not fit as set, this
module tries the standard settings the customer has not fixed, in this order (cheapest in
speed first, as the levers' costs in :mod:`app.engine.estimate` say):

1. ``gradient_checkpointing``: recompute each layer in the backward (about 20-33 % slower);
2. ``micro_batch``: a smaller micro-batch with gradient accumulation keeping the effective
   batch (``batch_size`` x ``gradient_accumulation``; fewer tokens per step, slower);
3. ``optimizer_8bit``: bitsandbytes' 8-bit AdamW states (``adamw_8bit``; about the same speed);
4. ``offload_optimizer``: optimizer states in CPU memory (ZeRO-Offload; much slower step);
5. ``qlora``: LoRA on a 4-bit base, only when the customer allows the method to change.

ZeRO-3 / FSDP over a system's GPUs is the service's own spread of a job over a system
(``app/estimates/service.py``, ``system_job``), so a system is held against the sharded job
before any of these.

The setup is the first combination that fits, fewest changes first and, among as many, the
earliest in the order above: every fitting setup of fewer changes is found before one of more.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Final

from app.engine import framework_litgpt as litgpt
from app.engine.estimate import Setup
from app.engine.job import GpuSpec, Job
from app.engine.job_speed import job_training
from app.engine.shapes import ModelShape
from app.engine.speed import AttentionLayers, StepWork
from app.engine.step_model import StepModels

LEVERS: Final = ("gradient_checkpointing", "micro_batch", "optimizer_8bit",
                 "offload_optimizer", "qlora")
"""The standard settings, in the order they are tried."""


def applicable(job: Job, allowed: Sequence[str]) -> tuple[str, ...]:
    """The levers of ``allowed`` that change something for this job, in :data:`LEVERS`'s
    order."""
    useful = {
        "gradient_checkpointing": not job.gradient_checkpointing,
        "micro_batch": job.batch_size > 1,
        "optimizer_8bit": job.optimizer in ("adamw", "paged_adamw_32bit"),
        "offload_optimizer": job.offload == "none",
        "qlora": job.method == "lora" and job.quant is None,
    }
    return tuple(lever for lever in LEVERS if lever in allowed and useful[lever])


def _changes(levers: Sequence[str]) -> dict[str, object]:
    changes: dict[str, object] = {}
    for lever in levers:
        if lever == "gradient_checkpointing":
            changes["gradient_checkpointing"] = True
        elif lever == "optimizer_8bit":
            changes["optimizer"] = "adamw_8bit"
        elif lever == "offload_optimizer":
            changes["offload"] = "optimizer"
        elif lever == "qlora":
            changes["method"] = "qlora"
    return changes


def combinations(levers: Sequence[str]) -> Iterator[tuple[str, ...]]:
    """Every non-empty combination of ``levers``, fewest first, each in the levers' order."""
    for size in range(1, len(levers) + 1):
        yield from itertools.combinations(levers, size)


def attempt(models: StepModels, job: Job, gpu: GpuSpec, levers: Sequence[str]
            ) -> tuple[Job, dict[str, object], int] | None:
    """The job with ``levers`` applied, its changes and its memory per GPU, when it fits
    ``gpu``; None otherwise. ``micro_batch`` takes the largest micro-batch below the job's that
    divides the effective batch and fits, and the accumulation that keeps the effective batch
    (each held with its own accumulation: a step can hold a previous micro-step's tensors)."""
    changes = _changes(levers)
    changed = models.variant(job, **changes)
    usable = gpu.usable_bytes
    if "micro_batch" not in levers:
        total = models.total_bytes(changed)
        return (changed, changes, total) if total <= usable else None
    effective = job.batch_size * job.gradient_accumulation
    for batch in range(job.batch_size - 1, 0, -1):
        if effective % batch:
            continue
        smaller = models.variant(changed, batch_size=batch,
                                 gradient_accumulation=effective // batch)
        total = models.total_bytes(smaller)
        if total <= usable:
            return smaller, {**changes, "batch_size": batch,
                             "gradient_accumulation": effective // batch}, total
    return None


def cheapest_change(models: StepModels, job: Job, gpu: GpuSpec, allowed: Sequence[str]
                    ) -> tuple[Job, dict[str, object], int] | None:
    """What :func:`cheapest_setup` settles on before the speed: the job changed, its changes
    and its memory per GPU (None when nothing fits). It depends on the card's memory alone, so
    a caller may share it between cards of one size."""
    for combination in combinations(applicable(job, allowed)):
        found = attempt(models, job, gpu, combination)
        if found is not None:
            return found
    return None


def cheapest_setup(shape: ModelShape, job: Job, gpu: GpuSpec, allowed: Sequence[str], *,
                   layers: AttentionLayers | None = None,
                   models: StepModels | None = None) -> Setup | None:
    """The first combination of the ``allowed`` levers (fewest first, in :data:`LEVERS`'s
    order) that makes ``job`` fit ``gpu``, with its memory and speed; None when none does.
    Every combination is tried (at most 31 step models, each well under a millisecond): the
    levers do not all save memory on every model (QLoRA keeps a fused MoE's experts 16-bit,
    fp32 after PEFT's prepare), so all of them together failing proves nothing."""
    built = litgpt.as_built(shape, job.framework)
    models = models or StepModels(built)
    return setup_on(built, cheapest_change(models, job, gpu, allowed), gpu, layers)


def setup_on(built: ModelShape, found: tuple[Job, dict[str, object], int] | None,
             gpu: GpuSpec, layers: AttentionLayers | None,
             works: dict[Job, StepWork] | None = None) -> Setup | None:
    """The setup :func:`cheapest_change` found, with its speed on ``gpu`` (``built``: the
    shape as the job's framework builds it; ``works``: where a caller keeps the changed
    jobs' step work for its other cards, :func:`job_training`)."""
    if found is None:
        return None
    changed, changes, total = found
    return Setup(changes=dict(changes), total_bytes=total,
                 training=job_training(built, changed, gpu, layers, works))
