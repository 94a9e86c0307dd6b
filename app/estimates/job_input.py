"""The one way from outside into the engine: a job as every surface takes it.

The API's bodies (``app/api/v1/schemas.py``), ``sizer estimate``'s and ``sizer serving``'s
options and the calculator's and the Serve page's forms each read their own syntax (JSON, dashed
options, short query names); each hands its values, under the names here (the API's field names,
the CLI's options without the dashes), to :meth:`JobInput.of` or :meth:`ServingJobInput.of`,
which refuse a surface that leaves a field out. :meth:`JobInput.job` and
:meth:`ServingJobInput.job` are the only places an engine job is made from a customer's input.

``tests/estimates/test_job_input.py`` holds the engine's jobs and every surface to these fields:
a :class:`~app.engine.Job` or ``ServingJob`` field no input field feeds, or an input field a
surface does not offer (and does not name in its list of fields it leaves at the default),
fails there. The defaults are the engine's own job defaults.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, fields
from typing import Any, Final, Self, cast

from app.engine import Job
from app.engine.activations import Attention
from app.engine.checkpointing import CheckpointingSetting
from app.engine.precision import AdapterDtype, BaseDtype, BnbVersion, Framework, Precision
from app.engine.serving import MIN_TOKENS_PER_S, KvDtype, Runtime, ServingJob
from app.engine.serving_weights import WeightFormat
from app.engine.sharding import ShardingImpl
from app.engine.states import Accounting, Method, MoeLora, Offload, Optimizer, Quant, Sharding
from app.estimates.service import EstimateRequest, library_switches

_JOB: Final = Job()
_SERVING: Final = ServingJob()

PUBLISHED: Final = "published"
"""The weights choice "as published" on every surface (page, API, CLI)."""

DERIVED_JOB_FIELDS: Final = {
    "loss_head": "chunked_loss",
    "bnb_saves_inputs": "bnb_version",
}
"""The engine's job fields a surface sets under another name: the loss head from the
``chunked_loss`` switch, bitsandbytes' saved inputs from its release (the other fields keep
their names)."""
ENGINE_ONLY_SERVING_FIELDS: Final = {
    "max_num_seqs": "vLLM's sequences per step, the card's default on every surface; only the "
    "calibration against vLLM's start-up logs sets it (app/estimates/serving.py, log_cases)",
}
"""Serving job fields no surface offers, and why."""


def lora_targets(value: str) -> str | tuple[str, ...]:
    """A preset (``all-linear``) as it is, module names separated by commas as a tuple."""
    if "," in value:
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value.strip()


class _SurfaceInput:
    """What both inputs share: made from a surface's values, every field accounted for."""

    __slots__ = ()

    @classmethod
    def of(cls, values: Mapping[str, Any], *, omitted: Collection[str] = ()) -> Self:
        """The input from a surface's values: each field given, or named in ``omitted`` (left
        at its default: options the surface does not offer). A field neither given nor
        omitted, or a name that is no field, is a surface out of step with this module
        (ValueError: a programming error, never a customer's)."""
        names = [item.name for item in fields(cast(Any, cls))]
        forgotten = [name for name in names if name not in values and name not in omitted]
        if forgotten:
            raise ValueError(f"{cls.__name__}: no value for {', '.join(forgotten)}")
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ValueError(f"{cls.__name__}: no field {', '.join(unknown)}")
        return cls(**values)


@dataclass(frozen=True, slots=True)
class JobInput(_SurfaceInput):
    """A training job as a customer sets it, on any surface."""

    method: Method = _JOB.method
    optimizer: Optimizer = _JOB.optimizer
    accounting: Accounting = _JOB.accounting
    lora_rank: int = _JOB.lora_rank
    lora_targets: str = "all-linear"
    """A preset or module names separated by commas (:func:`lora_targets`)."""
    lora_dropout: float = _JOB.lora_dropout
    quant: Quant | None = _JOB.quant
    batch_size: int = _JOB.batch_size
    seq_len: int = _JOB.seq_len
    gradient_checkpointing: CheckpointingSetting = "auto"
    """auto (the estimates service settles it, :func:`app.engine.checkpointing.choose`), on
    or off."""
    allow_method_change: bool = False
    """Whether a setup may turn LoRA into QLoRA (the service's ``allowed_levers``)."""
    attention: Attention = _JOB.attention
    gpus: int = _JOB.gpus
    sharding: Sharding = _JOB.sharding
    sharding_impl: ShardingImpl = _JOB.sharding_impl
    moe_lora: MoeLora = _JOB.moe_lora
    offload: Offload = _JOB.offload
    chunked_loss: bool = _JOB.loss_head == "chunked"
    fused_optimizer_step: bool = _JOB.fused_optimizer_step
    activation_offload: bool = _JOB.activation_offload
    expandable_segments: bool = _JOB.expandable_segments
    gradient_accumulation: int = _JOB.gradient_accumulation
    dataset_tokens: int = _JOB.dataset_tokens
    epochs: int = _JOB.epochs
    precision: Precision | None = _JOB.precision
    adapter_dtype: AdapterDtype | None = _JOB.adapter_dtype
    base_dtype: BaseDtype | None = _JOB.base_dtype
    framework: Framework = _JOB.framework
    bnb_version: BnbVersion = "current"

    def job(self) -> Job:
        """The engine's job: the one place one is made from a customer's input. The
        bitsandbytes and sharding switches are checked as every surface checks them
        (:func:`~app.estimates.service.library_switches`, InvalidInput naming the field)."""
        switches = library_switches(bnb_version=self.bnb_version, method=self.method,
                                    sharding_impl=self.sharding_impl, sharding=self.sharding)
        return Job(
            method=self.method, optimizer=self.optimizer, accounting=self.accounting,
            lora_rank=self.lora_rank, lora_targets=lora_targets(self.lora_targets),
            lora_dropout=self.lora_dropout, quant=self.quant, batch_size=self.batch_size,
            seq_len=self.seq_len, gradient_checkpointing=self.gradient_checkpointing == "on",
            attention=self.attention, gpus=self.gpus, sharding=self.sharding,
            offload=self.offload, loss_head="chunked" if self.chunked_loss else "standard",
            fused_optimizer_step=self.fused_optimizer_step,
            activation_offload=self.activation_offload,
            gradient_accumulation=self.gradient_accumulation, precision=self.precision,
            adapter_dtype=self.adapter_dtype, base_dtype=self.base_dtype,
            framework=self.framework, bnb_saves_inputs=switches.bnb_saves_inputs,
            sharding_impl=switches.sharding_impl, expandable_segments=self.expandable_segments,
            moe_lora=self.moe_lora, dataset_tokens=self.dataset_tokens, epochs=self.epochs,
        )

    def request(self, *, model_slug: str | None = None,
                model_config: Mapping[str, Any] | None = None, gpu_slugs: tuple[str, ...] = (),
                gpu_memory_bytes: int | None = None, compare_slugs: tuple[str, ...] = (),
                with_levers: bool = True) -> EstimateRequest:
        """The estimates service's request for this job on a model and cards."""
        return EstimateRequest(
            job=self.job(), model_slug=model_slug, model_config=model_config,
            gpu_slugs=gpu_slugs, with_levers=with_levers, gpu_memory_bytes=gpu_memory_bytes,
            compare_slugs=compare_slugs, checkpointing=self.gradient_checkpointing,
            allow_method_change=self.allow_method_change)


@dataclass(frozen=True, slots=True)
class ServingJobInput(_SurfaceInput):
    """A serving job as a customer sets it, on any surface."""

    weights: str = PUBLISHED
    """``published`` (the checkpoint's own format, the service's ``published_weights``) or a
    format of ``serving_weights.WEIGHT_FORMATS``."""
    kv_cache: KvDtype = _SERVING.kv_cache
    context: int = _SERVING.context
    concurrency: int = _SERVING.concurrency
    gpus: int = _SERVING.gpus
    runtime: Runtime = _SERVING.runtime
    gpu_memory_utilization: float | None = _SERVING.gpu_memory_utilization
    max_num_batched_tokens: int | None = _SERVING.max_num_batched_tokens
    min_tokens_per_s: float = MIN_TOKENS_PER_S

    @property
    def published(self) -> bool:
        return self.weights == PUBLISHED

    def job(self) -> ServingJob:
        """The engine's serving job (16-bit weights where ``published`` stands: the serving
        service's ``published_weights``, which :attr:`published` sets, settles the checkpoint's
        format in ``serving.resolved_job``)."""
        weights = "bf16" if self.published else cast(WeightFormat, self.weights)
        return ServingJob(
            weights=weights, kv_cache=self.kv_cache, context=self.context,
            concurrency=self.concurrency, gpus=self.gpus, runtime=self.runtime,
            gpu_memory_utilization=self.gpu_memory_utilization,
            max_num_batched_tokens=self.max_num_batched_tokens,
            min_tokens_per_s=float(self.min_tokens_per_s),
        )


JOB_INPUT_FIELDS: Final = tuple(item.name for item in fields(JobInput))
SERVING_INPUT_FIELDS: Final = tuple(item.name for item in fields(ServingJobInput))
CALCULATOR_OMITS: Final = ("accounting", "lora_dropout", "chunked_loss", "fused_optimizer_step",
                           "activation_offload", "gradient_accumulation")
"""The training fields the calculator page does not offer: there they keep their defaults, and
a job the API is asked with any of them set has no storefront link."""
SERVE_PAGE_OMITS: Final = ("gpu_memory_utilization", "max_num_batched_tokens")
"""The serving fields the Serve page does not offer (runtime settings only the API and the CLI
take)."""

