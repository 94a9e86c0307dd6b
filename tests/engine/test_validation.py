"""Bad input is refused with the field named, never answered with a number."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine import EngineError, Job, estimate
from tests.engine.reference import reference_shape

BAD_JOBS: list[tuple[dict[str, Any], str]] = [
    ({"batch_size": 0}, "batch_size"),
    ({"batch_size": -3}, "batch_size"),
    ({"seq_len": 0}, "seq_len"),
    ({"seq_len": 131073}, "seq_len"),
    ({"lora_rank": 0}, "lora_rank"),
    ({"lora_targets": "everything"}, "lora_targets"),
    ({"lora_targets": ("q_proj", "c_attn")}, "lora_targets"),
    ({"lora_dropout": 1.0}, "lora_dropout"),
    ({"lora_dropout": float("nan")}, "lora_dropout"),
    ({"optimizer": "lion"}, "optimizer"),
    ({"method": "dora"}, "method"),
    ({"accounting": "mine"}, "accounting"),
    ({"attention": "ring"}, "attention"),
    ({"gpus": 0}, "gpus"),
    ({"sharding": "zero4"}, "sharding"),
    ({"method": "full", "quant": "nf4"}, "quant"),
    ({"method": "lora", "quant": "nf4-dq"}, "quant"),
    ({"offload": "optimizer+params", "sharding": "zero2", "gpus": 2}, "offload"),
]


@pytest.mark.parametrize(("change", "field"), BAD_JOBS)
def test_bad_job_names_its_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(EngineError) as caught:
        estimate(reference_shape("llama-3.1-8b"), Job(**change), [])
    assert caught.value.field == field
    assert caught.value.reason


def test_a_4bit_full_fine_tune_is_refused_with_the_reason() -> None:
    with pytest.raises(EngineError, match="adapters"):
        estimate(reference_shape("llama-3.1-8b"), Job(method="full", quant="nf4-dq"), [])


def test_qv_on_a_fused_attention_says_why() -> None:
    with pytest.raises(EngineError, match="qkv_proj"):
        estimate(reference_shape("phi-3-mini-4k"), Job(lora_targets="qv"), [])


def test_explicit_target_names_are_accepted() -> None:
    result = estimate(reference_shape("llama-3.1-8b"), Job(lora_targets=("q_proj", "v_proj")), [])
    # r * (h + h) + r * (h + kv) per layer
    assert result.params.trainable == 32 * 16 * ((4096 + 4096) + (4096 + 1024))
