"""The serving engine against real vLLM start-up logs (tools/serving/vllm_logs.json).

Each case is a log someone posted in a public issue or pull request, with its source. For each,
the engine is given what the log says vLLM was given (card total, utilisation, tensor parallel
degree, max_model_len, batched-token and sequence budgets) and must reproduce what vLLM logged:

* weights within 3 % of "Model loading took";
* KV bytes per token exactly: the logged token count times the engine's bytes per token lands on
  the logged pool (to its two printed decimals; under tensor parallelism vLLM keeps the smallest
  rank's blocks, so a little below rank 0's printed pool);
* the KV pool ("Available KV cache memory") within 10 %, where the log prints the card's total;
* the maximum concurrency within 10 % ("Maximum concurrency for N tokens per request").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine.approximate import shape_of
from app.engine.serving import GIB, KV_DTYPE_BYTES, ServingGpu, ServingJob, serving_estimate
from app.engine.serving_kv import KvLayout, kv_layout
from app.engine.serving_weights import weight_bytes

ROOT = Path(__file__).resolve().parents[2]
LOGS = json.loads((ROOT / "tools/serving/vllm_logs.json").read_text())["cases"]
PRINTED_GIB = 0.005
"""vLLM prints GiB to two decimals."""


def _config(case: dict[str, Any]) -> dict[str, Any]:
    path = case["config"] or f"app/catalog/seed/models/{case['model']}.json"
    config = json.loads((ROOT / path).read_text())
    return {**config, **case["config_overrides"]}


def _layout(case: dict[str, Any]) -> KvLayout:
    config = _config(case)
    return kv_layout(config, shape_of(config))


def _dtype_bytes(case: dict[str, Any]) -> int:
    return KV_DTYPE_BYTES[case["kv_cache_dtype"]]


def _job(case: dict[str, Any]) -> ServingJob:
    return ServingJob(
        weights=case["weights_format"], kv_cache=case["kv_cache_dtype"],
        context=case["max_model_len"], gpus=case["tensor_parallel"],
        gpu_memory_utilization=case["gpu_memory_utilization"],
        max_num_batched_tokens=case["max_num_batched_tokens"], max_num_seqs=case["max_num_seqs"],
    )


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [case["id"] for case in cases]


def test_at_least_six_logs_each_with_its_source() -> None:
    assert len(LOGS) >= 6
    for case in LOGS:
        assert case["source"].startswith("https://github.com/"), case["id"]
        assert case["where"] and case["checkpoint"], case["id"]


WITH_WEIGHTS = [c for c in LOGS if c["logged"]["weights_gib"] is not None]


@pytest.mark.parametrize("case", WITH_WEIGHTS, ids=_ids(WITH_WEIGHTS))
def test_weights_within_three_percent_of_model_loading(case: dict[str, Any]) -> None:
    shape = shape_of(_config(case))
    ours = weight_bytes(shape, case["weights_format"], case["tensor_parallel"]).total / GIB
    logged = case["logged"]["weights_gib"]
    assert abs(ours - logged) / logged < 0.03, (case["id"], ours, logged)


WITH_POOL_AND_TOKENS = [c for c in LOGS if c["logged"]["kv_tokens"] is not None
                        and c["logged"]["available_kv_gib"] is not None
                        and not c.get("tokens_are_concurrency_times_length")]


@pytest.mark.parametrize("case", WITH_POOL_AND_TOKENS, ids=_ids(WITH_POOL_AND_TOKENS))
def test_kv_bytes_per_token_turn_the_logged_pool_into_the_logged_tokens(
        case: dict[str, Any]) -> None:
    layout = _layout(case)
    per_token = layout.bytes_per_token(case["tensor_parallel"], _dtype_bytes(case))
    pool = case["logged"]["kv_tokens"] * per_token / GIB
    logged = case["logged"]["available_kv_gib"]
    if case["tensor_parallel"] == 1:
        assert abs(pool - logged) <= PRINTED_GIB + 16 * per_token / GIB, (case["id"], pool)
    else:  # every rank keeps the smallest rank's blocks; rank 0 printed its own pool
        assert logged * 0.97 <= pool <= logged + PRINTED_GIB, (case["id"], pool, logged)


def test_kv_bytes_per_token_of_the_logged_models_exactly() -> None:
    """2 x kv heads per GPU x head_dim x 2 bytes x layers, as vLLM's FullAttentionSpec."""
    expected = {"llama-3.1-8b": {1: 131_072}, "llama-3.1-70b": {1: 327_680},
                "qwen3-30b-a3b": {4: 24_576}, "qwen3-235b-a22b": {4: 48_128},
                "qwen2.5-0.5b": {1: 12_288},
                # 10 full-attention layers x 2 x 2 KV heads x 256 x 1 byte (fp8)
                "qwen36-35b-a3b-nvfp4-5090-hybrid": {1: 10_240}}
    for case in LOGS:
        tp = case["tensor_parallel"]
        per_token = _layout(case).bytes_per_token(tp, _dtype_bytes(case))
        assert per_token == expected[case["model"] or case["id"]][tp], case["id"]


WITH_TOTAL = [c for c in LOGS if c["capacity_check"]]


def _fit(case: dict[str, Any]) -> Any:
    config = _config(case)
    gpu = ServingGpu("logged", case["gpu"] or "", int(case["total_gpu_memory_gib"] * GIB), "9.0")
    return serving_estimate(shape_of(config), _layout(case), _job(case), [gpu],
                            with_levers=False).fits[0]


@pytest.mark.parametrize("case", WITH_TOTAL, ids=_ids(WITH_TOTAL))
def test_kv_pool_within_ten_percent_of_the_log(case: dict[str, Any]) -> None:
    ours = _fit(case).kv_cache_capacity_bytes / GIB
    logged = case["logged"]["available_kv_gib"]
    assert abs(ours - logged) / logged < 0.10, (case["id"], ours, logged)


@pytest.mark.parametrize("case", [c for c in WITH_TOTAL if c["logged"]["kv_tokens"]],
                         ids=_ids([c for c in WITH_TOTAL if c["logged"]["kv_tokens"]]))
def test_kv_tokens_within_ten_percent_of_the_log(case: dict[str, Any]) -> None:
    ours = _fit(case).kv_cache_capacity_tokens
    logged = case["logged"]["kv_tokens"]
    assert abs(ours - logged) / logged < 0.10, (case["id"], ours, logged)


WITH_CONCURRENCY = [c for c in LOGS if c["logged"]["max_concurrency"] is not None]


@pytest.mark.parametrize("case", WITH_CONCURRENCY, ids=_ids(WITH_CONCURRENCY))
def test_max_concurrency_within_ten_percent_of_the_log(case: dict[str, Any]) -> None:
    """Requests of max_model_len tokens the pool holds: from our own pool where the log prints
    the card's total, else from the logged pool, else from the pool the logged tokens occupy
    (a hybrid's fixed state per request counted in each)."""
    layout = _layout(case)
    job = _job(case)
    dtype = _dtype_bytes(case)
    request = layout.request_bytes(job.context, job.gpus, dtype, case["max_num_batched_tokens"])
    if case["capacity_check"]:
        pool = _fit(case).kv_cache_capacity_bytes
    elif case["logged"]["available_kv_gib"] is not None:
        pool = int(case["logged"]["available_kv_gib"] * GIB)
    else:
        pool = case["logged"]["kv_tokens"] * layout.bytes_per_token(job.gpus, dtype)
    ours = pool / request
    logged = case["logged"]["max_concurrency"]
    assert abs(ours - logged) / logged < 0.10, (case["id"], ours, logged)


def test_every_skipped_capacity_check_says_why() -> None:
    for case in LOGS:
        if not case["capacity_check"] and case["total_gpu_memory_gib"] is not None:
            assert case["capacity_check_skipped"], case["id"]
