"""What ZeRO-3 and FSDP hold per GPU beyond the shards (issue 15, point 3; engine sharding.py)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import EngineError, Job, parse_config
from app.engine.assumptions import assumption_items
from app.engine.job import validate
from app.engine.overhead import (
    FSDP_ALLOCATOR_RESERVE_FRACTION,
    NCCL_BUFFER_BYTES,
    fixed_overhead_bytes,
)
from app.engine.sharding import (
    DS_ALLGATHER_BUCKET_SIZE,
    DS_MAX_LIVE_PARAMETERS,
    DS_PARAM_PERSISTENCE_THRESHOLD,
    DS_PREFETCH_BUCKET_SIZE,
    DS_REDUCE_BUCKET_SIZE,
    FSDP_LIVE_UNITS,
    HALF_BYTES,
    checked_impl,
    fsdp_root_params,
    sharded_extras,
    unsharded_quant_state,
)
from app.engine.states import quant_state_bytes
from app.engine.step_model import model_states, step_model
from tests.engine.reference import SEED_MODELS, reference_shape

LLAMA_70B = reference_shape("llama-3.3-70b")


def test_deepspeed_defaults_are_the_documented_ones() -> None:
    # deepspeed/runtime/zero/config.py, DeepSpeedZeroConfig (the module docstring cites lines).
    assert DS_REDUCE_BUCKET_SIZE == 500_000_000
    assert DS_ALLGATHER_BUCKET_SIZE == 500_000_000
    assert DS_PREFETCH_BUCKET_SIZE == 50_000_000
    assert DS_MAX_LIVE_PARAMETERS == 1_000_000_000
    assert DS_PARAM_PERSISTENCE_THRESHOLD == 100_000
    assert FSDP_LIVE_UNITS == 2


def test_deepspeed_terms_each_from_its_constant() -> None:
    layer = LLAMA_70B.largest_layer_params()
    extras = sharded_extras(LLAMA_70B, "deepspeed", gpus=8, weight_bytes_per_param=2)
    terms = dict(extras.terms)
    assert terms["ds_reduce_bucket"] == HALF_BYTES * DS_REDUCE_BUCKET_SIZE
    assert terms["ds_gathered_layer"] == 2 * layer
    assert terms["ds_prefetch_bucket"] == 2 * DS_PREFETCH_BUCKET_SIZE
    assert extras.gathered == terms["ds_gathered_layer"] + terms["ds_prefetch_bucket"]
    assert extras.buffers == terms["ds_reduce_bucket"]
    # Norm weights stay whole on each card (below the persistence threshold), named not added.
    assert LLAMA_70B.hidden_size < DS_PARAM_PERSISTENCE_THRESHOLD
    # A 70B layer (about 0.86e9 parameters) plus the prefetch stays under max_live_parameters.
    assert layer + DS_PREFETCH_BUCKET_SIZE <= DS_MAX_LIVE_PARAMETERS


def test_max_live_parameters_caps_the_gathered_set() -> None:
    huge = parse_config(json.loads((SEED_MODELS / "models" / "llama-3.1-405b.json").read_text()))
    assert huge.largest_layer_params() + DS_PREFETCH_BUCKET_SIZE > DS_MAX_LIVE_PARAMETERS
    extras = sharded_extras(huge, "deepspeed", gpus=8, weight_bytes_per_param=2)
    assert dict(extras.terms)["ds_prefetch_bucket"] == 0
    assert extras.gathered == 2 * huge.largest_layer_params()


def test_fsdp_holds_the_computing_unit_the_prefetched_next_and_its_root() -> None:
    layer = LLAMA_70B.largest_layer_params()
    extras = sharded_extras(LLAMA_70B, "fsdp", gpus=8, weight_bytes_per_param=2)
    # The root unit: what the decoder-layer wrap policy leaves out, whole in bf16.
    split = LLAMA_70B.split
    root = HALF_BYTES * (split.embedding + split.lm_head + LLAMA_70B.hidden_size)
    assert fsdp_root_params(LLAMA_70B) == split.embedding + split.lm_head + LLAMA_70B.hidden_size
    assert dict(extras.terms) == {"fsdp_gathered_units": FSDP_LIVE_UNITS * 2 * layer,
                                  "fsdp_root_unit": root}
    assert extras.gathered == FSDP_LIVE_UNITS * 2 * layer + root
    assert extras.buffers == 0


def test_fsdp_offload_keeps_a_gpu_copy_of_each_gathered_shard_only_without_mixed_precision(
) -> None:
    """FSDP1's pre_unshard copies the CPU shard to the GPU and keeps it until the reshard; under
    mixed precision that copy is the low-precision shard, freed after the all-gather."""
    on_gpu = sharded_extras(LLAMA_70B, "fsdp", gpus=8, weight_bytes_per_param=2)
    pure = sharded_extras(LLAMA_70B, "fsdp", gpus=8, weight_bytes_per_param=2,
                          offload_params=True, mixed_precision=False)
    amp = sharded_extras(LLAMA_70B, "fsdp", gpus=8, weight_bytes_per_param=2,
                         offload_params=True, mixed_precision=True)
    assert amp == on_gpu
    assert dict(pure.terms)["fsdp_offload_shard_copies"] == -(-on_gpu.gathered // 8)
    assert pure.gathered == on_gpu.gathered + -(-on_gpu.gathered // 8)


def test_four_bit_statistics_stay_whole_on_every_card() -> None:
    """bitsandbytes' QuantState is no parameter: the sharded states hold 1/N of it (none when
    offloaded), every card holds all of it; torchao's NF4Tensor (torchtune) shards it."""
    stats = quant_state_bytes(LLAMA_70B, "nf4-dq")
    assert unsharded_quant_state(stats, gpus=1, offload_params=False) == 0
    assert unsharded_quant_state(stats, gpus=8, offload_params=False) == stats - -(-stats // 8)
    assert unsharded_quant_state(stats, gpus=8, offload_params=True) == stats
    # Double quantisation keeps 8-bit absmax per 64 weights: about 1/32 of the 4-bit codes.
    assert 0.03 < stats / (LLAMA_70B.split.linear / 2) < 0.033
    job = Job(method="qlora", gpus=8, sharding="zero3", sharding_impl="fsdp", precision="bf16",
              gradient_checkpointing=True)
    bnb = step_model(LLAMA_70B, job)
    torchao = step_model(LLAMA_70B, dataclasses.replace(job, framework="torchtune"))
    whole = unsharded_quant_state(stats, gpus=8, offload_params=False)
    assert bnb.model_states_bytes - torchao.model_states_bytes == whole
    for ours, theirs in zip(bnb.moments, torchao.moments, strict=True):
        assert ours.static - theirs.static == whole


def test_fsdp_gathers_an_fp32_base_in_bf16() -> None:
    """Accelerate's MixedPrecision(param_dtype=bfloat16) casts the fp32 shard before the
    all-gather: the gathered layers are bf16 and autocast casts nothing per matmul. DeepSpeed's
    gathered layer stays at the stored 4 bytes."""
    job = Job(method="lora", gpus=8, sharding="zero3", base_dtype="fp32",
              gradient_checkpointing=True)
    fsdp_fp32 = step_model(LLAMA_70B, dataclasses.replace(job, sharding_impl="fsdp"))
    fsdp_bf16 = step_model(LLAMA_70B, dataclasses.replace(job, sharding_impl="fsdp",
                                                          base_dtype="bf16"))
    assert [m.fixed for m in fsdp_fp32.moments] == [m.fixed for m in fsdp_bf16.moments]
    ds_fp32 = step_model(LLAMA_70B, job)
    ds_extras = sharded_extras(LLAMA_70B, "deepspeed", gpus=8, weight_bytes_per_param=4)
    biggest = max(s.in_features * s.out_features for s in LLAMA_70B.linears)
    assert ds_fp32.moments[0].fixed >= ds_extras.gathered + 2 * biggest


def test_the_assumptions_name_the_fsdp_terms_and_reserve() -> None:
    job = Job(method="qlora", gpus=2, sharding="zero3", sharding_impl="fsdp",
              gradient_checkpointing=True)
    items = dict(assumption_items(LLAMA_70B, job))
    assert items["reserve_fsdp"] == {"percent": round(100 * FSDP_ALLOCATOR_RESERVE_FRACTION, 1)}
    assert items["fsdp_root"] == {"params": fsdp_root_params(LLAMA_70B)}
    assert items["qlora_stats_whole"] == {"stats_bytes": quant_state_bytes(LLAMA_70B, "nf4-dq")}
    one_card = dict(assumption_items(LLAMA_70B, Job(method="qlora")))
    assert "reserve_default" in one_card and "fsdp_root" not in one_card
    assert "qlora_stats_whole" not in one_card


def test_one_card_holds_no_extras() -> None:
    for impl in ("deepspeed", "fsdp"):
        assert sharded_extras(LLAMA_70B, impl, gpus=1, weight_bytes_per_param=2).terms == ()


def test_step_model_carries_the_terms() -> None:
    base = Job(method="lora", gpus=8, sharding="zero3", gradient_checkpointing=True)
    ds = step_model(LLAMA_70B, base)
    fsdp = step_model(LLAMA_70B, dataclasses.replace(base, sharding_impl="fsdp"))
    ds_extras = sharded_extras(LLAMA_70B, "deepspeed", gpus=8, weight_bytes_per_param=2)
    fsdp_extras = sharded_extras(LLAMA_70B, "fsdp", gpus=8, weight_bytes_per_param=2)
    # DeepSpeed's gradient bucket stands for the whole run, optimizer step included.
    for ds_moment, fsdp_moment in zip(ds.moments, fsdp.moments, strict=True):
        assert ds_moment.static - fsdp_moment.static == ds_extras.buffers
    # While a layer computes (forward, backward), each adds its gathered parameters.
    for ds_moment, fsdp_moment in zip(ds.moments[:3], fsdp.moments[:3], strict=True):
        assert ds_moment.fixed - fsdp_moment.fixed == ds_extras.gathered - fsdp_extras.gathered
    assert ds.moments[-1].fixed == fsdp.moments[-1].fixed
    # NCCL's communicator buffers stay in the fixed overhead, once per card.
    assert ds.fixed_overhead_bytes == fixed_overhead_bytes(8) > NCCL_BUFFER_BYTES


def test_offload_keeps_the_gathered_layers_and_the_bucket_on_the_gpu() -> None:
    job = Job(method="lora", gpus=8, sharding="zero3", offload="optimizer+params")
    extras = sharded_extras(LLAMA_70B, "deepspeed", gpus=8, weight_bytes_per_param=2)
    offloaded = step_model(LLAMA_70B, job)
    assert offloaded.moments[-1].static >= extras.buffers
    assert offloaded.moments[-1].static == extras.buffers  # shards and optimizer on the CPU
    assert offloaded.moments[0].fixed >= extras.gathered


def test_unknown_implementation_is_refused_by_field() -> None:
    with pytest.raises(EngineError) as raised:
        validate(LLAMA_70B, Job(sharding_impl="megatron"))  # type: ignore[arg-type]
    assert raised.value.field == "sharding_impl"


@pytest.mark.parametrize(("impl", "sharding", "reason"), [
    ("fsdp", "none", "fsdp_needs_zero3"), ("fsdp", "zero1", "fsdp_needs_zero3"),
    ("fsdp", "zero2", "fsdp_needs_zero3"), ("megatron", "zero3", "not_one_of"),
])
def test_surfaces_get_fsdp_only_with_zero3(impl: str, sharding: str, reason: str) -> None:
    """The surfaces' one rule (issue 15, point 3): FSDP is modelled as FULL_SHARD only, so it
    is refused with any other sharding, naming ``sharding_impl``; DeepSpeed goes with any."""
    with pytest.raises(EngineError) as raised:
        checked_impl(impl, sharding)
    assert (raised.value.field, raised.value.key) == ("sharding_impl", reason)
    assert checked_impl("fsdp", "zero3") == "fsdp"
    assert all(checked_impl("deepspeed", s) == "deepspeed"
               for s in ("none", "zero1", "zero2", "zero3"))


SLUGS = ["llama-3.1-8b", "qwen3-32b", "gemma-2-9b", "mixtral-8x7b", "llama-3.3-70b"]
jobs = st.builds(
    Job,
    method=st.sampled_from(["full", "lora", "qlora"]),
    optimizer=st.sampled_from(["adamw", "adamw_8bit", "sgd"]),
    lora_rank=st.integers(1, 128),
    batch_size=st.integers(1, 8),
    seq_len=st.integers(1, 2048),
    gradient_checkpointing=st.booleans(),
    sharding=st.just("zero3"),
    offload=st.sampled_from(["none", "optimizer", "optimizer+params"]),
    sharding_impl=st.sampled_from(["deepspeed", "fsdp"]),
)


@settings(max_examples=60, deadline=None)
@given(slug=st.sampled_from(SLUGS), job=jobs, gpus=st.integers(2, 63))
def test_more_cards_never_hold_more_beyond_the_added_buffers(slug: str, job: Job,
                                                            gpus: int) -> None:
    """From 2 cards on the extras are constant, so one more card never costs more; and going
    from 1 card to n never costs more than the extras sharding adds."""
    shape = reference_shape(slug)
    b, s = job.batch_size, job.seq_len
    n_cards = step_model(shape, dataclasses.replace(job, gpus=gpus)).totals(b, s)
    more = step_model(shape, dataclasses.replace(job, gpus=gpus + 1)).totals(b, s)
    assert more.peak_live_bytes <= n_cards.peak_live_bytes
    one_card = dataclasses.replace(job, gpus=1, sharding="none",
                                   offload="none" if job.offload == "optimizer+params"
                                   else job.offload)
    single = step_model(shape, one_card).totals(b, s)
    extras = sharded_extras(shape, job.sharding_impl, gpus=gpus, weight_bytes_per_param=4)
    assert n_cards.peak_live_bytes <= single.peak_live_bytes + extras.gathered + extras.buffers


def test_fsdp_qlora_is_not_prepared_for_kbit_training() -> None:
    """FSDP flattens a layer's norms with its bf16-stored 4-bit weights into one FlatParameter of
    one dtype, so PEFT's fp32 casts cannot be in place (TRL skips them for sharded QLoRA); the
    same amp job under DeepSpeed keeps the prepared recipe. The difference is exactly the
    non-4-bit parameters at 4 instead of 2 bytes, on each of the 8 cards' shards."""
    job = Job(method="qlora", gpus=8, sharding="zero3", gradient_checkpointing=True)
    fsdp = dataclasses.replace(job, sharding_impl="fsdp")
    not_4bit = LLAMA_70B.split.total - LLAMA_70B.split.linear
    ds_weights = model_states(LLAMA_70B, job).weights_bytes
    fsdp_weights = model_states(LLAMA_70B, fsdp).weights_bytes
    assert ds_weights - fsdp_weights == pytest.approx((4 - 2) * not_4bit / 8, abs=8)
    assert "qlora_prepared" in dict(assumption_items(LLAMA_70B, job))
    assert "qlora_fsdp_unprepared" in dict(assumption_items(LLAMA_70B, fsdp))
