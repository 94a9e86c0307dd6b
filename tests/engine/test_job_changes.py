"""``with_changes`` builds the job ``dataclasses.replace`` builds, ``StepModels.total_bytes``
is the step model's own total, and the parts one sizing's step models share (``StepParts``) and
the dtypes ``resolve`` keeps are what each computes afresh: the sizing's fast paths change no
figure."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import pickle

import pytest

from app.engine import EngineError, Job, precision, states
from app.engine.activations import ATTENTIONS, LOSS_HEADS
from app.engine.job import JOB_FIELDS, with_changes
from app.engine.precision import RESOLVED_KEPT, resolve
from app.engine.sharding import SHARDING_IMPLS
from app.engine.step_model import StepModels, StepParts, step_model
from tests.engine.reference import reference_shape

CHANGES = [
    {},
    {"gpus": 4, "sharding": "zero3"},
    {"method": "qlora", "optimizer": "adamw_8bit"},
    {"batch_size": 2, "gradient_accumulation": 4, "gradient_checkpointing": True},
    {"offload": "optimizer", "loss_head": "chunked", "epochs": 3},
]


@pytest.mark.parametrize("changes", CHANGES)
def test_with_changes_is_replace(changes: dict[str, object]) -> None:
    job = Job(method="full", seq_len=4096, batch_size=4)
    made = with_changes(job, **changes)
    expected = dataclasses.replace(job, **changes)  # type: ignore[arg-type]
    assert made == expected
    assert hash(made) == hash(expected)
    assert [getattr(made, name) for name in JOB_FIELDS] == [
        getattr(expected, name) for name in JOB_FIELDS]
    assert job == Job(method="full", seq_len=4096, batch_size=4)  # the original untouched


def test_a_job_keeps_its_own_hash_and_its_variants_their_own() -> None:
    """The hash a job keeps (``Job.__hash__``) is that of its settings, however the job was
    made; a variant of a hashed job, a copy and a pickled job compute theirs afresh."""
    job = Job(method="full", seq_len=4096)
    assert hash(job) == hash(job) == hash(tuple(getattr(job, name) for name in JOB_FIELDS))
    variant = with_changes(job, gpus=4, sharding="zero3")
    assert hash(variant) == hash(Job(method="full", seq_len=4096, gpus=4, sharding="zero3"))
    assert hash(variant) != hash(job)
    assert {job: 1, variant: 2}[with_changes(variant, gpus=1, sharding="none")] == 1
    for twin in (copy.copy(job), pickle.loads(pickle.dumps(job))):
        assert twin == job and hash(twin) == hash(job)
    assert dataclasses.fields(job) == dataclasses.fields(Job)  # the kept hash is no setting


def test_with_changes_refuses_an_unknown_setting() -> None:
    with pytest.raises(TypeError, match="no_such_setting"):
        with_changes(Job(), no_such_setting=1)


def test_step_models_total_is_the_step_model_s_total() -> None:
    llama_8b = reference_shape("llama-3.1-8b")
    models = StepModels(llama_8b)
    for job in (Job(), Job(method="full", batch_size=4), Job(method="qlora", seq_len=8192)):
        for gpus in (1, 2, 8):
            sharded = models.sharded_job(job, gpus)
            expected = step_model(llama_8b, sharded).total_bytes(job.batch_size, job.seq_len)
            assert models.total_bytes(sharded) == expected
            assert models.total_bytes(sharded) == expected  # remembered: the same


def test_a_variant_is_made_once_and_is_with_changes_job() -> None:
    models = StepModels(reference_shape("llama-3.1-8b"))
    job = Job(method="full", batch_size=4)
    variant = models.variant(job, optimizer="adamw_8bit", gradient_checkpointing=True)
    assert variant == with_changes(job, optimizer="adamw_8bit", gradient_checkpointing=True)
    assert models.variant(job, optimizer="adamw_8bit", gradient_checkpointing=True) is variant
    assert models.variant(job, optimizer="adamw_8bit") != variant


VARIED: dict[str, tuple[object, ...]] = {
    "method": states.METHODS, "optimizer": states.OPTIMIZERS,
    "accounting": states.ACCOUNTINGS, "lora_rank": (8, 64),
    "lora_targets": ("attention", "mlp"), "lora_dropout": (0.1,), "quant": states.QUANTS,
    "batch_size": (4,), "seq_len": (512, 8192), "gradient_checkpointing": (True,),
    "attention": ATTENTIONS, "gpus": (2, 8), "sharding": states.SHARDINGS,
    "offload": states.OFFLOADS, "loss_head": LOSS_HEADS, "fused_optimizer_step": (True,),
    "activation_offload": (True,), "gradient_accumulation": (4,),
    "precision": precision.PRECISIONS, "adapter_dtype": precision.ADAPTER_DTYPES,
    "base_dtype": precision.BASE_DTYPES, "framework": precision.FRAMEWORKS,
    "bnb_saves_inputs": (True,), "sharding_impl": SHARDING_IMPLS,
    "expandable_segments": (True,), "moe_lora": states.MOE_LORAS,
}
"""Other values of every setting a step model may read (the rest only time the job)."""

BASES = (Job(), Job(method="qlora", gpus=4, sharding="zero3"),
         Job(method="full", gpus=8, sharding="zero3", sharding_impl="fsdp"))


def _built(build: object) -> object:
    try:
        return build()  # type: ignore[operator]
    except EngineError as error:
        return type(error), str(error)


@pytest.mark.parametrize("slug", ["llama-3.2-3b", "mixtral-8x7b"])
def test_step_models_sharing_their_parts_build_what_each_job_builds_alone(slug: str) -> None:
    """Every variant of every setting, built by one ``StepModels`` whose parts all the others
    filled first, is the step model that job builds on its own; the parts are kept per setup
    and recipe, so the variants that differ only in their cards share them."""
    shape = reference_shape(slug)
    models = StepModels(shape)
    for base in BASES:
        for job in [base, *(with_changes(base, **{name: value})
                            for name, values in VARIED.items() for value in values)]:
            assert _built(lambda job=job: models.get(job)) == _built(
                lambda job=job: step_model(shape, job)), job
    spread = StepModels(shape)
    for gpus in range(1, 9):
        spread.get(Job(method="full", gpus=gpus, sharding="zero3"))
    assert len(spread.parts.profiles) == 1
    assert len(spread.parts.states) == 1
    assert len(models.parts.profiles) < 100  # the setups tried, not one per job


def test_parts_of_another_shape_are_computed_not_kept() -> None:
    parts = StepParts(reference_shape("llama-3.2-3b"))
    other = reference_shape("llama-3.1-8b")
    assert StepModels(other).get(Job()) == step_model(other, Job(), parts)
    assert not parts.profiles
    assert not parts.states


def test_resolve_keeps_what_it_resolves_afresh_within_its_bound() -> None:
    resolve.cache_clear()
    for choice in itertools.product(
            precision.FRAMEWORKS, states.METHODS, (None, *precision.PRECISIONS),
            (None, *precision.ADAPTER_DTYPES), (None, *precision.BASE_DTYPES)):
        assert resolve(*choice) == resolve.__wrapped__(*choice)
        assert resolve(*choice) == resolve.__wrapped__(*choice)  # kept: the same
    assert resolve.cache_info().currsize == RESOLVED_KEPT
