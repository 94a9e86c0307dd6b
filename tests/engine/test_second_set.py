"""The second set of newer families (issue 29, point 2): counted exactly, not approximated.

Each was sized approximately before, and misleadingly: SmolLM3 8.5 % high (its embeddings taken
as untied), Qwen3-VL without its vision tower, and Qwen3-VL-MoE's LoRA as one adapter per
expert where PEFT 0.21 adapts attention only. The expected figures are transformers 5.25 and
PEFT 0.21 on the meta device (``tools/model_counts.py`` -> ``expected_hybrid.json``,
``tools/moe_counts.py`` -> ``expected_moe.json``) from the released configs
(``tests/fixtures/hf_configs/SOURCES.md``); ``test_hf_configs.py`` and ``test_moe_configs.py``
hold every figure, these tests the points the issue names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine.architectures.approximate import shape_of
from app.engine.estimate import estimate
from app.engine.job import GpuSpec, Job
from app.engine.serving_kv import kv_layout
from app.engine.states import LoraSetup, lora_trainable_params

CARD = GpuSpec("card", "Card", 141 * 10**9, "9.0")
CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
HYBRID: dict[str, dict[str, Any]] = json.loads((CONFIGS / "expected_hybrid.json").read_text())
MOE: dict[str, dict[str, Any]] = json.loads((CONFIGS / "expected_moe.json").read_text())["models"]


def _config(slug: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / f"{slug}.json").read_text())
    return config


@pytest.mark.parametrize("slug", [
    "smollm3-3b", "qwen3-vl-2b-instruct", "qwen3-vl-8b-instruct", "qwen3-vl-30b-a3b-instruct",
    "qwen3-vl-235b-a22b-instruct",
])
def test_counted_exactly_not_approximately(slug: str) -> None:
    shape = shape_of(_config(slug))
    assert shape.approximation is None
    assert shape.total_params == HYBRID[slug]["text_total"]
    assert shape.tower_params == HYBRID[slug]["tower"]


def test_smollm3_ties_its_embeddings_as_its_config_class_does() -> None:
    """``SmolLM3Config.tie_word_embeddings`` defaults to True: leaving it out changes nothing."""
    config = _config("smollm3-3b")
    del config["tie_word_embeddings"]
    shape = shape_of(config)
    assert shape.tied_embeddings and shape.split.lm_head == 0
    assert shape.total_params == HYBRID["smollm3-3b"]["total"] == 3_075_098_624


@pytest.mark.parametrize("slug", ["qwen3-vl-8b-instruct", "qwen3-vl-30b-a3b-instruct"])
def test_the_qwen3_vl_tower_is_counted_frozen_and_stated(slug: str) -> None:
    shape = shape_of(_config(slug))
    result = estimate(shape, Job(method="lora"), [CARD])
    assert shape.tower_params == HYBRID[slug]["tower"] > 500_000_000
    assert ("tower", {"params": shape.tower_params}) in result.assumption_items


@pytest.mark.parametrize("slug", ["qwen3-vl-30b-a3b-instruct", "qwen3-vl-235b-a22b-instruct"])
def test_qwen3_vl_moe_lora_follows_peft_and_the_per_expert_convention(slug: str) -> None:
    """PEFT 0.21 has no conversion entry for qwen3_vl_moe: it adapts attention only (the fused
    experts and the router are parameters it leaves alone); per expert, every expert too."""
    shape = shape_of(_config(slug))
    fused = lora_trainable_params(shape, LoraSetup(rank=16))
    per_expert = lora_trainable_params(shape, LoraSetup(rank=16, moe_lora="per-expert"))
    assert fused == MOE[slug]["lora_r16"] == HYBRID[slug]["lora_r16_text"]
    assert per_expert == MOE[slug]["lora_r16_per_expert"]
    assert per_expert > 50 * fused
    assert shape.active_params == MOE[slug]["active"]


@pytest.mark.parametrize(("slug", "per_token"), [
    # 2 (K and V) x layers x kv heads x head_dim x 2 bytes (bf16)
    ("smollm3-3b", 2 * 36 * 4 * 128 * 2),
    ("qwen3-vl-8b-instruct", 2 * 36 * 8 * 128 * 2),
    ("qwen3-vl-30b-a3b-instruct", 2 * 48 * 4 * 128 * 2),
])
def test_kv_bytes_per_token_for_serving(slug: str, per_token: int) -> None:
    config = _config(slug)
    assert kv_layout(config, shape_of(config)).bytes_per_token(1, 2) == per_token


def test_mimo_v2_flash_counts_its_experts() -> None:
    """It was sized approximately at 16.0 B, about 5 % of its 308.8 B (the experts missed)."""
    shape = shape_of(_config("mimo-v2-flash"))
    expected = MOE["mimo-v2-flash"]
    assert shape.approximation is None
    assert shape.total_params == expected["total"] == 308_778_768_832
    assert shape.active_params == expected["active"]
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == expected["lora_r16"]
    per_expert = LoraSetup(rank=16, moe_lora="per-expert")
    assert lora_trainable_params(shape, per_expert) == expected["lora_r16_per_expert"]


# Point 3: on a multimodal checkpoint LoRA "all-linear" adapts what PEFT adapts when it wraps
# that checkpoint's class (the language model's share; the tower stays frozen, and the note
# "tower_lora" says so). tools/model_counts.py's lora_r16_text is that figure.
MULTIMODAL = {
    "kimi-k2.5": "kimi_k25", "gemma-3-4b-it": "gemma3", "gemma-4-26b-a4b": "gemma4",
    "gemma-4-e4b-it": "gemma4", "mistral-small-3.1-24b-instruct-2503": "mistral3",
    "qwen3.5-27b": "qwen3_5", "qwen3.6-35b-a3b": "qwen3_5_moe",
    "qwen3-vl-8b-instruct": "qwen3_vl", "qwen3-vl-30b-a3b-instruct": "qwen3_vl_moe",
    "llama-4-scout-17b-16e-instruct": "llama4", "llama-4-maverick-17b-128e-instruct": "llama4",
}


@pytest.mark.parametrize("slug", sorted(MULTIMODAL))
def test_multimodal_lora_is_what_peft_builds_on_the_checkpoint_class(slug: str) -> None:
    shape = shape_of(_config(slug))
    assert shape.model_type == MULTIMODAL[slug]
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == HYBRID[slug]["lora_r16_text"]
    result = estimate(shape, Job(method="lora"), [CARD])
    assert ("tower_lora", {}) in result.assumption_items


def test_kimi_k25_is_not_adapted_per_expert_by_peft() -> None:
    """PEFT 0.21 looks up ``kimi_k25`` in its conversion table and finds nothing: it adapts the
    language model's nn.Linear layers only (88.8 M at r16), not the experts (11.8 B, which the
    engine gave before)."""
    shape = shape_of(_config("kimi-k2.5"))
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == 88_798_208
    assert MOE["kimi-k2.5"]["lora_r16"] == 88_798_208


@pytest.mark.parametrize("slug", ["deepseek-v4-flash", "deepseek-v4-pro"])
def test_deepseek_v4_is_counted_exactly(slug: str) -> None:
    """Refused before ("needs intermediate_size"): V4-Flash 284.3 B (13.8 B active), V4-Pro
    1.57 T (49.8 B active), each figure to the parameter."""
    shape = shape_of(_config(slug))
    expected = MOE[slug]
    assert shape.approximation is None
    assert (shape.total_params, shape.active_params) == (expected["total"], expected["active"])
    assert shape.split.norm == expected["norm"]
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == expected["lora_r16"]
    per_expert = LoraSetup(rank=16, moe_lora="per-expert")
    assert lora_trainable_params(shape, per_expert) == expected["lora_r16_per_expert"]


def test_deepseek_v4_reads_layer_types_as_its_legacy_compress_ratios() -> None:
    """The release spells the layer kinds as ``compress_ratios`` (44 entries for 43 layers:
    transformers cuts the list); the same kinds as ``layer_types`` count the same."""
    config = _config("deepseek-v4-flash")
    kinds = {0: "sliding_attention", 4: "compressed_sparse_attention",
             128: "heavily_compressed_attention"}
    renamed = {k: v for k, v in config.items() if k != "compress_ratios"}
    renamed["layer_types"] = [kinds[r] for r in config["compress_ratios"]]
    assert shape_of(renamed).total_params == shape_of(config).total_params


def test_lfm2_is_counted_exactly_and_serves_from_its_attention_layers() -> None:
    """Refused before ("needs intermediate_size": LFM2 names it block_ff_dim). LFM2-1.2B:
    1,170,340,608 parameters (ten short-convolution and six attention layers, the MLP width
    adjusted to 8192 as Lfm2MLP adjusts it, tied); a token's KV sits in the six attention
    layers only: 2 x 6 x 8 kv heads x 64 x 2 bytes."""
    config = _config("lfm2-1.2b")
    shape = shape_of(config)
    assert shape.approximation is None
    assert shape.total_params == HYBRID["lfm2-1.2b"]["total"] == 1_170_340_608
    assert shape.intermediate_size == 8192
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == HYBRID["lfm2-1.2b"]["lora_r16"]
    assert kv_layout(config, shape).bytes_per_token(1, 2) == 2 * 6 * 8 * 64 * 2
    listed = {k: v for k, v in config.items() if k != "full_attn_idxs"}
    listed["layer_types"] = ["full_attention" if i in config["full_attn_idxs"] else "conv"
                             for i in range(16)]
    assert shape_of(listed).total_params == shape.total_params
    assert kv_layout(listed, shape).bytes_per_token(1, 2) == 2 * 6 * 8 * 64 * 2
