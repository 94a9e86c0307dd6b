"""Every figure the shop's article prints, reproduced by the engine.

One test per case in ``seed-figures.json``, generated from the file: a new case there is a new
test here, and a case of a kind this module cannot read fails instead of passing silently.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.engine.capabilities import capabilities
from app.engine.states import LoraSetup, ModelStates, shard_states, single_gpu_states
from tests.engine.reference import GB, reference_shape, seed_figures

CASES = seed_figures()["cases"]
CARD_CC = {case_id: spec["cc"] for case_id, spec in
           next(c for c in CASES if c["id"] == "fp8-support")["expect"].items()}


def states_for(case: dict[str, Any], slug: str | None = None) -> ModelStates:
    shape = reference_shape(slug or case["model"])
    method = case.get("method", "lora")
    single = single_gpu_states(
        shape,
        method=method,
        optimizer=case.get("optimizer", "adamw"),
        accounting=case.get("accounting", "zero"),
        lora=LoraSetup(
            rank=case.get("lora_rank", 16), targets=case.get("lora_targets", "all-linear")
        ),
    )
    gpus = case.get("gpus", 1)
    return shard_states(single, gpus=gpus, sharding=case.get("sharding", "none"))


def check_total_params(case: dict[str, Any]) -> None:
    assert reference_shape(case["model"]).total_params == case["expect"]


def check_printed_params(case: dict[str, Any]) -> None:
    printed = {"llama-3.1-8b": 8.03, "qwen3-32b": 32.76, "llama-3.3-70b": 70.55}
    assert case["what"].endswith("8.03, 32.76, 70.55 billion")
    for slug, billions in printed.items():
        assert round(reference_shape(slug).total_params / 1e9, 2) == billions


def check_states_gb(case: dict[str, Any]) -> None:
    assert states_for(case).total_bytes / GB == pytest.approx(case["expect_gb"], abs=case["tol"])


def check_trainable(case: dict[str, Any]) -> None:
    assert states_for(case).trainable_params == case["expect"]
    printed_millions, printed_percent = case["printed"].replace(" million", "").split(", ")
    shape = reference_shape(case["model"])
    trainable = states_for(case).trainable_params
    assert f"{trainable / 1e6:.1f}" == printed_millions
    assert f"{100 * trainable / shape.total_params:.2f} %" == printed_percent


def check_per_model_gb(case: dict[str, Any], attribute: str) -> None:
    for slug, expected in case["expect_gb"].items():
        states = states_for({"method": "lora"}, slug)
        assert getattr(states, attribute) / GB == pytest.approx(expected, abs=case["tol"]), slug


def check_rank_64(case: dict[str, Any]) -> None:
    assert "four times" in case["what"]
    for slug in ("llama-3.1-8b", "qwen3-32b", "llama-3.3-70b"):
        r16 = states_for({"method": "lora", "lora_rank": 16}, slug)
        r64 = states_for({"method": "lora", "lora_rank": 64}, slug)
        assert r64.trainable_params == 4 * r16.trainable_params
        assert r64.adapter_bytes == 4 * r16.adapter_bytes


def check_bf16_params(case: dict[str, Any]) -> None:
    for slug, billions in case["expect_billions"].items():
        split = reference_shape(slug).split
        assert (split.total - split.linear) / 1e9 == pytest.approx(billions, abs=case["tol"])


def check_qlora_base(case: dict[str, Any]) -> None:
    base = states_for({"method": "qlora"}, case["model"]).weights_bytes
    assert base / GB == pytest.approx(case["expect_gb"], abs=case["tol"])


def check_fit(case: dict[str, Any]) -> None:
    usable = case["usable_gb"] * GB
    needed = states_for(case).total_bytes
    free = usable - needed
    if "expect_free_gb" in case:
        assert free / GB == pytest.approx(case["expect_free_gb"], abs=case["tol"])
    if "expect_free_fraction" in case:
        assert free / usable == pytest.approx(case["expect_free_fraction"], abs=case["tol"])
    if "expect_fits" in case:
        assert (needed <= usable) is case["expect_fits"]
    if "expect_units_with_fsdp" in case:
        single = states_for(case)
        units = next(
            n for n in range(1, 65)
            if shard_states(single, gpus=n, sharding="zero3" if n > 1 else "none").total_bytes
            <= usable
        )
        assert units == case["expect_units_with_fsdp"]


def check_shard(case: dict[str, Any]) -> None:
    per_gpu = states_for(case).total_bytes / GB
    assert per_gpu == pytest.approx(case["expect_gb_per_gpu"], abs=case["tol"])


def check_playbook(case: dict[str, Any]) -> None:
    """The runs NVIDIA's DGX Spark playbook makes on one unit hold in 128 GB (states only);
    the 70B LoRA needs FSDP over two."""
    usable = 128 * GB
    assert states_for({"method": "full"}, "llama-3.2-3b").total_bytes <= usable
    assert states_for({"method": "lora"}, "llama-3.1-8b").total_bytes <= usable
    assert states_for({"method": "qlora"}, "llama-3.3-70b").total_bytes <= usable
    lora_70b = states_for({"method": "lora"}, "llama-3.3-70b")
    assert lora_70b.total_bytes > usable
    assert shard_states(lora_70b, gpus=2, sharding="zero3").total_bytes <= usable


def check_formats(case: dict[str, Any]) -> None:
    for card, expected in case["expect"].items():
        caps = capabilities(expected["cc"])
        assert (caps.fp8, caps.mxfp8, caps.nvfp4) == (
            expected["fp8"], expected["mxfp8"], expected["nvfp4"]
        ), card


def check_gpt2_context(case: dict[str, Any]) -> None:
    """Context only (the ZeRO paper's GPT-2 1.5B): states of about 24 GB; activations at seq 1K,
    batch 32 several times the states; checkpointing cuts them by far more than half."""
    from app.engine import Job
    from app.engine.step_model import step_model

    shape = reference_shape("gpt2-xl")
    states = states_for({"method": "full"}, "gpt2-xl").total_bytes
    assert states / GB == pytest.approx(24.9, abs=0.1)
    plain = step_model(shape, Job(method="full", attention="eager", seq_len=1024))
    ckpt = step_model(shape, Job(method="full", attention="eager", seq_len=1024,
                                 gradient_checkpointing=True))
    plain_act = plain.totals(32, 1024).peak_live_bytes - states
    ckpt_act = ckpt.totals(32, 1024).peak_live_bytes - states
    assert plain_act > 2 * states
    assert ckpt_act < plain_act / 3


def check_qlora_context(case: dict[str, Any]) -> None:
    """Context only (QLoRA paper, 7B, batch 1): adapter tiny next to activations; checkpointing
    removes most of the per-layer activations."""
    from app.engine import Job
    from app.engine.step_model import step_model

    shape = reference_shape("llama-7b")
    states = states_for({"method": "qlora"}, "llama-7b")
    plain = step_model(shape, Job(method="qlora", seq_len=512)).totals(1, 512).peak_live_bytes
    assert plain - states.total_bytes > 10 * states.adapter_weight_bytes
    ckpt = step_model(shape, Job(method="qlora", seq_len=512, gradient_checkpointing=True))
    assert ckpt.totals(1, 512).peak_live_bytes < plain


def dispatch(case: dict[str, Any]) -> None:
    case_id = case["id"]
    if case_id == "printed-params":
        return check_printed_params(case)
    if case_id == "lora-rank-64":
        return check_rank_64(case)
    if case_id == "spark-playbook":
        return check_playbook(case)
    if case_id == "fp8-support":
        return check_formats(case)
    if case_id == "context-activations-gpt2":
        return check_gpt2_context(case)
    if case_id == "context-qlora-7b-activations":
        return check_qlora_context(case)
    if case_id == "lora-adapter-gb":
        return check_per_model_gb(case, "adapter_bytes")
    if case_id == "lora-base-gb":
        return check_per_model_gb(case, "weights_bytes")
    if case_id == "qlora-bf16-params":
        return check_bf16_params(case)
    if case_id == "qlora-7b-base":
        return check_qlora_base(case)
    if case.get("what") == "total parameters":
        return check_total_params(case)
    if case.get("what") == "trainable parameters":
        return check_trainable(case)
    if "gpu" in case:
        return check_fit(case)
    if "expect_gb_per_gpu" in case:
        return check_shard(case)
    if "expect_gb" in case:
        return check_states_gb(case)
    raise AssertionError(f"case {case_id} has a kind this test does not know; teach it")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_article_figure(case: dict[str, Any]) -> None:
    dispatch(case)


def test_every_card_in_the_article_has_a_compute_capability() -> None:
    assert set(CARD_CC) == {"h200-nvl", "rtx-pro-6000", "rtx-pro-5000", "rtx-pro-4500",
                            "dgx-spark"}
