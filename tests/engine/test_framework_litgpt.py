"""LitGPT as its scripts build and run a model (app/engine/framework_litgpt.py, issue 15).

Each test states one of the module's points as the bytes it adds or removes, against the same
job under the Hugging Face preset with the same dtypes.
"""

from __future__ import annotations

import dataclasses

import pytest

from app.engine import EngineError, EstimateResult, Job, ModelShape, estimate
from app.engine.framework_litgpt import NEXT_FORWARD_MOMENT, QKV_BYTES
from app.engine.states import NF4_BITS, QUANT_STATE_MODULE_BYTES
from tests.engine.reference import reference_shape


def _pure_bf16(job: Job) -> Job:
    """The same job under the Hugging Face preset with LitGPT's dtypes (bf16-true)."""
    return dataclasses.replace(job, framework="hf", precision="bf16", adapter_dtype="bf16",
                               base_dtype="bf16")


def _pair(slug: str, job: Job) -> tuple[ModelShape, EstimateResult, EstimateResult]:
    shape = reference_shape(slug)
    litgpt = estimate(shape, dataclasses.replace(job, framework="litgpt"), [])
    return shape, litgpt, estimate(shape, _pure_bf16(job), [])


def test_a_tied_checkpoint_gets_its_own_output_layer() -> None:
    shape, litgpt, hf = _pair("llama-3.2-3b", Job(method="lora"))
    assert shape.tied_embeddings
    head = shape.vocab_size * shape.hidden_size
    assert litgpt.per_gpu_bytes.weights - hf.per_gpu_bytes.weights == 2 * head
    assert litgpt.params.total == shape.total_params + head
    assert any("its own output layer" in text for text in litgpt.assumptions)


def test_an_untied_lora_step_peaks_as_the_shared_model_does() -> None:
    _, litgpt, hf = _pair("llama-3.1-8b", Job(method="lora"))
    assert litgpt.per_gpu_bytes.weights == hf.per_gpu_bytes.weights
    assert litgpt.peak_live_bytes == hf.peak_live_bytes
    assert NEXT_FORWARD_MOMENT in litgpt.phases


def test_qlora_stores_the_output_layer_in_nf4() -> None:
    shape, litgpt, hf = _pair("llama-3.1-8b", Job(method="qlora", quant="nf4"))
    head = shape.split.lm_head
    nf4 = round(head * NF4_BITS["nf4"] / 8) + QUANT_STATE_MODULE_BYTES["nf4"]
    assert hf.per_gpu_bytes.weights - litgpt.per_gpu_bytes.weights == 2 * head - nf4


def test_old_bitsandbytes_peaks_at_the_next_forward_with_the_previous_inputs() -> None:
    job = Job(method="qlora", batch_size=2, seq_len=512)
    shape, old, _ = _pair("llama-3.1-8b", dataclasses.replace(job, bnb_saves_inputs=True))
    _, current, _ = _pair("llama-3.1-8b", job)
    assert old.peak_phase == "forward"
    assert old.phases[NEXT_FORWARD_MOMENT] == old.peak_live_bytes
    assert current.phases[NEXT_FORWARD_MOMENT] < current.peak_live_bytes
    # This step's and the previous step's 4-bit inputs: the four a layer feeds (h, q, h, i)
    # in bf16, twice, in all but the first layer's attention.
    tokens = 2 * 512
    per_layer = 2 * (2 * shape.hidden_size + shape.q_width + shape.intermediate_size)
    held = old.phases[NEXT_FORWARD_MOMENT] - current.phases[NEXT_FORWARD_MOMENT]
    assert held >= 2 * per_layer * (shape.num_layers - 1) * tokens
    assert any("previous step's 4-bit inputs" in text for text in old.assumptions)


def test_multi_head_attention_keeps_the_fused_qkv_output_through_the_value() -> None:
    # Llama 7B has one key/value head per query head: every layer's saved v is a view of its
    # fused output, which keeps the q and k parts alive beside the copies attention saved.
    job = Job(method="lora", lora_targets=("q_proj", "v_proj"), batch_size=2, seq_len=1024)
    shape, litgpt, hf = _pair("llama-7b", job)
    assert shape.kv_width == shape.q_width
    kept = QKV_BYTES * (shape.q_width + shape.kv_width) * shape.num_layers * 2 * 1024
    assert litgpt.phases["start of backward"] - hf.phases["start of backward"] == kept


def test_checkpointing_keeps_the_fused_qkv_output_of_the_recomputed_layer_only() -> None:
    job = Job(method="lora", lora_targets=("q_proj", "v_proj"), batch_size=2, seq_len=1024,
              gradient_checkpointing=True)
    shape, litgpt, hf = _pair("llama-7b", job)
    kept = QKV_BYTES * (shape.q_width + shape.kv_width) * 2 * 1024
    assert litgpt.phases["end of backward"] - hf.phases["end of backward"] == kept


def test_grouped_query_attention_copies_the_value_and_keeps_nothing_more() -> None:
    job = Job(method="lora", lora_targets=("q_proj", "v_proj"), batch_size=2, seq_len=1024)
    shape, litgpt, hf = _pair("llama-3.1-8b", job)
    assert shape.kv_width < shape.q_width
    assert litgpt.phases["start of backward"] == hf.phases["start of backward"]


def test_fsdp_accumulation_holds_unsharded_gradients_of_every_block() -> None:
    shape = reference_shape("llama-3.1-8b")
    job = Job(framework="litgpt", method="lora", lora_targets=("q_proj", "v_proj"), gpus=4,
              sharding="zero3", sharding_impl="fsdp", gradient_checkpointing=True,
              gradient_accumulation=8)
    accumulating = estimate(shape, job, [])
    syncing = estimate(shape, dataclasses.replace(job, gradient_accumulation=1), [])
    blocks = shape.total_params - shape.split.embedding - shape.split.lm_head
    assert accumulating.peak_live_bytes - syncing.peak_live_bytes >= 2 * blocks * 0.99
    assert any("no_sync" in text for text in accumulating.assumptions)
    hf = estimate(shape, _pure_bf16(job), [])
    assert hf.peak_live_bytes < accumulating.peak_live_bytes


def test_litgpt_refuses_qlora_under_mixed_precision() -> None:
    shape = reference_shape("llama-3.1-8b")
    with pytest.raises(EngineError) as refused:
        estimate(shape, Job(framework="litgpt", method="qlora", precision="amp"), [])
    assert (refused.value.field, refused.value.key) == ("precision", "litgpt_quantised_mixed")
    assert estimate(shape, Job(framework="litgpt", method="lora", precision="amp"), [])
