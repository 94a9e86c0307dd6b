"""An unknown model type is never a dead end (issue 16, point 2): a config with the standard
decoder fields gets an estimate marked approximate, with the fields it was counted from; only a
config without them is refused, naming the missing field. Bounds apply as to every builder."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.config import SEED_DIR
from app.engine import EngineError, GpuSpec, Job, estimate, parse_config, shape_of
from app.engine.architectures.approximate import STANDARD_FIELDS
from app.engine.architectures.kit import FIELD_BOUNDS
from app.engine.shapes import ShapeError
from tests.engine.bounded_configs import ORDINARY, config_at, one_at_bound
from tests.engine.test_config_bounds import BRANCH_ALLOWANCE, engine_line_events

CARD = GpuSpec("card", "Card", 96 * 10**9, "12.0")


def _seed(slug: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((SEED_DIR / "models" / f"{slug}.json").read_text())
    return config


def _renamed(config: dict[str, Any], model_type: str = "brand_new_lm") -> dict[str, Any]:
    return {**config, "model_type": model_type}


def test_a_llama_layout_under_an_unknown_name_is_counted_to_the_parameter() -> None:
    llama = _seed("llama-3.1-8b")
    exact = parse_config(llama)
    approximate = shape_of(_renamed(llama))
    assert approximate.total_params == exact.total_params == 8_030_261_248
    assert approximate.split == exact.split
    assert approximate.approximation is not None
    assert approximate.approximation.model_type == "brand_new_lm"
    assert set(STANDARD_FIELDS) <= set(approximate.approximation.fields)
    assert exact.approximation is None


def test_a_declared_tie_is_read_not_guessed() -> None:
    """Issue 29, point 4: Llama 3.2 1B declares ``tie_word_embeddings: true``; under an unknown
    name it is counted tied, to the parameter, with nothing left unaccounted for (SmolLM3 was
    8.5 % high when its tie was not read)."""
    llama = _seed("llama-3.2-1b")
    assert llama["tie_word_embeddings"] is True
    approximate = shape_of(_renamed(llama))
    assert approximate.tied_embeddings and approximate.split.lm_head == 0
    assert approximate.total_params == parse_config(llama).total_params == 1_235_814_400
    assert approximate.approximation is not None
    assert approximate.approximation.missing == ()


def test_what_the_llama_layout_cannot_see_is_small() -> None:
    """Qwen3 adds an RMSNorm on q and k per head: the approximation misses only those."""
    qwen = _seed("qwen3-8b")
    exact = parse_config(qwen)
    approximate = shape_of(_renamed(qwen))
    missed = exact.total_params - approximate.total_params
    assert missed == 2 * qwen["num_hidden_layers"] * qwen["head_dim"]
    assert missed / exact.total_params < 0.001


def test_experts_named_in_the_config_are_counted_as_mixtral_s() -> None:
    mixtral = _seed("mixtral-8x7b")
    approximate = shape_of(_renamed(mixtral))
    assert approximate.total_params == parse_config(mixtral).total_params
    assert approximate.active_params == parse_config(mixtral).active_params
    assert approximate.approximation is not None
    assert "num_local_experts" in approximate.approximation.fields


def test_a_multimodal_config_is_read_from_its_text_config() -> None:
    text = {k: v for k, v in _seed("llama-3.1-8b").items() if k != "model_type"}
    config = {"model_type": "my_vlm", "vision_config": {"hidden_size": 1152},
              "text_config": text}
    shape = shape_of(config)
    assert shape.total_params == 8_030_261_248
    assert shape.approximation is not None
    assert "text_config.hidden_size" in shape.approximation.fields
    assert "hidden_size" not in shape.approximation.fields


def test_the_estimate_says_it_is_approximate_and_from_which_fields() -> None:
    result = estimate(shape_of(_renamed(_seed("llama-3.1-8b"))), Job(), [CARD])
    assert result.fidelity == "approximate"
    assert "hidden_size" in result.approximated_from
    first = result.assumptions[0]
    assert first.startswith("approximate: model type 'brand_new_lm'")
    assert "hidden_size" in first
    document = result.to_dict()
    assert document["fidelity"] == "approximate"
    exact = estimate(parse_config(_seed("llama-3.1-8b")), Job(), [CARD])
    assert exact.fidelity == "exact" and exact.approximated_from == ()
    assert not any(a.startswith("approximate") for a in exact.assumptions)
    # the same layout, so the same bytes: only the label differs
    assert result.per_gpu_bytes == exact.per_gpu_bytes


@pytest.mark.parametrize("missing", STANDARD_FIELDS)
def test_a_config_without_a_standard_field_is_refused_naming_it(missing: str) -> None:
    config = {k: v for k, v in _renamed(_seed("llama-3.1-8b")).items() if k != missing}
    with pytest.raises(ShapeError) as caught:
        shape_of(config)
    assert caught.value.field == missing
    assert caught.value.key == "approximate_missing"
    assert "'brand_new_lm'" in caught.value.reason


def test_a_known_type_is_still_held_to_its_builder() -> None:
    """A llama config without its layers is a broken llama, not an unknown model."""
    config = {k: v for k, v in _seed("llama-3.1-8b").items() if k != "num_hidden_layers"}
    with pytest.raises(ShapeError) as caught:
        shape_of(config)
    assert (caught.value.field, caught.value.key) == ("num_hidden_layers", "config_missing")


def test_a_config_without_model_type_is_refused_as_before() -> None:
    config = {k: v for k, v in _seed("llama-3.1-8b").items() if k != "model_type"}
    with pytest.raises(ShapeError) as caught:
        shape_of(config)
    assert caught.value.field == "model_type"


@pytest.mark.parametrize("field", ["num_hidden_layers", "hidden_size", "vocab_size",
                                   "num_local_experts"])
def test_the_bounds_apply_naming_the_field(field: str) -> None:
    config = _renamed(one_at_bound("mixtral", field))
    shape_of(config)
    config[field] = FIELD_BOUNDS[field] + 1
    with pytest.raises(EngineError) as caught:
        shape_of(config)
    assert (caught.value.field, caught.value.key) == (field, "above_bound")


def test_a_nested_field_over_its_bound_is_named_by_its_path() -> None:
    text = {k: v for k, v in _seed("llama-3.1-8b").items() if k != "model_type"}
    config = {"model_type": "my_vlm",
              "text_config": {**text, "num_hidden_layers": FIELD_BOUNDS["num_hidden_layers"] + 1}}
    with pytest.raises(EngineError) as caught:
        shape_of(config)
    assert caught.value.field == "text_config.num_hidden_layers"


def test_a_long_model_type_is_cut_short() -> None:
    shape = shape_of(_renamed(_seed("llama-3.1-8b"), "x" * 10_000))
    assert shape.approximation is not None
    assert len(shape.approximation.model_type) == 64


@pytest.mark.parametrize("field", ["num_hidden_layers", "hidden_size", "intermediate_size",
                                   "vocab_size", "num_local_experts", "num_experts_per_tok"])
def test_an_approximate_estimate_s_work_does_not_grow_with_a_config_value(field: str) -> None:
    ordinary = _renamed(config_at("mixtral", ORDINARY))
    at_bound = _renamed(one_at_bound("mixtral", field))
    job = Job(seq_len=1024)
    base = engine_line_events(lambda: estimate(shape_of(ordinary), job, []))
    bounded = engine_line_events(lambda: estimate(shape_of(at_bound), job, []))
    assert abs(bounded - base) <= BRANCH_ALLOWANCE, (base, bounded)


# Issue 29, point 4: the approximate path reads what a config declares before it guesses, and
# names what it still cannot count. Real configs under an unknown name, against the builders'
# exact counts (themselves equal to transformers 5.25 on the meta device).
HF_CONFIGS = SEED_DIR.parents[2] / "tests" / "fixtures" / "hf_configs"


def _hf(slug: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((HF_CONFIGS / f"{slug}.json").read_text())
    return config


@pytest.mark.parametrize(("slug", "within"), [
    ("deepseek-v3", 0.002),  # n_routed_experts, n_shared_experts, first_k_dense_replace
    ("glm-4.5-air", 0.001),
    ("mimo-v2-flash", 0.003),  # moe_layer_freq (was 5 % of the model: experts missed)
    ("qwen3-vl-30b-a3b-instruct", 0.001),  # text_config, num_experts
    ("qwen3.6-35b-a3b", 0.02),  # every layer sparse: no intermediate_size to read
])
def test_declared_experts_shared_experts_and_dense_layers_are_read(
    slug: str, within: float
) -> None:
    config = _hf(slug)
    exact = parse_config(config).total_params
    approximate = shape_of(_renamed(config))
    assert approximate.approximation is not None
    assert abs(approximate.total_params / exact - 1) < within


def test_a_language_config_is_read_like_a_text_config() -> None:
    llama = _seed("llama-3.1-8b")
    nested = {"model_type": "brand_new_vlm", "language_config": llama,
              "vision_config": {"hidden_size": 1024}}
    shape = shape_of(nested)
    assert shape.total_params == parse_config(llama).total_params
    assert shape.approximation is not None
    assert "language_config.hidden_size" in shape.approximation.fields
    assert shape.approximation.missing == ("tower",)


def test_a_real_3_mb_multimodal_moe_is_close_and_names_its_tower() -> None:
    """nvidia/MiniMax-M3-NVFP4 under a type no builder knows (``minimax_m3_vl`` itself is
    counted exactly now: tests/engine/test_minimax_m3.py): transformers 5.25 counts
    426,174,565,632 in its language model; the approximation reads moe_layer_freq and
    n_shared_experts (443.8 B before) and says the vision tower is not counted."""
    shape = shape_of({**_hf("minimax-m3-nvfp4"), "model_type": "minimax_m4_vl"})
    assert shape.approximation is not None
    assert abs(shape.total_params / 426_174_565_632 - 1) < 0.005
    assert "text_config.moe_layer_freq" in shape.approximation.fields
    assert shape.approximation.missing == ("tower",)
    result = estimate(shape, Job(method="lora"), [CARD])
    assert ("approximate_tower", {}) in result.assumption_items


def test_experts_it_cannot_route_and_an_unsaid_tie_are_named() -> None:
    config = {k: v for k, v in _renamed(_seed("llama-3.1-8b")).items()
              if k != "tie_word_embeddings"}
    config["num_local_experts"] = 8
    shape = shape_of(config)
    assert shape.approximation is not None
    assert shape.approximation.missing == ("experts", "tie")
    assert shape.num_experts == 0
    result = estimate(shape, Job(method="lora"), [CARD])
    keys = [key for key, _values in result.assumption_items]
    assert "approximate_experts" in keys and "approximate_tie" in keys
