"""A config.json cannot make an estimate expensive: every field is bounded, no work loops over one.

The probe that found this sent a qwen3_moe config with 10^8 layers; the engine counted its sparse
layers one by one and held a worker for 41 s. Two guarantees replace that loop:

* every integer field the engine reads has an upper bound (``FIELD_BOUNDS``), refused with the
  field named when exceeded;
* the engine's work does not depend on a field's value: counted as Python line events inside
  ``app/engine`` (deterministic, unlike wall-clock time), an estimate with one field at its bound
  does the same work, within a small allowance for branches, as the same estimate on an ordinary
  model. A loop over the field would add at least ``bound - ordinary`` (over 900) events.

The time of the slowest estimate at the bounds is a benchmark (benchmarks/), not asserted here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import EngineError, GpuSpec, Job, estimate, parse_config
from app.engine.architectures.kit import FIELD_BOUNDS, sparse_layer_count
from app.engine.architectures.registry import SUPPORTED_MODEL_TYPES
from tests.engine.bounded_configs import (
    FIELDS,
    ORDINARY,
    SMALLEST,
    at_bounds,
    config_at,
    one_at_bound,
    set_field,
)

ENGINE_DIR = "/app/engine/"
BRANCH_ALLOWANCE = 400
"""Line events one field's value may change by taking other branches (fits or not, a dense
layer present or not, Qwen3-Next's seven kinds of mixture-of-experts linear present or not,
Llama 4's experts present or not; the step-time model, issue 26, walks each kind of layer
once more, so a kind absent at the bound saves up to about 390); far below the 976 or more a
loop over any bounded field would add."""
WORK_BUDGET = 40_000
"""Line events an estimate at any values within the bounds may take, cards and levers included
(measured at engine 1.5.0: Qwen3-MoE at ordinary values on the three cards below, every lever
tried, about 22,100; a mixture of experts that fits a card at ordinary sizes, Qwen3.5-MoE or
Llama 4, about 26,000). A loop over a bounded field would add hundreds of thousands."""
CARDS = [
    GpuSpec("big", "Big", 141 * 10**9, "9.0", interconnect="nvlink"),
    GpuSpec("mid", "Mid", 48 * 10**9, "12.0"),
    GpuSpec("small", "Small", 24 * 10**9, "8.9"),
]
JOB = Job(seq_len=1024)


def engine_line_events(action: Callable[[], object], folder: str = ENGINE_DIR) -> int:
    """How many lines of code in ``folder`` (``app/engine``) run while ``action`` runs."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def outer(frame: FrameType, event: str, arg: Any) -> Any:
        return local if folder in frame.f_code.co_filename else None

    previous = sys.gettrace()
    sys.settrace(outer)
    try:
        action()
    except EngineError:
        pass
    finally:
        sys.settrace(previous)
    return count


def _estimate(config: dict[str, Any], cards: list[GpuSpec]) -> Callable[[], object]:
    return lambda: estimate(parse_config(config), JOB, cards)


@pytest.mark.parametrize("layers", [10**8, 2**53, 9007199254740992])
def test_the_probes_qwen3_moe_with_absurd_layers_is_refused_naming_the_field(
    layers: int,
) -> None:
    config = one_at_bound("qwen3_moe", "num_hidden_layers") | {"num_hidden_layers": layers}
    with pytest.raises(EngineError) as caught:
        parse_config(config)
    assert caught.value.field == "num_hidden_layers"
    assert "1,024" in caught.value.reason


@pytest.mark.parametrize(
    ("model_type", "field"),
    [(model_type, field) for model_type in SUPPORTED_MODEL_TYPES for field in FIELDS[model_type]],
)
def test_one_above_the_bound_is_refused_and_the_bound_itself_accepted(
    model_type: str, field: str
) -> None:
    config = one_at_bound(model_type, field)
    parse_config(config)
    set_field(config, field, FIELD_BOUNDS[field] + 1)
    if field == "n_embd":
        config["n_embd"] = config["n_head"] * (FIELD_BOUNDS["n_embd"] // config["n_head"] + 1)
    with pytest.raises(EngineError) as caught:
        parse_config(config)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("model_type", "field"),
    [(model_type, field) for model_type in SUPPORTED_MODEL_TYPES for field in FIELDS[model_type]],
)
def test_an_estimates_work_does_not_grow_with_a_config_value(model_type: str, field: str) -> None:
    ordinary = engine_line_events(_estimate(config_at(model_type, ORDINARY), []))
    at_bound = engine_line_events(_estimate(one_at_bound(model_type, field), []))
    assert abs(at_bound - ordinary) <= BRANCH_ALLOWANCE, (ordinary, at_bound)


def _per_layer_count(layers: int) -> int:
    """The old Qwen3-MoE rule, one step per layer: what the measure must catch."""
    return sum(1 for i in range(layers) if (i + 1) % 1 == 0)


def test_the_measure_sees_a_loop_over_layers() -> None:
    """The instrument itself: a per-layer loop costs at least one line event per layer."""
    layers = FIELD_BOUNDS["num_hidden_layers"]
    assert engine_line_events(lambda: _per_layer_count(layers), "/tests/engine/") >= layers


@pytest.mark.parametrize("model_type", SUPPORTED_MODEL_TYPES)
def test_every_field_at_its_bound_still_gives_an_answer(model_type: str) -> None:
    result = estimate(parse_config(at_bounds(model_type)), JOB, CARDS)
    assert result.params.total > 0
    assert not any(fit.fits for fit in result.fits)  # trillions of parameters fit nowhere


values = st.fixed_dictionaries(
    {name: st.integers(SMALLEST[name], bound) for name, bound in FIELD_BOUNDS.items()}
)


@settings(max_examples=150, deadline=None)
@given(model_type=st.sampled_from(SUPPORTED_MODEL_TYPES), chosen=values)
def test_any_values_within_the_bounds_answer_within_a_fixed_budget_of_work(
    model_type: str, chosen: dict[str, int]
) -> None:
    work = engine_line_events(_estimate(config_at(model_type, chosen), CARDS))
    assert work <= WORK_BUDGET


@given(
    layers=st.integers(1, 200),
    step=st.integers(1, 12),
    dense=st.sets(st.integers(0, 199), max_size=30),
)
def test_the_closed_form_sparse_count_matches_transformers_per_layer_rule(
    layers: int, step: int, dense: set[int]
) -> None:
    listed = frozenset(i for i in dense if i < layers)
    by_layer = sum(1 for i in range(layers) if i not in listed and (i + 1) % step == 0)
    assert sparse_layer_count(layers, step, listed) == by_layer


@pytest.mark.parametrize(
    ("listed", "field_reason"),
    [
        ([0, 0], "distinct"),
        ([48], "from 0 to 47"),
        ([-1], "from 0 to 47"),
        (list(range(49)), "at most 48"),
        ("0,1", "at most 48"),
        ([True], "distinct"),
    ],
)
def test_mlp_only_layers_must_name_distinct_existing_layers(
    listed: object, field_reason: str
) -> None:
    config = config_at("qwen3_moe", ORDINARY) | {"mlp_only_layers": listed}
    with pytest.raises(EngineError) as caught:
        parse_config(config)
    assert caught.value.field == "mlp_only_layers"
    assert field_reason in caught.value.reason


def test_more_experts_per_token_than_experts_is_refused() -> None:
    config = config_at("mixtral", ORDINARY) | {"num_experts_per_tok": 200}
    with pytest.raises(EngineError) as caught:
        parse_config(config)
    assert caught.value.field == "num_experts_per_tok"
