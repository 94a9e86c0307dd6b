"""Issue 15, point 5: activation offload with checkpointing, LoRA on lm_head, 'qv' on a fused
attention projection. Each test failed before its fix."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.engine import EngineError, Job, estimate
from app.engine.activations import OFFLOAD_STASH_TENSORS
from tests.engine.reference import reference_shape


def test_activation_offload_with_checkpointing_saves_memory() -> None:
    """torchtune's recommended pair: the checkpoints (one input per layer) go to the CPU and
    at most OffloadActivations' forward stash of them stays on the GPU."""
    shape = reference_shape("llama-3.1-8b")
    job = Job(method="full", gradient_checkpointing=True, batch_size=2, seq_len=4096)
    plain = estimate(shape, job, []).phases["start of backward"]
    offloaded = estimate(shape, replace(job, activation_offload=True), [])
    # one bf16 layer input per layer and token, all but the stash's five on the CPU
    saved_input = 2 * shape.hidden_size * 2 * 4096
    moved = saved_input * (shape.num_layers - OFFLOAD_STASH_TENSORS)
    assert plain - offloaded.phases["start of backward"] == moved


def test_lm_head_is_a_lora_target_with_its_params_and_activations() -> None:
    shape = reference_shape("llama-3.1-8b")
    base = estimate(shape, Job(lora_targets=("q_proj", "v_proj")), [])
    head = estimate(shape, Job(lora_targets=("q_proj", "v_proj", "lm_head")), [])
    rank = 16
    assert head.params.trainable - base.params.trainable == rank * (
        shape.hidden_size + shape.vocab_size
    )
    adapter = rank * (shape.hidden_size + shape.vocab_size)
    # the optimizer step holds 16 bytes per adapter param (fp32 weight, gradient, two moments)
    moment = "optimizer step"
    assert head.phases[moment] - base.phases[moment] == 16 * adapter
    # the start of backward: fp32 weight and moments (12), autocast's bf16 copy (2), and per
    # token the adapter's saved input (2h) and lora_A's output (2r)
    moment = "start of backward"
    acts = 2048 * (2 * shape.hidden_size + 2 * rank)
    assert head.phases[moment] - base.phases[moment] == 14 * adapter + acts


def test_lm_head_adapter_activations_survive_checkpointing() -> None:
    shape = reference_shape("llama-3.1-8b")
    base = estimate(shape, Job(gradient_checkpointing=True, lora_targets=("q_proj",)), [])
    head = estimate(
        shape, Job(gradient_checkpointing=True, lora_targets=("q_proj", "lm_head")), []
    )
    states = 16 * 16 * (shape.hidden_size + shape.vocab_size)
    assert head.peak_live_bytes - base.peak_live_bytes > states


def test_qv_on_phi3_says_why_and_suggests_attention() -> None:
    with pytest.raises(EngineError) as caught:
        estimate(reference_shape("phi-3-mini-4k"), Job(lora_targets="qv"), [])
    assert caught.value.field == "lora_targets"
    assert "qkv_proj" in caught.value.reason
    assert "PEFT" in caught.value.reason
    assert "'attention'" in caught.value.reason
    estimate(reference_shape("phi-3-mini-4k"), Job(lora_targets="attention"), [])
