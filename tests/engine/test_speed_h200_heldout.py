"""Training speed against 35 more steps measured on an H200 SXM on 2026-12-04, after the
speed model was set (tests/fixtures/h200_steps/README.md): a held-out check, no constant was
chosen on them.

Each step's job runs as a user runs it (``sizer estimate ... --gpu h200-sxm --format json``,
the arguments of :mod:`tests.engine.test_speed_h200` and the step's optimizer), and the H200
SXM's ``training.tokens_per_s`` is compared with the measured tokens per second. The bound is
the 15 steps' (each within 20 %, the median within 10 %). The steps the engine misses for a
reason it does not model are listed in :data:`MISSED`, each with the reason; they are expected
to miss (a strict xfail: a miss that starts to hold fails, and is then taken off the list).
"""

from __future__ import annotations

import json
import statistics
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.engine.test_speed_h200 import arguments, predicted_error

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "h200_steps"
MEASURED: list[dict[str, Any]] = json.loads(
    (FIXTURES / "h200-steps-2026-12-04.json").read_text())["cases"]
STEPS = [step for step in MEASURED if step.get("tokens_per_s")]
"""The steps that ran (one failed in transformers and is kept with its error)."""

MISSED = {
    "lora-l8b-b1s1024-ck": ("a small checkpointed step: the host's floor counts the linear "
                            "layers' and PEFT's kernels of the recomputed forward (+47 %); "
                            "torch.utils.checkpoint's Python per saved tensor and the "
                            "layers' own eager kernels are not counted"),
    "lora-g9b-b1s4096-ck": ("Gemma 2 9B, one sequence of 4,096 tokens a step: 24.7 % slower "
                            "than counted. A likely cause, read in transformers' code and not "
                            "measured: at 4,096 tokens its sliding layers' window (4,096) "
                            "no longer exceeds the sequence, so transformers' sdpa_mask passes "
                            "an explicit mask (masking_utils._ignore_causal_mask_sdpa needs "
                            "kv_length < local_attention_size) and SDPA cannot take its flash "
                            "kernel on 21 of 42 layers; the engine counts them as flash"),
    "full-bf16-l8b-b1s2048-ck-paged8bit": ("paged 8-bit AdamW: bitsandbytes (0.50.1's "
                                           "source) keeps each state of over 1e5 elements in "
                                           "CUDA managed memory "
                                           "(cudaMallocManaged) and, every step, prefetches "
                                           "both states of each parameter to the GPU "
                                           "(cudaMemPrefetchAsync) and synchronises the "
                                           "device after each parameter's update "
                                           "(optim/optimizer.py step, sync_gpu): work the "
                                           "engine does not count"),
}


def _arguments(step: dict[str, Any]) -> list[str]:
    return [*arguments(step), "--optimizer", str(step.get("opt", "adamw"))]


@cache
def error(step_id: str) -> float:
    return predicted_error(next(s for s in STEPS if s["id"] == step_id), _arguments)


@pytest.mark.parametrize("step_id", [
    pytest.param(step["id"], marks=pytest.mark.xfail(reason=MISSED[step["id"]], strict=True))
    if step["id"] in MISSED else step["id"] for step in STEPS])
def test_each_held_out_step_within_20_percent(step_id: str) -> None:
    assert abs(error(step_id)) <= 0.20


def test_median_error_of_the_held_out_steps_within_10_percent() -> None:
    assert len(STEPS) == 34 and set(MISSED) <= {step["id"] for step in STEPS}
    assert statistics.median(abs(error(step["id"])) for step in STEPS) <= 0.10
