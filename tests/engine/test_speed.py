"""The training-speed terms (app/engine/speed.py), each against its own arithmetic.

Every term is computed here by hand from the model's shape, so dropping one from the engine
(no recompute under checkpointing, no weight gradients for a full fine-tune, no dequantisation
for QLoRA, no communication for several GPUs, ...) fails a test.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from app.engine import GpuSpec, Job, shape_of
from app.engine.estimate import estimate
from app.engine.job_speed import speed_job
from app.engine.shapes import ModelShape
from app.engine.speed import (
    ATTENTION_FRACTION,
    ATTENTION_FRACTION_HOPPER,
    BF16_BYTES,
    CPU_ADAM_PARAMS_PER_S,
    EAGER_SCORE_BYTES,
    FP32_BYTES,
    HOST_SECONDS_PER_KERNEL,
    KERNELS_AUTOCAST_CAST,
    KERNELS_DEQUANTISE,
    KERNELS_LINEAR_BACKWARD,
    KERNELS_LINEAR_FORWARD,
    KERNELS_LORA_BACKWARD,
    KERNELS_LORA_DROPOUT,
    KERNELS_LORA_FORWARD,
    KERNELS_LORA_FP32,
    KERNELS_PER_MICRO_STEP,
    KERNELS_PER_OPTIMIZER_STEP,
    KERNELS_TRAINED_WEIGHT,
    LINK_EFFICIENCY,
    LORA_DROPOUT_BYTES,
    LORA_IN_BYTES,
    LORA_MODULE_SECONDS,
    LORA_OUT_BYTES,
    MEMORY_EFFICIENCY,
    NF4_READ_BYTES,
    PCIE_HOST_GBPS,
    PEAK_FRACTION,
    PEAK_FRACTION_HOPPER,
    QLORA_DEQUANT_SECONDS,
    AttentionLayers,
    CardSpeed,
    SpeedJob,
    achieved_fraction,
    communication_bytes,
    flop_terms,
    host_kernels,
    host_seconds,
    mean_context,
    memory_terms,
    offload_seconds,
    optimizer_bytes,
    step_seconds,
    step_work,
    training,
)

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "h200_steps" / "configs"
LLAMA_8B = shape_of(json.loads((CONFIGS / "llama-3.1-8b.json").read_text()))
CARD = CardSpeed(bf16_tflops=989.5, memory_bandwidth_gbps=4800.0, interconnect="nvlink",
                 interconnect_bandwidth_gbps=900.0, compute_capability="9.0")


def linear_weights(shape: ModelShape) -> int:
    return sum(s.in_features * s.out_features * s.layers for s in shape.linears)


def test_llama_8b_linear_weights_are_the_known_count() -> None:
    # 32 layers x (q 4096^2 + k,v 2 x 4096 x 1024 + o 4096^2 + 3 x 4096 x 14336)
    assert linear_weights(LLAMA_8B) == 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336)


def test_full_fine_tune_counts_forward_activation_and_weight_gradients() -> None:
    terms = flop_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="full")))
    body = 2 * linear_weights(LLAMA_8B)
    assert terms.forward == body
    assert terms.activation_grads == body
    assert terms.weight_grads == body
    assert terms.recompute == 0
    assert terms.adapters == 0
    # lm_head: forward, input gradient and weight gradient
    assert terms.lm_head == 3 * 2 * 128_256 * 4096


def test_lora_skips_the_frozen_weight_gradients_and_adds_its_adapters() -> None:
    terms = flop_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora", lora_rank=16)))
    assert terms.weight_grads == 0
    assert terms.lm_head == 2 * 2 * 128_256 * 4096
    # rank 16 on every block linear: 2 r (in + out) per token each for forward, input and
    # weight gradients
    per_layer = sum(s.in_features + s.out_features for s in LLAMA_8B.linears)
    assert terms.adapters == 3 * 2 * 16 * per_layer * 32


def test_checkpointing_adds_one_more_forward_of_the_layers() -> None:
    plain = flop_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora")))
    ckpt = flop_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora",
                                                        gradient_checkpointing=True)))
    assert ckpt.recompute == plain.forward
    assert ckpt.attention > plain.attention
    assert ckpt.model == pytest.approx(plain.model + (ckpt.adapters - plain.adapters)
                                       + (ckpt.attention - plain.attention))


def test_attention_flops_are_causal_half_and_eager_the_whole_square() -> None:
    seq = 4096
    flash = flop_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora", seq_len=seq)))
    # forward 4 x heads x head_dim x mean context per layer, backward 2.5 x (FlashAttention-2)
    forward = 4 * 4096 * (seq + 1) / 2 * 32
    assert flash.attention == pytest.approx(forward * 3.5)
    eager = flop_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora", seq_len=seq,
                                                         attention="eager")))
    assert eager.attention == pytest.approx(4 * 4096 * seq * 32 * 3.0)


def test_sliding_layers_attend_at_most_their_window() -> None:
    assert mean_context(8192, 4096, causal=True) < 4096
    assert mean_context(8192, None, causal=True) == pytest.approx(8193 / 2)
    job = speed_job(LLAMA_8B, Job(method="lora", seq_len=8192))
    full = flop_terms(LLAMA_8B, job, AttentionLayers(full=32, sliding=0, window=0, linear=0))
    half = flop_terms(LLAMA_8B, job, AttentionLayers(full=16, sliding=16, window=1024,
                                                     linear=0))
    share = (16 * mean_context(8192, None, causal=True)
             + 16 * mean_context(8192, 1024, causal=True)) / (32 * mean_context(8192, None,
                                                                               causal=True))
    assert half.attention == pytest.approx(full.attention * share)
    assert share < 0.65


def test_qlora_dequantises_every_packed_weight_on_every_pass() -> None:
    plain = memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="qlora")))
    ckpt = memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="qlora",
                                                          gradient_checkpointing=True)))
    per_pass = linear_weights(LLAMA_8B) * (NF4_READ_BYTES + BF16_BYTES)
    assert plain.dequantise == pytest.approx(2 * per_pass)
    assert ckpt.dequantise == pytest.approx(3 * per_pass)
    assert memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora"))).dequantise == 0


def test_optimizer_step_reads_and_writes_parameters_gradients_and_states() -> None:
    job = speed_job(LLAMA_8B, Job(method="full", precision="bf16"))
    # bf16: param read + write (4), gradient read twice (clip, step: 4), two bf16 moments
    # read and written (8)
    assert optimizer_bytes(job) == job.trainable_params * 16
    amp = speed_job(LLAMA_8B, Job(method="full", precision="amp"))
    assert optimizer_bytes(amp) == amp.trainable_params * 32
    assert optimizer_bytes(speed_job(LLAMA_8B, Job(method="full", offload="optimizer"))) == 0


def test_amp_full_fine_tune_casts_its_fp32_weights() -> None:
    amp = memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="full", precision="amp")))
    bf16 = memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="full", precision="bf16")))
    assert amp.weight_casts > 0
    assert bf16.weight_casts == 0


def test_data_parallel_all_reduces_the_gradients_and_zero3_gathers_the_weights() -> None:
    single = speed_job(LLAMA_8B, Job(method="full", precision="bf16"))
    assert communication_bytes(LLAMA_8B, single) == 0
    ddp = dataclasses.replace(single, gpus=4)
    grads = single.trainable_params * 2
    assert communication_bytes(LLAMA_8B, ddp) == pytest.approx(2 * 3 / 4 * grads)
    zero3 = dataclasses.replace(single, gpus=4, sharding="zero3")
    # reduce-scatter the gradients, gather the weights for forward and backward: 1.5 x DDP
    assert communication_bytes(LLAMA_8B, zero3) == pytest.approx(
        3 / 4 * (grads + 2 * LLAMA_8B.total_params * 2))


def test_communication_over_a_slow_link_slows_the_step() -> None:
    job = dataclasses.replace(speed_job(LLAMA_8B, Job(method="full", precision="bf16")),
                              gpus=8, sharding="zero3")
    work = step_work(LLAMA_8B, job)
    fast = training(work, CARD, dataset_tokens=10**7, epochs=1)
    slow = training(work, dataclasses.replace(CARD, interconnect="pcie",
                                              interconnect_bandwidth_gbps=128.0),
                    dataset_tokens=10**7, epochs=1)
    assert fast is not None and slow is not None
    assert slow.step_seconds > fast.step_seconds


def test_achieved_fraction_falls_for_small_token_counts() -> None:
    assert achieved_fraction(64) == pytest.approx(0.75 / 2)
    assert achieved_fraction(64) < achieved_fraction(512) < achieved_fraction(16384) < 0.75
    assert achieved_fraction(16384, "9.0") < achieved_fraction(16384, "8.0")


def test_elementwise_traffic_grows_with_width_and_passes() -> None:
    plain = memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora")))
    ckpt = memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora",
                                                          gradient_checkpointing=True)))
    per_pass = 2048 * 32 * (100 * 4096 + 10 * 14336)
    assert plain.elementwise == per_pass * 3  # forward, backward twice the forward
    assert ckpt.elementwise == per_pass * 4


def test_hours_are_the_data_over_the_speed() -> None:
    result = estimate(LLAMA_8B, Job(method="lora", dataset_tokens=36_000_000, epochs=2),
                      [GpuSpec("h", "h", 10**12, "9.0", bf16_tflops=989.5,
                               memory_bandwidth_gbps=4800.0)])
    speed = result.fits[0].training
    assert speed is not None
    assert speed.hours == pytest.approx(72_000_000 / speed.tokens_per_s / 3600, abs=0.005)
    assert speed.tokens_per_s == pytest.approx(2048 / speed.step_seconds, rel=1e-3)


def test_no_training_figure_without_the_cards_speed_figures() -> None:
    result = estimate(LLAMA_8B, Job(method="lora"), [GpuSpec("x", "x", 10**12, "9.0")])
    assert result.fits[0].training is None


def test_a_card_publishing_only_fp4_computes_bf16_at_a_quarter() -> None:
    assert CardSpeed(bf16_tflops=None, memory_bandwidth_gbps=273.0,
                     fp4_tflops=500.0).matmul_tflops == 125.0


def _by_hand(job: SpeedJob, card: CardSpeed = CARD) -> float:
    """One optimizer step on ``card`` assembled here from the engine's terms, each once: the
    micro-steps' matmuls and attention at their achieved shares, their memory-bound bytes and
    fixed kernel times, the optimizer step's bytes, the host transfers of offload, and what of
    the communication outlasts the compute."""
    tokens = job.batch_size * job.seq_len
    flops = flop_terms(LLAMA_8B, job)
    memory = memory_terms(LLAMA_8B, job)
    peak = (card.bf16_tflops or 0.0) * 1e12
    bandwidth = (card.memory_bandwidth_gbps or 0.0) * 1e9 * MEMORY_EFFICIENCY
    compute = (tokens * (flops.total - flops.attention)
               / (peak * PEAK_FRACTION_HOPPER * tokens / (tokens + 64))
               + tokens * flops.attention / (peak * ATTENTION_FRACTION_HOPPER))
    micro = (compute + memory.per_micro_step / bandwidth + memory.fixed_seconds)
    seconds = (job.gradient_accumulation * micro + memory.optimizer / bandwidth
               + offload_seconds(job))
    link = (card.interconnect_bandwidth_gbps or 0.0) / 2 * 1e9 * LINK_EFFICIENCY["nvlink"]
    exposed = communication_bytes(LLAMA_8B, job) / link - job.gradient_accumulation * compute
    # the host issues the step's kernels while the GPU runs: the slower of the two
    return max(seconds, host_seconds(LLAMA_8B, job)) + max(0.0, exposed)


@pytest.mark.parametrize("job", [
    Job(method="lora", batch_size=2, seq_len=4096, gradient_accumulation=4),
    Job(method="qlora", gradient_checkpointing=True, lora_dropout=0.1),
    Job(method="full", precision="amp", attention="eager", seq_len=1024),
    Job(method="full", precision="bf16", offload="optimizer", gpus=2, sharding="zero3"),
    Job(method="lora", activation_offload=True, gradient_checkpointing=True),
    Job(method="full", precision="bf16", gpus=8, sharding="zero3", seq_len=512),
], ids=["lora-ga4", "qlora-ckpt", "full-amp-eager", "full-offload-zero3", "act-offload",
        "zero3-8-exposed"])
def test_the_step_is_the_sum_of_every_term_once(job: Job) -> None:
    speed = speed_job(LLAMA_8B, job)
    assert step_seconds(step_work(LLAMA_8B, speed), CARD) == pytest.approx(_by_hand(speed),
                                                                          rel=1e-12)


def test_an_ampere_step_takes_its_own_shares() -> None:
    job = speed_job(LLAMA_8B, Job(method="lora", seq_len=8192))
    tokens = 8192
    flops = flop_terms(LLAMA_8B, job)
    memory = memory_terms(LLAMA_8B, job)
    a100 = CardSpeed(bf16_tflops=312.0, memory_bandwidth_gbps=2039.0)
    compute = (tokens * (flops.total - flops.attention)
               / (312e12 * PEAK_FRACTION * tokens / (tokens + 64))
               + tokens * flops.attention / (312e12 * ATTENTION_FRACTION))
    by_hand = (compute + (memory.per_micro_step + memory.optimizer) / (2039e9 * MEMORY_EFFICIENCY)
               + memory.fixed_seconds)
    assert step_seconds(step_work(LLAMA_8B, job), a100) == pytest.approx(by_hand, rel=1e-12)


def test_the_totals_are_the_sums_of_their_terms() -> None:
    job = speed_job(LLAMA_8B, Job(method="qlora", gradient_checkpointing=True, lora_dropout=0.1,
                                  attention="eager", seq_len=1024, base_dtype="fp32"))
    flops = flop_terms(LLAMA_8B, job)
    assert flops.total == pytest.approx(
        flops.forward + flops.activation_grads + flops.weight_grads + flops.adapters
        + flops.recompute + flops.attention + flops.lm_head)
    assert flops.model == pytest.approx(flops.total - flops.recompute)
    memory = memory_terms(LLAMA_8B, job)
    assert memory.per_micro_step == pytest.approx(
        memory.dequantise + memory.weight_casts + memory.eager_scores + memory.adapters
        + memory.elementwise)
    assert min(flops.adapters, flops.lm_head, memory.elementwise, memory.dequantise) > 0


def test_every_term_of_a_step_adds_time() -> None:
    """Each term, taken out of the step by hand, leaves it shorter: none is left unused."""
    job = speed_job(LLAMA_8B, Job(method="qlora", gradient_checkpointing=True, gpus=2,
                                  lora_dropout=0.1, offload="optimizer",
                                  activation_offload=True, attention="eager", seq_len=1024))
    memory = memory_terms(LLAMA_8B, job)
    assert min(memory.dequantise, memory.adapters, memory.eager_scores, memory.elementwise,
               memory.fixed_seconds, offload_seconds(job)) > 0
    assert communication_bytes(LLAMA_8B, job) > 0


def test_qlora_and_lora_modules_add_their_fixed_kernel_times() -> None:
    modules = 32 * 7  # q, k, v, o, gate, up, down in every layer
    lora = memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora")))
    assert lora.fixed_seconds == pytest.approx(2 * modules * LORA_MODULE_SECONDS)
    qlora = memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="qlora",
                                                           gradient_checkpointing=True)))
    # forward, recomputed forward and backward: each adapter and each 4-bit layer's
    # dequantisation call
    assert qlora.fixed_seconds == pytest.approx(3 * modules * (LORA_MODULE_SECONDS
                                                               + QLORA_DEQUANT_SECONDS))
    assert memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="full"))).fixed_seconds == 0


def test_lora_adapters_read_their_input_and_write_their_output_on_every_pass() -> None:
    tokens = 2048
    per_token = sum((s.in_features * LORA_IN_BYTES + s.out_features * LORA_OUT_BYTES) * s.layers
                    for s in LLAMA_8B.linears)
    plain = memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora")))
    assert plain.adapters == pytest.approx(2 * tokens * per_token)  # forward and backward
    dropout = memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora", lora_dropout=0.1)))
    extra = sum(s.in_features * LORA_DROPOUT_BYTES * s.layers for s in LLAMA_8B.linears)
    assert dropout.adapters == pytest.approx(2 * tokens * (per_token + extra))


def test_eager_attention_moves_its_score_matrices() -> None:
    seq = 1024
    eager = memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora", seq_len=seq,
                                                           attention="eager")))
    # 32 layers x 32 heads x seq^2 scores, forward once and a backward of twice its traffic
    assert eager.eager_scores == pytest.approx(32 * 32 * seq * seq * EAGER_SCORE_BYTES * 3)
    flash = memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora", seq_len=seq)))
    assert flash.eager_scores == 0


def test_an_fp32_frozen_base_is_cast_on_every_pass() -> None:
    fp32 = memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora", base_dtype="fp32")))
    assert fp32.weight_casts == pytest.approx(LLAMA_8B.split.linear * 2 * (FP32_BYTES
                                                                           + BF16_BYTES))
    assert memory_terms(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora"))).weight_casts == 0


def test_optimizer_offload_sends_gradients_and_weights_over_pcie_and_steps_on_the_host() -> None:
    job = speed_job(LLAMA_8B, Job(method="full", precision="bf16", offload="optimizer"))
    params = job.trainable_params
    assert offload_seconds(job) == pytest.approx(
        params * (2 + BF16_BYTES) / (PCIE_HOST_GBPS * 1e9) + params / CPU_ADAM_PARAMS_PER_S)
    sharded = dataclasses.replace(job, gpus=4, sharding="zero3")
    assert offload_seconds(sharded) == pytest.approx(offload_seconds(job) / 4)
    assert offload_seconds(speed_job(LLAMA_8B, Job(method="full", precision="bf16"))) == 0


def test_activation_offload_sends_the_saved_activations_down_and_back() -> None:
    job = speed_job(LLAMA_8B, Job(method="lora", activation_offload=True,
                                  gradient_checkpointing=True, gradient_accumulation=2))
    assert job.saved_bytes_per_token > 0
    assert offload_seconds(job) == pytest.approx(
        2 * 2 * 2048 * job.saved_bytes_per_token / (PCIE_HOST_GBPS * 1e9))
    work = step_work(LLAMA_8B, job)
    kept = step_work(LLAMA_8B, dataclasses.replace(job, activation_offload=False))
    assert step_seconds(work, CARD) - step_seconds(kept, CARD) == pytest.approx(
        offload_seconds(job))


def test_communication_hidden_by_the_compute_adds_nothing() -> None:
    """DDP's gradient all-reduce of a LoRA adapter over NVLink hides under the backward; only
    what outlasts the compute would add to the step."""
    job = speed_job(LLAMA_8B, Job(method="lora"))
    alone = step_seconds(step_work(LLAMA_8B, job), CARD)
    two = step_seconds(step_work(LLAMA_8B, dataclasses.replace(job, gpus=2)), CARD)
    assert communication_bytes(LLAMA_8B, dataclasses.replace(job, gpus=2)) > 0
    assert two == pytest.approx(alone)


LINEARS_8B = 32 * 7  # q, k, v, o, gate, up, down in every layer of Llama 3.1 8B


def _lora_kernels(dropout: bool, fp32: bool) -> tuple[int, int]:
    forward = KERNELS_LORA_FORWARD + dropout * KERNELS_LORA_DROPOUT + fp32 * KERNELS_LORA_FP32
    backward = KERNELS_LORA_BACKWARD + dropout * KERNELS_LORA_DROPOUT + fp32 * KERNELS_LORA_FP32
    return forward, backward


def test_the_host_issues_every_linear_and_adapter_kernel_of_a_lora_step() -> None:
    job = speed_job(LLAMA_8B, Job(method="lora", lora_dropout=0.05))
    forward, backward = _lora_kernels(dropout=True, fp32=True)
    per_linear = KERNELS_LINEAR_FORWARD + forward + KERNELS_LINEAR_BACKWARD + backward
    assert host_kernels(LLAMA_8B, job) == (LINEARS_8B * per_linear + KERNELS_PER_MICRO_STEP,
                                           KERNELS_PER_OPTIMIZER_STEP)
    # no dropout (nn.Identity) and bf16 adapters issue fewer
    plain = speed_job(LLAMA_8B, Job(method="lora", lora_dropout=0.0, adapter_dtype="bf16"))
    forward, backward = _lora_kernels(dropout=False, fp32=False)
    per_linear = KERNELS_LINEAR_FORWARD + forward + KERNELS_LINEAR_BACKWARD + backward
    assert host_kernels(LLAMA_8B, plain)[0] == LINEARS_8B * per_linear + KERNELS_PER_MICRO_STEP


def test_checkpointing_issues_the_forward_kernels_again() -> None:
    job = Job(method="lora", lora_dropout=0.05)
    ckpt = dataclasses.replace(job, gradient_checkpointing=True)
    forward, _ = _lora_kernels(dropout=True, fp32=True)
    assert (host_kernels(LLAMA_8B, speed_job(LLAMA_8B, ckpt))[0]
            - host_kernels(LLAMA_8B, speed_job(LLAMA_8B, job))[0]
            == LINEARS_8B * (KERNELS_LINEAR_FORWARD + forward))


def test_qlora_dequantises_and_amp_full_casts_on_the_host_too() -> None:
    lora = host_kernels(LLAMA_8B, speed_job(LLAMA_8B, Job(method="lora")))[0]
    qlora = host_kernels(LLAMA_8B, speed_job(LLAMA_8B, Job(method="qlora")))[0]
    # forward and backward each dequantise every 4-bit layer
    assert qlora - lora == 2 * LINEARS_8B * KERNELS_DEQUANTISE
    bf16 = host_kernels(LLAMA_8B, speed_job(LLAMA_8B, Job(method="full", precision="bf16")))[0]
    amp = host_kernels(LLAMA_8B, speed_job(LLAMA_8B, Job(method="full", precision="amp")))[0]
    assert bf16 == (LINEARS_8B * (KERNELS_LINEAR_FORWARD + KERNELS_LINEAR_BACKWARD
                                  + KERNELS_TRAINED_WEIGHT) + KERNELS_PER_MICRO_STEP)
    assert amp - bf16 == 2 * LINEARS_8B * KERNELS_AUTOCAST_CAST


def test_the_host_seconds_are_every_micro_step_and_the_optimizer_at_the_kernel_cost() -> None:
    job = speed_job(LLAMA_8B, Job(method="lora", gradient_accumulation=4))
    micro, optimizer = host_kernels(LLAMA_8B, job)
    assert host_seconds(LLAMA_8B, job) == pytest.approx(
        (4 * micro + optimizer) * HOST_SECONDS_PER_KERNEL)


def test_a_small_step_waits_on_its_host_and_a_large_one_on_its_gpu() -> None:
    small = speed_job(LLAMA_8B, Job(method="lora", batch_size=1, seq_len=512))
    work = step_work(LLAMA_8B, small)
    assert step_seconds(work, CARD) == pytest.approx(host_seconds(LLAMA_8B, small))
    assert step_seconds(dataclasses.replace(work, host_seconds=0.0), CARD) < work.host_seconds
    large = speed_job(LLAMA_8B, Job(method="lora", batch_size=4, seq_len=4096))
    work = step_work(LLAMA_8B, large)
    assert step_seconds(work, CARD) == step_seconds(dataclasses.replace(work, host_seconds=0.0),
                                                    CARD) > work.host_seconds
