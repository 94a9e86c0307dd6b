"""``with_changes`` builds the job ``dataclasses.replace`` builds, and ``StepModels.total_bytes``
is the step model's own total: the sizing's fast paths change no figure."""

from __future__ import annotations

import dataclasses

import pytest

from app.engine import Job
from app.engine.job import JOB_FIELDS, with_changes
from app.engine.step_model import StepModels, step_model
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
