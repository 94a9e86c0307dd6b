"""QLoRA on a mixture of experts stores what bitsandbytes really packs (issue 16).

transformers 5 keeps experts as fused 3-D parameters and routers as parameters; its
``load_in_4bit`` packs only ``nn.Linear`` modules, so those stay 16-bit and PEFT's
``prepare_model_for_kbit_training`` casts them to fp32. ``tools/moe_qlora_layout.py`` measured
it with transformers 5.24, PEFT 0.21.2 and bitsandbytes 0.50.2 on eight tiny MoE models
(``tests/fixtures/moe_qlora_layout.json``); the engine is held to that census here. The
``per-expert`` convention (transformers 4's layout, one ``nn.Linear`` per expert) keeps the
experts in NF4.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine.architectures.registry import parse_config
from app.engine.assumptions import assumption_items
from app.engine.estimate import estimate
from app.engine.job import Job
from app.engine.states import (
    KBIT_PREPARED_BYTES,
    LoraSetup,
    base_weight_bytes,
    lora_trainable_params,
    packed_specs,
)

LAYOUT = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "moe_qlora_layout.json").read_text()
)
MODELS: dict[str, dict[str, Any]] = LAYOUT["models"]


def _packed(census: dict[str, Any]) -> int:
    return sum(kind["packed"] for kind in census.values())


def _unpacked(census: dict[str, Any], dtype: str | None = None) -> int:
    return sum(n for kind in census.values() for d, n in kind["unpacked"].items()
               if dtype is None or d == dtype)


def test_the_census_covers_the_moe_families_with_current_libraries() -> None:
    assert set(MODELS) >= {"qwen3_moe", "mixtral", "gpt_oss", "deepseek_v3", "glm4_moe",
                           "minimax_m2", "llama4_text", "gemma4_text", "longcat_flash"}
    assert LAYOUT["versions"]["transformers"].startswith("5.")
    assert LAYOUT["versions"]["bitsandbytes"].startswith("0.50")


NN_LINEAR_ROUTERS = frozenset({"longcat_flash"})
"""Routers held as an ``nn.Linear`` (LongCat-Flash's ``router.classifier``): packed like any
other linear layer."""


@pytest.mark.parametrize("slug", sorted(MODELS))
def test_no_fused_expert_or_router_is_packed_and_prepare_makes_them_fp32(slug: str) -> None:
    measured = MODELS[slug]
    kinds = ("experts",) if slug in NN_LINEAR_ROUTERS else ("experts", "router")
    for kind in kinds:
        assert measured["loaded"][kind]["packed"] == 0
        assert set(measured["prepared"][kind]["unpacked"]) == {"float32"}
    assert measured["loaded"]["block"]["packed"] > 0


def test_an_nn_linear_router_is_packed_in_nf4() -> None:
    """LongCat-Flash: its ``_keep_in_fp32_modules`` names ``classifier.weight``, a parameter,
    which the bitsandbytes swap (matching module names) does not skip: 4 experts and 2
    identity experts over 64, all NF4."""
    router = MODELS["longcat_flash"]["loaded"]["router"]
    assert (router["packed"], router["unpacked"]) == (64 * (4 + 2), {})


@pytest.mark.parametrize("slug", sorted(MODELS))
def test_the_engine_packs_exactly_what_bitsandbytes_packed(slug: str) -> None:
    measured = MODELS[slug]
    shape = parse_config(measured["config"])
    assert shape.total_params == measured["total"]
    packed = sum(spec.weight_params for spec in packed_specs(shape, "fused"))
    assert packed == _packed(measured["prepared"])
    assert shape.total_params - packed == _unpacked(measured["prepared"], "float32")


@pytest.mark.parametrize("slug", sorted(MODELS))
def test_the_prepared_base_weighs_what_was_measured(slug: str) -> None:
    """NF4 codes, their quantisation state and the fp32 rest, within 1 %."""
    measured = MODELS[slug]
    shape = parse_config(measured["config"])
    prepared = measured["prepared"]
    measured_bytes = (sum(k["packed_bytes"] + k["quant_state_bytes"] for k in prepared.values())
                      + 4 * _unpacked(prepared, "float32"))
    engine = base_weight_bytes(shape, "qlora", "nf4-dq", KBIT_PREPARED_BYTES)
    assert abs(engine - measured_bytes) <= 0.01 * measured_bytes


@pytest.mark.parametrize("slug", sorted(MODELS))
def test_lora_on_the_4bit_model_trains_what_the_engine_counts(slug: str) -> None:
    measured = MODELS[slug]
    shape = parse_config(measured["config"])
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == measured["lora_r16"]


def test_per_expert_keeps_the_transformers_4_layout_in_nf4() -> None:
    shape = parse_config(MODELS["qwen3_moe"]["config"])
    assert packed_specs(shape, "per-expert") == shape.linears
    fused = base_weight_bytes(shape, "qlora", "nf4-dq", KBIT_PREPARED_BYTES)
    per_expert = base_weight_bytes(shape, "qlora", "nf4-dq", KBIT_PREPARED_BYTES, "per-expert")
    experts = sum(spec.weight_params for spec in shape.linears if not spec.packed_4bit)
    assert experts > 0
    assert fused - per_expert > 3 * experts  # 4 bytes against about half a byte each


def test_a_qlora_estimate_of_a_moe_says_its_experts_stay_16_bit() -> None:
    shape = parse_config(MODELS["qwen3_moe"]["config"])
    keys = [key for key, _ in assumption_items(shape, Job(method="qlora"))]
    assert "qlora_fused_experts_16bit" in keys
    per_expert = Job(method="qlora", moe_lora="per-expert")
    assert "qlora_fused_experts_16bit" not in [k for k, _ in assumption_items(shape, per_expert)]
    dense = parse_config({**MODELS["qwen3_moe"]["config"], "model_type": "qwen3",
                          "intermediate_size": 96})
    assert "qlora_fused_experts_16bit" not in [
        key for key, _ in assumption_items(dense, Job(method="qlora"))]


def test_a_real_moe_needs_far_more_than_nf4_experts_would() -> None:
    """Qwen3-30B-A3B's experts are almost all of it: counted at fp32 after prepare."""
    shape = parse_config(json.loads(
        (Path(__file__).resolve().parents[2] / "app" / "catalog" / "seed" / "models"
         / "qwen3-30b-a3b.json").read_text()))
    job = Job(method="qlora", batch_size=1, seq_len=2048, gradient_checkpointing=True)
    fused = estimate(shape, job, (), with_levers=False).per_gpu_bytes.weights
    per_expert = estimate(shape, Job(method="qlora", batch_size=1, seq_len=2048,
                                     gradient_checkpointing=True, moe_lora="per-expert"),
                          (), with_levers=False).per_gpu_bytes.weights
    assert fused > 100 * 10**9 > 20 * 10**9 > per_expert
