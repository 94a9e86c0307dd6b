"""Training precision (issue 15, point 2): pure bf16, bf16 adapters, an fp32 base and the
framework presets, as properties over every model and setting and as worked figures."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine import EngineError, Job, estimate
from app.engine.precision import FRAMEWORK_PRESETS, FRAMEWORKS, PURE_BF16
from app.engine.step_model import model_states, step_model
from tests.engine.reference import reference_shape
from tests.engine.test_properties import FAST, jobs, slugs

adapter_jobs = jobs.filter(lambda job: job.method != "full")


def _totals(slug: str, job: Job) -> tuple[int, int, int]:
    shape = reference_shape(slug)
    model = step_model(shape, job)
    b, s = job.batch_size, job.seq_len
    return (model_states(shape, job).total_bytes, model.totals(b, s).peak_live_bytes,
            model.total_bytes(b, s))


def _never_more(slug: str, job: Job, less: dict[str, Any], more: dict[str, Any]) -> None:
    """States, live peak and total of ``job`` with ``less`` are at most those with ``more``."""
    smaller = _totals(slug, dataclasses.replace(job, **less))
    larger = _totals(slug, dataclasses.replace(job, **more))
    assert all(a <= b for a, b in zip(smaller, larger, strict=True)), (smaller, larger)


@FAST
@given(slug=slugs, job=jobs)
def test_pure_bf16_never_needs_more_than_amp(slug: str, job: Job) -> None:
    _never_more(slug, job, {"precision": "bf16"}, {"precision": "amp"})


@FAST
@given(slug=slugs, job=adapter_jobs)
def test_bf16_adapters_never_need_more_than_fp32(slug: str, job: Job) -> None:
    _never_more(slug, job, {"adapter_dtype": "bf16"}, {"adapter_dtype": "fp32"})


@FAST
@given(slug=slugs, job=adapter_jobs)
def test_an_fp32_base_never_needs_less_than_bf16(slug: str, job: Job) -> None:
    _never_more(slug, job, {"base_dtype": "bf16"}, {"base_dtype": "fp32"})


@FAST
@given(slug=slugs, job=jobs, checkpointing=st.booleans())
def test_activation_offload_never_raises_the_peak(slug: str, job: Job,
                                                  checkpointing: bool) -> None:
    on = dataclasses.replace(job, activation_offload=True, gradient_checkpointing=checkpointing)
    off = dataclasses.replace(on, activation_offload=False)
    assert _totals(slug, on)[1] <= _totals(slug, off)[1]


def test_pure_bf16_full_fine_tune_is_eight_bytes_per_param_with_adamw() -> None:
    """bf16 weights (2) and gradients (2), AdamW's moments created like the bf16 params (2+2),
    no fp32 master copy: torchtune's full_finetune_single_device with dtype: bf16."""
    shape = reference_shape("llama-3.2-3b")
    result = estimate(shape, Job(method="full", precision="bf16"), [])
    assert result.model_states_bytes == 8 * shape.total_params
    assert result.model_states_by_accounting == {"zero": 8 * shape.total_params,
                                                 "hf": 8 * shape.total_params}
    eight_bit = estimate(shape, Job(method="full", precision="bf16", optimizer="adamw_8bit"), [])
    assert eight_bit.model_states_bytes == 6 * shape.total_params


def test_bf16_adapters_hold_eight_bytes_per_trainable_param() -> None:
    shape = reference_shape("llama-3.1-8b")
    fp32 = estimate(shape, Job(), [])
    bf16 = estimate(shape, Job(adapter_dtype="bf16"), [])
    assert fp32.per_gpu_bytes.adapter == 16 * fp32.params.trainable
    assert bf16.per_gpu_bytes.adapter == 8 * bf16.params.trainable


def test_an_fp32_base_holds_four_bytes_per_param() -> None:
    shape = reference_shape("llama-3.1-8b")
    result = estimate(shape, Job(base_dtype="fp32"), [])
    assert result.per_gpu_bytes.weights == 4 * shape.total_params
    assert any("fp32" in text for text in result.assumptions)


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("method", ["full", "lora", "qlora"])
def test_a_framework_preset_is_the_same_as_its_explicit_dtypes(framework: Any,
                                                               method: Any) -> None:
    preset = FRAMEWORK_PRESETS[framework]["full" if method == "full" else "adapters"]
    explicit: dict[str, Any] = {"precision": preset.precision}
    if method != "full":
        explicit |= {"adapter_dtype": preset.adapter_dtype, "base_dtype": preset.base_dtype}
    shape = reference_shape("llama-3.1-8b")
    by_preset = estimate(shape, Job(method=method, framework=framework), [])
    by_hand = estimate(shape, Job(method=method, framework=framework, **explicit), [])
    assert by_preset.per_gpu_bytes == by_hand.per_gpu_bytes
    # LitGPT's and Unsloth's own terms beyond dtypes: test_framework_litgpt.py and
    # test_framework_unsloth.py.
    if framework not in ("litgpt", "unsloth"):
        shared = estimate(shape, Job(method=method, **explicit), [])
        assert by_preset.per_gpu_bytes == shared.per_gpu_bytes


def test_torchtune_and_litgpt_train_in_pure_bf16_and_hf_in_amp() -> None:
    assert FRAMEWORK_PRESETS["torchtune"]["full"] == PURE_BF16
    assert FRAMEWORK_PRESETS["litgpt"]["adapters"] == PURE_BF16
    shape = reference_shape("llama-3.2-3b")
    hf = estimate(shape, Job(method="full"), [])
    torchtune = estimate(shape, Job(method="full", framework="torchtune"), [])
    assert torchtune.model_states_bytes < hf.model_states_bytes
    assert any("torchtune" in text for text in torchtune.assumptions)
    assert any("pure bf16" in text for text in torchtune.assumptions)


def test_an_explicit_choice_overrides_the_preset() -> None:
    shape = reference_shape("llama-3.2-3b")
    amp = estimate(shape, Job(method="full", framework="torchtune", precision="amp"), [])
    assert amp.model_states_bytes == estimate(shape, Job(method="full"), []).model_states_bytes


BAD_PRECISIONS: list[tuple[dict[str, Any], str]] = [
    ({"precision": "fp8"}, "precision"),
    ({"adapter_dtype": "fp16"}, "adapter_dtype"),
    ({"base_dtype": "int8"}, "base_dtype"),
    ({"framework": "axolotl"}, "framework"),
    ({"method": "full", "adapter_dtype": "bf16"}, "adapter_dtype"),
    ({"method": "full", "base_dtype": "fp32"}, "base_dtype"),
    ({"precision": "bf16", "adapter_dtype": "fp32"}, "adapter_dtype"),
    ({"precision": "bf16", "base_dtype": "fp32"}, "base_dtype"),
    ({"framework": "torchtune", "base_dtype": "fp32"}, "base_dtype"),
]


@pytest.mark.parametrize(("change", "field"), BAD_PRECISIONS)
def test_contradictory_dtypes_name_their_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(EngineError) as caught:
        estimate(reference_shape("llama-3.1-8b"), Job(**change), [])
    assert caught.value.field == field
    assert caught.value.reason
