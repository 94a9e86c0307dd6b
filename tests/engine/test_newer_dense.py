"""Dense decoders of 2025 releases the engine did not count (issue 29, point 4): Seed-OSS
(``seed_oss``), ERNIE 4.5 dense (``ernie4_5``), EXAONE 4.0 (``exaone4``), Granite (``granite``),
Helium (``helium``) and OLMo 3 (``olmo3``) went the approximate path as unknown types.

The truth is transformers and PEFT (``expected_transformers_defaults.json``, its ``versions``:
transformers 5.24.0, PEFT 0.21.2, torch 2.13.0 on the meta device): each config class's
defaults (what transformers calls the family's reference configuration), and a variant with
the bias flags set where the class reads any, built with ``AutoModelForCausalLM.from_config``
and counted, then wrapped with ``LoraConfig(r=16, target_modules="all-linear")``. These are
transformers' own configurations, not checkpoints; the releases' config.json files, copied or
put together from public partial copies (ERNIE 4.5, Seed-OSS, EXAONE 4.0, Granite 4.0, Falcon-H1,
OLMo 3, Hunyuan-A13B: SOURCES.md), are held the same way by tests/engine/test_hf_configs.py
(``expected_hybrid.json``) and below against the parameter counts published for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine.architectures.approximate import shape_of
from app.engine.architectures.registry import parse_config
from app.engine.serving_kv import kv_layout
from app.engine.states import LoraSetup, lora_trainable_params

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
EXPECTED: dict[str, Any] = json.loads(
    (CONFIGS / "expected_transformers_defaults.json").read_text())
RELEASES: dict[str, Any] = json.loads((CONFIGS / "expected_hybrid.json").read_text())


def test_the_counts_are_transformers_5_24_s() -> None:
    assert EXPECTED["versions"]["transformers"] == "5.24.0"
    assert EXPECTED["versions"]["peft"] == "0.21.2"


@pytest.mark.parametrize("name", sorted(EXPECTED["models"]))
def test_counted_exactly_as_transformers_builds_it(name: str) -> None:
    case = EXPECTED["models"][name]
    shape = shape_of(case["config"])
    assert shape.approximation is None, name  # an unknown type was approximate
    assert shape.total_params == case["total"], name
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == case["lora_r16"], name


def _release(slug: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / f"{slug}.json").read_text())
    return config


@pytest.mark.parametrize(("slug", "model_type"), [
    ("ernie-4.5-0.3b-base", "ernie4_5"), ("seed-oss-36b-instruct", "seed_oss"),
    ("exaone-4.0-32b", "exaone4"), ("exaone-4.0-1.2b", "exaone4"),
    ("granite-4.0-micro", "granitemoehybrid"), ("granite-4.0-1b", "granitemoehybrid"),
    ("granite-4.0-h-micro", "granitemoehybrid"), ("falcon-h1-7b-base", "falcon_h1"),
    ("falcon-h1-1.5b-instruct", "falcon_h1"), ("olmo-3-1125-32b", "olmo3"),
    ("hunyuan-a13b-instruct", "hunyuan_v1_moe"),
])
def test_a_release_config_is_counted_as_transformers_builds_it(slug: str, model_type: str) -> None:
    shape = parse_config(_release(slug))
    assert (shape.model_type, shape.approximation) == (model_type, None)
    assert shape.total_params == RELEASES[slug]["total"]
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == RELEASES[slug]["lora_r16"]


def test_exaone_4_32b_is_the_size_lg_publishes_without_embeddings() -> None:
    """LG's model card: 30.95B parameters without embeddings; transformers' count less the
    untied input and output embeddings."""
    shape = parse_config(_release("exaone-4.0-32b"))
    without = shape.total_params - shape.split.embedding - shape.split.lm_head
    assert round(without / 1e9, 2) == 30.95


def test_exaone_4_32b_serves_three_sliding_layers_of_four() -> None:
    """Exaone4Config (transformers 5.24) makes every sliding_window_pattern-th layer full: of
    the release's 64 layers 16 keep the whole context, 48 the last 4,096 tokens."""
    config = _release("exaone-4.0-32b")
    layout = kv_layout(config, parse_config(config))
    assert (layout.full_layers, layout.sliding_layers, layout.window) == (16, 48, 4096)
    assert (layout.kv_heads, layout.head_dim) == (8, 128)


def test_seed_oss_36b_biases_q_k_v_but_not_o() -> None:
    """attention_bias true, attention_out_bias false: 64 layers x (q 80 x 128 + k and v
    8 x 128 each) bias parameters, none on o_proj."""
    config = _release("seed-oss-36b-instruct")
    without = parse_config({**config, "attention_bias": False})
    assert parse_config(config).total_params - without.total_params == 64 * (80 + 2 * 8) * 128


def test_exaone_4_1_2b_ties_its_embeddings_as_its_loaded_count_shows() -> None:
    """A public run loading LGAI-EXAONE/EXAONE-4.0-1.2B with transformers 4.57.3 printed
    1,279,391,488 parameters: the tied count (untied it would be 204.8 M more); the linear
    layers hold LG's "1.07B without embeddings"."""
    shape = parse_config(_release("exaone-4.0-1.2b"))
    assert shape.total_params == RELEASES["exaone-4.0-1.2b"]["total"] == 1_279_391_488
    assert shape.tied_embeddings and shape.split.lm_head == 0
    assert round(shape.split.linear / 1e9, 2) == 1.07


@pytest.mark.parametrize(("slug", "published"), [
    ("granite-4.0-micro", 3_402_836_480), ("granite-4.0-1b", 1_631_750_144),
    ("granite-4.0-h-micro", 3_191_396_096),
])
def test_granite_4_releases_are_the_sizes_published_for_them(slug: str, published: int) -> None:
    """The counts public model tables give for the three ids (SOURCES.md), which transformers
    5.24 builds from the assembled configs; H Micro's Mamba-2 layers hold no KV cache."""
    config = _release(slug)
    shape = parse_config(config)
    assert shape.total_params == RELEASES[slug]["total"] == published
    layout = kv_layout(config, shape)
    assert layout.full_layers == config["layer_types"].count("attention")


@pytest.mark.parametrize(("slug", "published"), [
    ("falcon-h1-7b-base", 7_585_648_736), ("falcon-h1-1.5b-instruct", 1_554_863_488),
])
def test_falcon_h1_releases_norm_their_mamba_output(slug: str, published: int) -> None:
    """The published counts hold the Mamba block's gated RMSNorm (``mamba_rms_norm``, one
    weight per Mamba channel a layer), which FalconH1Config leaves out by default."""
    config = _release(slug)
    assert parse_config(config).total_params == RELEASES[slug]["total"] == published
    without = parse_config({**config, "mamba_rms_norm": False}).total_params
    assert published - without == config["num_hidden_layers"] * config["mamba_d_ssm"]


@pytest.mark.parametrize(("slug", "published"), [
    ("olmo-3-1125-32b", 32_233_522_176), ("hunyuan-a13b-instruct", 80_393_183_232),
])
def test_olmo3_32b_and_hunyuan_a13b_are_their_published_sizes(slug: str, published: int) -> None:
    """OLMo 3 32B as public counts of the release list it (31,205,621,760 of it in linear
    layers); Hunyuan-A13B as its safetensors total, 13 B of it active (8 of 64 experts)."""
    shape = parse_config(_release(slug))
    assert shape.total_params == RELEASES[slug]["total"] == published
    if slug == "olmo-3-1125-32b":
        assert shape.split.linear == 31_205_621_760
    else:
        assert round(shape.active_params / 1e9) == 13
