"""QLoRA as bitsandbytes runs it (issue 15, point 1): what prepare_model_for_kbit_training
keeps in fp32, and the switch for bitsandbytes releases that kept every 4-bit layer's input.

The numbers themselves are held to real bitsandbytes steps by test_calibration.py
(tools/calibrate/results/cpu-qlora.json); these tests pin the switches and their wording.
"""

from __future__ import annotations

import dataclasses

import pytest

from app.engine.activations import BNB_SAVED_INPUT_BYTES, bnb_saved_inputs_bytes_per_token
from app.engine.assumptions import assumption_items
from app.engine.errors import EngineError
from app.engine.estimate import estimate
from app.engine.job import Job
from app.engine.precision import bnb_saves_inputs
from app.engine.states import NF4_BITS, QUANT_STATE_MODULE_BYTES, base_weight_bytes
from tests.engine.reference import reference_shape

SHAPE = reference_shape("llama-3.1-8b")
QLORA = Job(method="qlora", batch_size=1, seq_len=2048)


def peak(job: Job) -> int:
    return estimate(SHAPE, job, (), with_levers=False).peak_live_bytes


def test_prepare_model_for_kbit_training_keeps_the_rest_in_fp32() -> None:
    """Mixed precision (the hf preset) runs PEFT's prepare: embeddings and lm_head at 4 bytes;
    pure bf16 does not, and keeps them at 2."""
    split = SHAPE.split
    rest = split.total - split.linear
    amp = estimate(SHAPE, QLORA, (), with_levers=False).per_gpu_bytes.weights
    bf16 = estimate(SHAPE, dataclasses.replace(QLORA, precision="bf16"), (),
                    with_levers=False).per_gpu_bytes.weights
    assert amp - bf16 == 2 * rest
    modules = sum(spec.instances for spec in SHAPE.linears)
    assert base_weight_bytes(SHAPE, "qlora", "nf4-dq") == (
        round(split.linear * NF4_BITS["nf4-dq"] / 8) + QUANT_STATE_MODULE_BYTES["nf4-dq"] * modules
        + 2 * rest
    )


def test_old_bitsandbytes_keeps_every_4bit_layer_input() -> None:
    """Without checkpointing, every layer but the first's attention projections keeps a bf16
    copy of each 4-bit layer's fp32 input (o_proj's input is saved by attention anyway)."""
    old = dataclasses.replace(QLORA, bnb_saves_inputs=True)
    per_layer, first_layer_skip = bnb_saved_inputs_bytes_per_token(SHAPE, "qlora")
    h, i = SHAPE.hidden_size, SHAPE.intermediate_size
    assert per_layer == BNB_SAVED_INPUT_BYTES * (3 * h + 2 * h + i)
    assert first_layer_skip == BNB_SAVED_INPUT_BYTES * 3 * h
    tokens = QLORA.batch_size * QLORA.seq_len
    assert peak(old) - peak(QLORA) == tokens * (per_layer * SHAPE.num_layers - first_layer_skip)


def test_old_bitsandbytes_under_reentrant_checkpointing_keeps_one_layer() -> None:
    checkpointed = dataclasses.replace(QLORA, gradient_checkpointing=True)
    old = dataclasses.replace(checkpointed, bnb_saves_inputs=True)
    per_layer, _ = bnb_saved_inputs_bytes_per_token(SHAPE, "qlora")
    assert 0 <= peak(old) - peak(checkpointed) <= per_layer * QLORA.seq_len


def test_the_switch_changes_nothing_without_4bit_layers() -> None:
    lora = Job(method="lora", batch_size=1, seq_len=2048)
    assert peak(dataclasses.replace(lora, bnb_saves_inputs=True)) == peak(lora)


def test_the_assumptions_say_which_bitsandbytes_and_which_rest() -> None:
    keys = [key for key, _ in assumption_items(SHAPE, QLORA)]
    assert "bnb_current" in keys and "qlora_prepared" in keys
    old = [key for key, _ in assumption_items(
        SHAPE, dataclasses.replace(QLORA, bnb_saves_inputs=True, precision="bf16"))]
    assert "bnb_saves_inputs" in old and "qlora_base_dtype" in old
    assert not {"bnb_current", "bnb_saves_inputs"} & {
        key for key, _ in assumption_items(SHAPE, Job(method="lora"))
    }


def test_the_switch_is_a_boolean() -> None:
    with pytest.raises(EngineError) as raised:
        estimate(SHAPE, dataclasses.replace(QLORA, bnb_saves_inputs="yes"),  # type: ignore[arg-type]
                 (), with_levers=False)
    assert raised.value.field == "bnb_saves_inputs"


def test_the_surfaces_bnb_version_maps_to_the_switch_and_only_for_qlora() -> None:
    """``bnb_version`` (CLI --bnb-version, API, page) -> Job.bnb_saves_inputs: ``0.41`` on a
    LoRA or full fine-tune is a contradiction, refused naming the field (issue 15, point 1)."""
    assert bnb_saves_inputs("0.41", "qlora") is True
    assert not any(bnb_saves_inputs("current", method) for method in ("full", "lora", "qlora"))
    for method in ("full", "lora"):
        with pytest.raises(EngineError) as raised:
            bnb_saves_inputs("0.41", method)
        assert (raised.value.field, raised.value.key) == ("bnb_version", "bnb_needs_qlora")
    with pytest.raises(EngineError) as raised:
        bnb_saves_inputs("0.39", "qlora")  # type: ignore[arg-type]
    assert (raised.value.field, raised.value.key) == ("bnb_version", "not_one_of")
