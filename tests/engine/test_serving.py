"""The serving engine's rules, one by one: formats by card, the runtime budgets, unified
memory, levers, speeds, refusals and bounded work."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from app.engine import serving as engine
from app.engine.architectures.registry import parse_config
from app.engine.errors import EngineError
from app.engine.serving import GIB, ServingGpu, ServingJob, serving_estimate
from app.engine.serving_kv import kv_layout
from app.engine.serving_weights import (
    INT4_BITS,
    MXFP4_BITS,
    NVFP4_BITS,
    active_weight_bytes,
    weight_bytes,
)
from tests.engine.test_config_bounds import BRANCH_ALLOWANCE, engine_line_events

ROOT = Path(__file__).resolve().parents[2]
H200 = ServingGpu("h200", "H200 NVL", 150_754_820_096, "9.0", 4800.0, 835.5, 1670.5, None)
PRO6000 = ServingGpu("pro6000", "RTX PRO 6000", 102_641_958_912, "12.0", 1792.0, 503.8,
                     1007.6, 2015.2)
A100 = ServingGpu("a100", "A100 80GB", 85_031_714_816, "8.0", 2039.0, 312.0, None, None)
SPARK = ServingGpu("spark", "DGX Spark", 119_948_517_376, "12.1", 273.0, None, None, 500.0,
                   unified_memory=True)


def config(slug: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (ROOT / f"app/catalog/seed/models/{slug}.json").read_text())
    return loaded


def run(slug: str, job: ServingJob, gpus: list[ServingGpu], **kw: Any) -> engine.ServingResult:
    c = config(slug)
    return serving_estimate(parse_config(c), kv_layout(c), job, gpus, **kw)


def test_four_bit_formats_keep_embeddings_and_head_in_16_bit() -> None:
    """Llama 3.1 8B AWQ: 6.98 B linear weights at 4.156 bits plus 2 x 525 M of embedding and
    lm_head at 16 bits: about 5.7 GB, not the 4 GB of params x 4 bits."""
    shape = parse_config(config("llama-3.1-8b"))
    awq = weight_bytes(shape, "awq", 1)
    sixteen = (shape.split.embedding + shape.split.lm_head + shape.split.norm) * 2
    assert awq.sixteen_bit >= sixteen
    assert awq.quantised == pytest.approx(shape.split.linear * INT4_BITS / 8, rel=1e-6)
    assert 5.5e9 < awq.total < 5.9e9
    assert weight_bytes(shape, "gptq", 1).total > awq.total  # g_idx
    assert weight_bytes(shape, "nvfp4", 1).quantised == pytest.approx(
        shape.split.linear * NVFP4_BITS / 8, rel=1e-6)


def test_mxfp4_quantises_only_the_experts_of_an_moe() -> None:
    shape = parse_config(config("qwen3-30b-a3b"))
    experts = sum(s.in_features * s.out_features * s.copies * s.layers
                  for s in shape.linears if s.copies > 1)
    assert weight_bytes(shape, "mxfp4", 1).quantised == pytest.approx(
        experts * MXFP4_BITS / 8, rel=1e-6)


def test_tensor_parallel_splits_weights_but_replicates_kv_heads_beyond_their_count() -> None:
    """Llama 3.1 70B has 8 KV heads: on 16 GPUs each keeps one, so k/v projections do not
    halve from 8 to 16 GPUs while everything else does."""
    shape = parse_config(config("llama-3.1-70b"))
    one, eight, sixteen = (weight_bytes(shape, "bf16", tp).total for tp in (1, 8, 16))
    assert eight == pytest.approx(one / 8, rel=0.01)
    assert sixteen > eight / 2


def test_moe_decode_reads_the_experts_a_batch_touches() -> None:
    shape = parse_config(config("qwen3-30b-a3b"))
    total = weight_bytes(shape, "bf16", 1).total
    single = active_weight_bytes(shape, "bf16", 1, 1)
    assert single < total / 5
    assert active_weight_bytes(shape, "bf16", 1, 64) > 4 * single
    assert active_weight_bytes(shape, "bf16", 1, 4096) == pytest.approx(total, rel=0.01)


def test_nvfp4_on_hopper_saves_memory_but_gets_no_fp4_compute() -> None:
    job = ServingJob(weights="nvfp4")
    fit = run("llama-3.1-8b", job, [H200, PRO6000], with_levers=False).fits
    assert engine.FP4_WEIGHT_ONLY_WARNING in fit[0].warnings
    assert engine.FP4_WEIGHT_ONLY_WARNING not in fit[1].warnings
    assert engine.compute_tflops(job, H200) == H200.bf16_tflops
    assert engine.compute_tflops(job, PRO6000) == PRO6000.fp4_tflops
    assert engine.compute_tflops(ServingJob(weights="fp8"), H200) == H200.fp8_tflops
    assert engine.compute_tflops(ServingJob(weights="fp8"), A100) == A100.bf16_tflops
    (ampere,) = run("llama-3.1-8b", ServingJob(weights="fp8"), [A100]).fits
    assert engine.FP8_WEIGHT_ONLY_WARNING in ampere.warnings


def test_vllm_budget_is_total_times_utilisation_less_weights_peak_and_non_torch() -> None:
    c = config("llama-3.1-8b")
    shape = parse_config(c)
    job = ServingJob(gpu_memory_utilization=0.9)
    (fit,) = serving_estimate(shape, kv_layout(c), job, [PRO6000]).fits
    weights = weight_bytes(shape, "bf16", 1).total
    peak = engine.vllm_activation_bytes(shape, engine.VLLM_LARGE_BATCHED_TOKENS,
                                        engine.VLLM_LARGE_SEQS, 1)
    expected = int(PRO6000.total_bytes * 0.9) - weights - peak - engine.NON_TORCH_BYTES
    assert fit.kv_cache_capacity_bytes == expected
    assert fit.max_num_batched_tokens == 8192  # a card of 70 GiB or more
    assert fit.kv_cache_capacity_tokens == expected // (16 * 131_072) * 16


def test_unified_memory_caps_the_share_and_says_so() -> None:
    (fit,) = run("llama-3.1-8b", ServingJob(gpu_memory_utilization=0.95), [SPARK]).fits
    assert fit.gpu_memory_utilization == engine.UNIFIED_UTILIZATION_CAP
    assert engine.UNIFIED_WARNING in fit.warnings


def test_more_users_or_a_longer_context_never_fit_better() -> None:
    fits = [run("qwen3-32b", ServingJob(context=ctx, concurrency=n), [PRO6000]).fits[0]
            for ctx, n in ((8192, 1), (8192, 8), (32768, 8), (32768, 64))]
    need = [f.per_gpu_bytes.kv_cache for f in fits]
    assert need == sorted(need)
    assert [f.fits for f in fits] == sorted((f.fits for f in fits), reverse=True)


def test_max_concurrency_and_max_context_are_the_edge_of_fitting() -> None:
    c = config("llama-3.1-8b")
    (fit,) = run("llama-3.1-8b", ServingJob(context=32768, concurrency=4), [PRO6000]).fits
    most = fit.max_concurrency
    assert run("llama-3.1-8b", ServingJob(context=32768, concurrency=most), [PRO6000]).fits[0].fits
    assert not run("llama-3.1-8b", ServingJob(context=32768, concurrency=most + 1),
                   [PRO6000]).fits[0].fits
    longest = fit.max_context
    assert run("llama-3.1-8b", ServingJob(context=longest, concurrency=4), [PRO6000]).fits[0].fits
    assert longest <= (parse_config(c).max_positions or 0)


def test_levers_name_only_changes_that_make_it_fit() -> None:
    job = ServingJob(context=32768, concurrency=32)
    result = run("llama-3.1-8b", job, [PRO6000])
    assert not result.fits[0].fits
    names = {lever.lever for lever in result.levers}
    assert {"fp8_kv_cache", "more_gpus", "shorter_context"} <= names
    for lever in result.levers:
        changed = dataclasses.replace(job, **lever.change)  # type: ignore[arg-type]
        fit = run("llama-3.1-8b", changed, [PRO6000], with_levers=False).fits[0]
        assert fit.fits and fit.max_concurrency == lever.max_concurrency, lever


def test_sglang_and_llama_cpp_have_their_own_budgets() -> None:
    jobs = (ServingJob(runtime="vllm"), ServingJob(runtime="sglang"),
            ServingJob(runtime="llama.cpp", weights="gguf-q4_k_m"))
    vllm, sglang, llama = (run("llama-3.1-8b", job, [PRO6000], with_levers=False).fits[0]
                           for job in jobs)
    assert 0.8 < sglang.gpu_memory_utilization < 0.95
    assert llama.gpu_memory_utilization == 1.0
    assert llama.kv_cache_capacity_bytes > vllm.kv_cache_capacity_bytes


def test_decode_is_slower_with_more_users_but_faster_in_total() -> None:
    one, many = (run("llama-3.1-8b", ServingJob(concurrency=n), [H200]).fits[0]
                 .decode_tokens_per_s for n in (1, 32))
    assert one is not None and many is not None
    assert many.per_request < one.per_request
    assert many.total > one.total


@pytest.mark.parametrize(("field", "value", "key"), [
    ("context", 0, "whole_number"), ("concurrency", 10**9, "at_most"),
    ("gpus", True, "whole_number"), ("weights", "int3", "not_one_of"),
    ("gpu_memory_utilization", 0.0, "utilization_range"),
    ("context", 131_073, "context_beyond_positions"),  # Llama 3.1 8B: 131,072 positions
])
def test_bad_jobs_are_refused_naming_the_field(field: str, value: object, key: str) -> None:
    job = ServingJob(**{field: value})  # type: ignore[arg-type]
    with pytest.raises(EngineError) as error:
        run("llama-3.1-8b", job, [H200])
    assert (error.value.field, error.value.key) == (field, key)


def test_a_serving_estimate_does_the_same_work_whatever_the_layer_count() -> None:
    """Closed forms, no loop over a config value: a model with 1,024 layers costs the same
    line events as one with 32 (within the branch allowance)."""
    base = config("llama-3.1-8b")
    deep = {**base, "num_hidden_layers": 1024}
    # Llama 3.1's longest context (a longer one is refused); no speed floor, whose bisection
    # takes as many steps as the two speeds need, whatever the layer count
    job = ServingJob(context=131_072, concurrency=64, min_tokens_per_s=0)

    def events(c: dict[str, Any]) -> int:
        shape, layout = parse_config(c), kv_layout(c)
        return engine_line_events(lambda: serving_estimate(shape, layout, job, [H200, A100]))

    assert abs(events(deep) - events(base)) < BRANCH_ALLOWANCE
    assert GIB == 1 << 30


def test_a_multimodal_checkpoint_loads_its_vision_tower_too() -> None:
    from app.engine.architectures.approximate import shape_of

    loaded = json.loads((ROOT / "tests/fixtures/hf_configs/gemma-3-27b-it.json").read_text())
    shape = shape_of(loaded)
    assert shape.tower_params > 0
    with_tower = weight_bytes(shape, "bf16", 1)
    language = (shape.total_params) * 2
    assert with_tower.total >= language + shape.tower_params * 2
