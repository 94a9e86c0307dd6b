"""One way from outside into the engine (app/estimates/job_input.py): every field of the
engine's jobs is fed by an input field, and every input field is taken by every surface (the
API's body, the CLI's options, the calculator's and the Serve page's forms) or named as one the
surface leaves at its default. A field added to ``Job`` or ``ServingJob`` and not carried to a
surface fails here.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from typing import Any, get_args

import pytest

from app.api.v1 import estimates as api_estimates
from app.api.v1 import schemas
from app.api.v1 import serving as api_serving
from app.cli import estimate as cli_estimate
from app.cli import serving as cli_serving
from app.engine import Job
from app.engine.serving import ServingJob
from app.estimates import job_input
from app.estimates.job_input import (
    CALCULATOR_OMITS,
    DERIVED_JOB_FIELDS,
    ENGINE_ONLY_SERVING_FIELDS,
    JOB_INPUT_FIELDS,
    SERVE_PAGE_OMITS,
    SERVING_INPUT_FIELDS,
    JobInput,
    ServingJobInput,
)
from app.web import calculator_form, serving_form

# A value other than the default for each input field: (the input's value, the CLI's
# arguments, the page's parameter and value or None where the page leaves it out).
TRAINING: dict[str, tuple[Any, list[str], tuple[str, str] | None]] = {
    "method": ("full", ["--method", "full"], ("method", "full")),
    "optimizer": ("sgd", ["--optimizer", "sgd"], ("optimizer", "sgd")),
    "accounting": ("hf", ["--accounting", "hf"], None),
    "lora_rank": (64, ["--lora-rank", "64"], ("rank", "64")),
    "lora_targets": ("qv", ["--lora-targets", "qv"], ("targets", "qv")),
    "lora_dropout": (0.1, ["--lora-dropout", "0.1"], None),
    "quant": ("nf4", ["--method", "qlora", "--quant", "nf4"], ("method", "qlora:nf4")),
    "batch_size": (4, ["--batch-size", "4"], ("batch", "4")),
    "seq_len": (4096, ["--seq-len", "4096"], ("seq", "4096")),
    "gradient_checkpointing": ("on", ["--gradient-checkpointing", "on"], ("ckpt", "1")),
    "allow_method_change": (True, ["--allow-method-change"], ("change", "1")),
    "attention": ("eager", ["--attention", "eager"], ("attention", "eager")),
    "gpus": (2, ["--gpus", "2"], ("gpus", "2")),
    "sharding": ("zero2", ["--sharding", "zero2"], ("sharding", "zero2")),
    "sharding_impl": ("fsdp", ["--sharding", "zero3", "--sharding-impl", "fsdp"],
                      ("impl", "fsdp")),
    "moe_lora": ("per-expert", ["--moe-lora", "per-expert"], ("moe", "per-expert")),
    "offload": ("optimizer", ["--offload", "optimizer"], ("offload", "optimizer")),
    "chunked_loss": (True, ["--chunked-loss"], None),
    "fused_optimizer_step": (True, ["--fused-optimizer-step"], None),
    "activation_offload": (True, ["--activation-offload"], None),
    "expandable_segments": (True, ["--expandable-segments"], ("segments", "1")),
    "gradient_accumulation": (8, ["--gradient-accumulation", "8"], None),
    "dataset_tokens": (250_000, ["--dataset-tokens", "250k"], ("dataset", "250k")),
    "epochs": (3, ["--epochs", "3"], ("epochs", "3")),
    "precision": ("bf16", ["--precision", "bf16"], ("precision", "bf16")),
    "adapter_dtype": ("bf16", ["--adapter-dtype", "bf16"], ("adapter", "bf16")),
    "base_dtype": ("fp32", ["--base-dtype", "fp32"], ("base", "fp32")),
    "framework": ("torchtune", ["--framework", "torchtune"], ("framework", "torchtune")),
    "bnb_version": ("0.41", ["--method", "qlora", "--bnb-version", "0.41"], ("bnb", "0.41")),
}
"""Fields another one must accompany (a 4-bit quant is QLoRA's, FSDP runs ZeRO-3) come with it."""
NEEDS: dict[str, dict[str, Any]] = {
    "quant": {"method": "qlora"}, "bnb_version": {"method": "qlora"},
    "sharding_impl": {"sharding": "zero3"},
}
PAGE_NEEDS: dict[str, dict[str, str]] = {
    "bnb_version": {"method": "qlora"}, "sharding_impl": {"sharding": "zero3"},
}
SERVING: dict[str, tuple[Any, list[str], tuple[str, str] | None]] = {
    "weights": ("awq", ["--weights", "awq"], ("weights", "awq")),
    "kv_cache": ("fp8", ["--kv-cache", "fp8"], ("kv", "fp8")),
    "context": (32768, ["--context", "32768"], ("context", "32768")),
    "concurrency": (16, ["--concurrency", "16"], ("users", "16")),
    "gpus": (2, ["--gpus", "2"], ("gpus", "2")),
    "runtime": ("sglang", ["--runtime", "sglang"], ("runtime", "sglang")),
    "gpu_memory_utilization": (0.8, ["--gpu-memory-utilization", "0.8"], None),
    "max_num_batched_tokens": (4096, ["--max-num-batched-tokens", "4096"], None),
    "min_tokens_per_s": (20.0, ["--min-tokens-per-s", "20"], ("speed", "20")),
}


def _names(cls: type[Any]) -> set[str]:
    return {item.name for item in dataclasses.fields(cls)}


def test_every_job_field_is_fed_by_an_input_field() -> None:
    fed = {name for name in _names(Job) if name in JOB_INPUT_FIELDS}
    assert _names(Job) - fed == set(DERIVED_JOB_FIELDS)
    assert set(DERIVED_JOB_FIELDS.values()) <= set(JOB_INPUT_FIELDS)
    serving_fed = {name for name in _names(ServingJob) if name in SERVING_INPUT_FIELDS}
    assert _names(ServingJob) - serving_fed == set(ENGINE_ONLY_SERVING_FIELDS)


def test_the_inputs_start_from_the_engines_defaults() -> None:
    assert JobInput().job() == Job()
    assert ServingJobInput().job() == ServingJob()


@pytest.mark.parametrize("name", JOB_INPUT_FIELDS)
def test_each_training_field_reaches_the_job(name: str) -> None:
    value = TRAINING[name][0]
    changed = JobInput(**{**NEEDS.get(name, {}), name: value})
    base = JobInput(**NEEDS.get(name, {}))
    if name in ("gradient_checkpointing", "allow_method_change"):  # the request's, not the job's
        assert changed.request() != base.request()
    else:
        assert changed.job() != base.job()


@pytest.mark.parametrize("name", SERVING_INPUT_FIELDS)
def test_each_serving_field_reaches_the_job(name: str) -> None:
    changed = ServingJobInput(**{name: SERVING[name][0]})
    assert changed.job() != ServingJobInput().job()


def test_every_input_field_has_a_case_here() -> None:
    assert set(TRAINING) == set(JOB_INPUT_FIELDS)
    assert set(SERVING) == set(SERVING_INPUT_FIELDS)


def test_a_surface_that_leaves_a_field_out_is_refused() -> None:
    values = {name: getattr(JobInput(), name) for name in JOB_INPUT_FIELDS if name != "epochs"}
    with pytest.raises(ValueError, match="epochs"):
        JobInput.of(values)
    assert JobInput.of(values, omitted=("epochs",)) == JobInput()
    with pytest.raises(ValueError, match="nonsense"):
        JobInput.of({**values, "epochs": 1, "nonsense": 1})


# The API: the body's fields, their defaults and their choices are the input's.

def _choices(annotation: Any) -> set[Any]:
    """The values a Literal (or Optional Literal) annotation allows."""
    found: set[Any] = set()
    for arg in get_args(annotation) or (annotation,):
        if typing.get_origin(arg) is typing.Literal:
            found |= set(get_args(arg))
        elif arg is type(None):
            found.add(None)
    return found


@pytest.mark.parametrize(("body", "model", "fields"), [
    (schemas.EstimateInput, JobInput, JOB_INPUT_FIELDS),
    (schemas.ServingInput, ServingJobInput, SERVING_INPUT_FIELDS),
])
def test_the_api_bodies_carry_every_input_field(body: Any, model: type[Any],
                                                fields: tuple[str, ...]) -> None:
    hints = typing.get_type_hints(model)
    for name in fields:
        assert name in body.model_fields, f"the API's body lacks {name}"
        spec = body.model_fields[name]
        if not spec.is_required():
            assert spec.get_default(call_default_factory=True) == getattr(model(), name), name
        assert _choices(spec.annotation) >= _choices(hints[name]), name


@pytest.mark.parametrize("name", JOB_INPUT_FIELDS)
def test_the_api_takes_each_training_field(name: str) -> None:
    value = TRAINING[name][0]
    body = schemas.EstimateInput(model="llama-3.1-8b", **{"method": "lora", **NEEDS.get(name, {}),
                                                          name: value})
    assert getattr(api_estimates.job_input(body), name) == value


@pytest.mark.parametrize("name", SERVING_INPUT_FIELDS)
def test_the_api_takes_each_serving_field(name: str) -> None:
    body = schemas.ServingInput(model="llama-3.1-8b", **{name: SERVING[name][0]})
    request = api_serving.to_request(body)
    assert request != api_serving.to_request(schemas.ServingInput(model="llama-3.1-8b"))


# The CLI: one option per input field, the input's default and choices.

def _parser(add: Any) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add(parser)
    return parser


@pytest.mark.parametrize(("add", "model", "fields"), [
    (cli_estimate.add_arguments, JobInput, JOB_INPUT_FIELDS),
    (cli_serving.add_arguments, ServingJobInput, SERVING_INPUT_FIELDS),
])
def test_the_cli_has_an_option_for_every_input_field(add: Any, model: type[Any],
                                                    fields: tuple[str, ...]) -> None:
    actions = {action.dest: action for action in _parser(add)._actions}
    hints = typing.get_type_hints(model)
    for name in fields:
        assert name in actions, f"no --{name.replace('_', '-')} option"
        action = actions[name]
        assert action.option_strings == [f"--{name.replace('_', '-')}"], name
        if action.choices is not None:
            assert set(action.choices) >= _choices(hints[name]) - {None}, name


@pytest.mark.parametrize("name", JOB_INPUT_FIELDS)
def test_the_cli_takes_each_training_field(name: str) -> None:
    parser = _parser(cli_estimate.add_arguments)
    base = ["--model", "llama-3.1-8b", "--method", "lora"]
    default = cli_estimate.job_input(parser.parse_args(base))
    assert default == JobInput()
    extra = [arg for key, value in NEEDS.get(name, {}).items()
             for arg in (f"--{key.replace('_', '-')}", str(value))]
    read = cli_estimate.job_input(parser.parse_args([*base, *extra, *TRAINING[name][1]]))
    assert getattr(read, name) == TRAINING[name][0]


@pytest.mark.parametrize("name", SERVING_INPUT_FIELDS)
def test_the_cli_takes_each_serving_field(name: str) -> None:
    parser = _parser(cli_serving.add_arguments)
    base = ["--model", "llama-3.1-8b"]
    assert cli_serving.job_input(parser.parse_args(base)) == ServingJobInput()
    read = cli_serving.job_input(parser.parse_args([*base, *SERVING[name][1]]))
    assert getattr(read, name) == SERVING[name][0]


# The pages: each input field has its parameter, or is named as one the page leaves out.

@pytest.mark.parametrize("name", JOB_INPUT_FIELDS)
def test_the_calculator_takes_each_training_field_or_names_it(name: str) -> None:
    page = TRAINING[name][2]
    if page is None:
        assert name in CALCULATOR_OMITS
        return
    assert name not in CALCULATOR_OMITS
    param, value = page
    calc, errors = calculator_form.parse({**PAGE_NEEDS.get(name, {}), param: value})
    assert not errors, errors
    assert getattr(calc.job_input(), name) == TRAINING[name][0]
    assert calculator_form.parse({})[0].job_input() == JobInput()


@pytest.mark.parametrize("name", SERVING_INPUT_FIELDS)
def test_the_serve_page_takes_each_serving_field_or_names_it(name: str) -> None:
    page = SERVING[name][2]
    if page is None:
        assert name in SERVE_PAGE_OMITS
        return
    assert name not in SERVE_PAGE_OMITS
    param, value = page
    calc, errors = serving_form.parse({param: value})
    assert not errors, errors
    assert getattr(calc.job_input(), name) == SERVING[name][0]
    assert serving_form.parse({})[0].job_input() == ServingJobInput()


def test_the_module_names_what_it_is() -> None:
    assert job_input.__doc__ and "tests/estimates/test_job_input.py" in job_input.__doc__


NEVER_REFUSED = ("gradient_checkpointing", "allow_method_change", "expandable_segments")
"""Page fields no service refusal names (a checkbox or a choice whose every value is valid)."""


def test_a_refusal_of_a_page_field_lands_beside_its_control() -> None:
    """The service names the input's field; each page puts it beside its own control (an
    unmapped field would land under the model)."""
    for name, (_, _, page) in TRAINING.items():
        if page is not None and name not in NEVER_REFUSED:
            control = calculator_form.ENGINE_FIELDS.get(name)
            assert control in calculator_form.FIELDS, name
            assert control == page[0] or (name, control) == ("quant", "quant"), name
    for name, (_, _, page) in SERVING.items():
        if page is not None:
            assert serving_form.ENGINE_FIELDS.get(name) == page[0], name
