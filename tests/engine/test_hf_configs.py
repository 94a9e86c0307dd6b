"""Real config.json files of the hybrid, multimodal and older dense families are counted as
transformers and PEFT count them, to the parameter.

The expected figures were made by ``tools/model_counts.py`` (transformers 5 + PEFT 0.21 on the
meta device; versions in each entry) from ``tests/fixtures/hf_configs/<slug>.json``, whose
sources are listed in ``tests/fixtures/hf_configs/SOURCES.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine.architectures.registry import parse_config
from app.engine.errors import EngineError
from app.engine.states import LoraSetup, lora_trainable_params

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
EXPECTED: dict[str, dict[str, Any]] = json.loads((CONFIGS / "expected_hybrid.json").read_text())


def _config(slug: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / f"{slug}.json").read_text())
    return config


def test_the_hybrid_families_have_at_least_fifteen_real_configs() -> None:
    assert len(EXPECTED) >= 15
    assert {entry["model_type"] for entry in EXPECTED.values()} >= {
        "qwen3_next", "qwen3_5_moe", "nemotron_h", "gemma3", "mistral3", "olmo2", "gemma",
        "phi", "falcon", "gpt_neox", "gemma4",
    }


@pytest.mark.parametrize("slug", sorted(EXPECTED))
def test_the_language_model_has_the_parameters_transformers_builds(slug: str) -> None:
    shape = parse_config(_config(slug))
    assert shape.total_params == EXPECTED[slug]["text_total"]


@pytest.mark.parametrize("slug", sorted(EXPECTED))
def test_a_vision_tower_is_counted_beside_the_language_model(slug: str) -> None:
    shape = parse_config(_config(slug))
    assert shape.tower_params == EXPECTED[slug]["tower"]
    assert shape.total_params + shape.tower_params == EXPECTED[slug]["total"]
    assert shape.audio_tower_params == EXPECTED[slug].get("audio_tower", 0)


@pytest.mark.parametrize("slug", sorted(EXPECTED))
def test_lora_r16_all_linear_trains_what_peft_builds_on_the_language_model(slug: str) -> None:
    shape = parse_config(_config(slug))
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == EXPECTED[slug]["lora_r16_text"]


@pytest.mark.parametrize("slug", sorted(EXPECTED))
def test_the_4bit_split_holds_the_decoder_linears_experts_and_routers(slug: str) -> None:
    """``split.linear`` is every block linear layer, the fused expert tensors and routers
    counted as linear as the engine's mixture-of-experts convention does."""
    shape = parse_config(_config(slug))
    entry = EXPECTED[slug]
    assert shape.split.linear == entry["linear"] + entry["expert_tensors"] + entry["routers"]


def test_a_layer_types_list_of_the_wrong_length_is_refused_naming_the_field() -> None:
    config = _config("qwen3-next-80b-a3b-instruct") | {"layer_types": ["full_attention"] * 3}
    with pytest.raises(EngineError) as caught:
        parse_config(config)
    assert caught.value.field == "layer_types"


def test_an_unknown_block_in_a_nemotron_pattern_is_refused_naming_it() -> None:
    config = _config("nvidia-nemotron-nano-9b-v2") | {"hybrid_override_pattern": "M*-X"}
    with pytest.raises(EngineError) as caught:
        parse_config(config)
    assert caught.value.field == "hybrid_override_pattern"
    assert "'X'" in caught.value.reason


def test_a_nemotron_without_out_proj_adapters_is_what_peft_allows() -> None:
    """PEFT refuses LoRA on a Mamba block's out_proj; the engine's all-linear leaves it out."""
    shape = parse_config(_config("nvidia-nemotron-nano-9b-v2"))
    adapted = {spec.name for spec in shape.linears if spec.lora_target}
    assert "out_proj" not in adapted
    assert {"in_proj", "q_proj", "up_proj", "down_proj"} <= adapted


def test_gemma4_kv_shared_layers_have_no_key_value_projections_and_a_double_wide_mlp() -> None:
    """Gemma 4 E2B: of 35 layers the last 20 reuse an earlier layer's keys and values, so only
    15 have k_proj and v_proj; with use_double_wide_mlp those 20 have an MLP twice as wide."""
    config = _config("gemma-4-e2b-it")
    text = config["text_config"]
    shape = parse_config(config)
    layers, shared = text["num_hidden_layers"], text["num_kv_shared_layers"]
    instances: dict[str, int] = {}
    for spec in shape.linears:
        instances[spec.name] = instances.get(spec.name, 0) + spec.instances
    assert instances["q_proj"] == instances["o_proj"] == layers
    assert instances["k_proj"] == instances["v_proj"] == layers - shared
    widths = {spec.out_features: spec.layers for spec in shape.linears if spec.name == "up_proj"}
    assert widths == {text["intermediate_size"]: layers - shared,
                      2 * text["intermediate_size"]: shared}


def test_gemma4_per_layer_embeddings_are_an_embedding_table_not_linear_weights() -> None:
    """The per-layer embedding table (vocab_size_per_layer_input x layers x width) is kept as an
    embedding (16-bit under QLoRA); its projection from the hidden state is a linear layer."""
    config = _config("gemma-4-e4b-it")
    text = config["text_config"]
    shape = parse_config(config)
    packed = text["num_hidden_layers"] * text["hidden_size_per_layer_input"]
    assert shape.split.embedding == (text["vocab_size"] * text["hidden_size"]
                                     + text["vocab_size_per_layer_input"] * packed)
    (projection,) = (s for s in shape.linears if s.name == "per_layer_model_projection")
    assert (projection.in_features, projection.out_features, projection.layers) == (
        text["hidden_size"], packed, 1)


@pytest.mark.parametrize("slug", ["gemma-4-e2b-it", "gemma-4-26b-a4b"])
def test_a_gemma4_text_config_alone_is_the_language_model(slug: str) -> None:
    """``gemma4_text`` (Gemma4ForCausalLM) builds the language model of the checkpoint, tied
    lm_head, no towers."""
    text = _config(slug)["text_config"]
    shape = parse_config(text)
    assert shape.model_type == "gemma4_text"
    assert (shape.total_params, shape.tower_params) == (EXPECTED[slug]["text_total"], 0)


def test_gemma4_shared_layers_must_leave_each_kind_a_layer_of_its_own() -> None:
    """transformers refuses a config whose shared layers reuse a kind of layer no earlier layer
    computes (Gemma4TextConfig.kv_sharing_modes): E2B's first full layer is layer 4, so at most
    30 of its 35 layers may share."""
    config = _config("gemma-4-e2b-it")
    config["text_config"] = config["text_config"] | {"num_kv_shared_layers": 31}
    with pytest.raises(EngineError) as caught:
        parse_config(config)
    assert caught.value.field == "num_kv_shared_layers"
    assert "30" in caught.value.reason
    config["text_config"]["num_kv_shared_layers"] = 30
    assert parse_config(config).total_params > 0


def test_a_gemma4_layer_types_list_of_the_wrong_length_is_refused_naming_the_field() -> None:
    config = _config("gemma-4-31b-it")
    config["text_config"] = config["text_config"] | {"layer_types": ["full_attention"] * 3}
    with pytest.raises(EngineError) as caught:
        parse_config(config)
    assert caught.value.field == "layer_types"


def test_a_gemma4_estimate_says_its_activations_are_approximate() -> None:
    """The counts are exact; the activations are not modelled per attention width, nor the
    per-layer-embedding inputs: every Gemma 4 estimate says so, a Gemma 3 one does not."""
    from app.engine import GpuSpec, Job, estimate

    card = [GpuSpec("h200", "H200", 141 * 10**9, "9.0")]
    gemma4 = estimate(parse_config(_config("gemma-4-e2b-it")), Job(seq_len=1024), card)
    gemma3 = estimate(parse_config(_config("gemma-3-4b-it")), Job(seq_len=1024), card)
    assert "gemma4" in {key for key, _ in gemma4.assumption_items}
    assert "gemma4" not in {key for key, _ in gemma3.assumption_items}


@pytest.mark.parametrize(("slug", "key"), [("gemma-4-e4b-it", "tower_audio"),
                                           ("gemma-4-31b-it", "tower")])
def test_the_estimate_names_an_audio_tower_where_the_checkpoint_has_one(
        slug: str, key: str) -> None:
    """E2B and E4B carry an audio encoder beside the vision tower; the 26B and 31B do not.
    Training and serving estimates both say what the towers add, and how much is audio."""
    from app.engine import GpuSpec, Job, estimate
    from app.engine.serving import ServingJob, serving_estimate
    from app.engine.serving_kv import kv_layout

    config = _config(slug)
    shape = parse_config(config)
    card = GpuSpec("h200", "H200", 141 * 10**9, "9.0")
    training = dict(estimate(shape, Job(seq_len=1024), [card]).assumption_items)
    assert training[key]["params"] == EXPECTED[slug]["tower"]
    assert training[key].get("audio", 0) == EXPECTED[slug].get("audio_tower", 0)
    assert ({"tower", "tower_audio"} - {key}).isdisjoint(training)
    serving = serving_estimate(shape, kv_layout(config, shape), ServingJob(), [])
    assert dict(serving.assumption_items)[key]["params"] == EXPECTED[slug]["tower"]
