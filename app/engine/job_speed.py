"""What :mod:`speed` needs of a job: the training-speed view of one job on one shape, and the
job's speed on one card."""

from __future__ import annotations

import dataclasses

from app.engine import framework_litgpt as litgpt
from app.engine import framework_unsloth as unsloth
from app.engine.activations import ActivationSetup, activation_profile, regime_for
from app.engine.job import GpuSpec, Job, stored_bytes_per_param
from app.engine.shapes import ModelShape
from app.engine.speed import (
    AttentionLayers,
    SpeedJob,
    StepWork,
    Training,
    step_work,
    training,
)
from app.engine.states import lora_target_specs, packed_specs
from app.engine.step_model import model_states


def speed_job(shape: ModelShape, job: Job, trainable_params: int | None = None) -> SpeedJob:
    """What :mod:`speed` needs of ``job`` on ``shape`` (its shape as the framework builds it);
    ``trainable_params`` where the caller has counted them (:func:`model_states`)."""
    job = unsloth.as_run(job)
    shape = litgpt.as_built(shape, job.framework)
    dtypes = job.training_precision
    if trainable_params is None:
        # The whole model's states, unsharded and on the card (offload is a traffic term of its
        # own in :mod:`speed`; parameter offload is valid only beside ZeRO-3, which this drops).
        trainable_params = model_states(shape, dataclasses.replace(job, offload="none"), gpus=1,
                                        sharding="none").trainable_params
    lora = job.lora
    saved = 0
    if job.activation_offload:
        saved = activation_profile(shape, ActivationSetup(
            method=job.method, regime=regime_for(job.method, job.accounting),
            attention=job.attention, gradient_checkpointing=job.gradient_checkpointing,
            lora=lora, loss_head=job.loss_head)).saved_per_token
    return SpeedJob(
        method=job.method,
        trainable_linear=job.method == "full",
        lora_specs=() if lora is None else lora_target_specs(shape, lora.targets, lora.moe_lora),
        lora_rank=job.lora_rank,
        packed_specs=packed_specs(shape, job.moe_lora) if job.method == "qlora" else (),
        batch_size=job.batch_size,
        seq_len=job.seq_len,
        gradient_checkpointing=job.gradient_checkpointing,
        attention=job.attention,
        gpus=job.gpus,
        sharding=job.sharding,
        offload=job.offload,
        activation_offload=job.activation_offload,
        gradient_accumulation=job.gradient_accumulation,
        optimizer=job.optimizer,
        lora_dropout=job.method != "full" and job.lora_dropout > 0,
        master_bytes=2 if dtypes.precision == "bf16" else 4,
        fp32_base=job.method == "lora" and dtypes.base_dtype == "fp32",
        adapter_bytes=dtypes.adapter_bytes,
        trainable_params=trainable_params,
        stored_bytes_per_param=stored_bytes_per_param(job),
        saved_bytes_per_token=saved,
    )


def job_training(shape: ModelShape, job: Job, gpu: GpuSpec,
                 layers: AttentionLayers | None = None,
                 works: dict[Job, StepWork] | None = None) -> Training | None:
    """The job's speed on ``gpu`` (speed.py), or None where the card has no speed figures.
    ``works``: where a caller keeps the job's :func:`step_work` on ``shape`` and ``layers``,
    which no card changes, for the other cards it holds the same job against."""
    work = works.get(job) if works is not None else None
    if work is None:
        work = step_work(shape, speed_job(shape, job), layers)
        if works is not None:
            works[job] = work
    return training(work, gpu.speed, dataset_tokens=job.dataset_tokens, epochs=job.epochs)
