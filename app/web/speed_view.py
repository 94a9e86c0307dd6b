"""The training speed on "How we calculate": the model's constants as the engine
states them (app/engine/speed.py) and every published measurement with the engine's figure
and error (app/estimates/speed_cases.py)."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from app.engine import Job, shape_of, speed
from app.engine.job_speed import speed_job
from app.estimates.speed_cases import SpeedCase, published_cases


@dataclass(frozen=True)
class SpeedMethodPage:
    """The figures the page's training-speed section quotes."""

    cases: tuple[SpeedCase, ...]
    median_error_pct: float
    max_error_pct: float
    held: int
    sources: int
    cards: int
    peak_pct: int
    peak_hopper_pct: int
    half_tokens: int
    attention_pct: int
    attention_hopper_pct: int
    memory_pct: int
    hidden_bytes: int
    dequant_us: int
    lora_module_us: int
    host_kernel_us: float
    host_kernels_8b: int
    """Kernels the host issues for one LoRA step of Llama 3.1 8B (one sequence, dropout 0.05)."""
    host_seconds_8b: float


LLAMA_8B_CONFIG = (Path(__file__).resolve().parents[1] / "catalog" / "seed" / "models"
                   / "llama-3.1-8b.json")


def _llama_8b_lora_host() -> tuple[tuple[int, int], float]:
    """The host's kernels and seconds of one LoRA step of Llama 3.1 8B (the page's example)."""
    shape = shape_of(json.loads(LLAMA_8B_CONFIG.read_text()))
    job = speed_job(shape, Job(method="lora", lora_dropout=0.05))
    return speed.host_kernels(shape, job), speed.host_seconds(shape, job)


@cache
def method_page() -> SpeedMethodPage:
    """Computed once per process: the measurements and the constants are part of the code."""
    cases = published_cases()
    kernels, host = _llama_8b_lora_host()
    counted = [case for case in cases if case.held]
    held = [abs(case.error) for case in counted]
    return SpeedMethodPage(
        cases=cases,
        median_error_pct=round(100 * statistics.median(held), 1),
        max_error_pct=round(100 * max(held), 1),
        held=len(held), sources=len({case.source for case in counted}),
        cards=len({case.card for case in counted}),
        peak_pct=round(100 * speed.PEAK_FRACTION),
        peak_hopper_pct=round(100 * speed.PEAK_FRACTION_HOPPER),
        half_tokens=round(speed.HALF_TOKENS),
        attention_pct=round(100 * speed.ATTENTION_FRACTION),
        attention_hopper_pct=round(100 * speed.ATTENTION_FRACTION_HOPPER),
        memory_pct=round(100 * speed.MEMORY_EFFICIENCY),
        hidden_bytes=speed.HIDDEN_PASS_BYTES,
        dequant_us=round(speed.QLORA_DEQUANT_SECONDS * 1e6),
        lora_module_us=round(speed.LORA_MODULE_SECONDS * 1e6),
        host_kernel_us=round(speed.HOST_SECONDS_PER_KERNEL * 1e6, 1),
        host_kernels_8b=sum(kernels),
        host_seconds_8b=round(host, 2),
    )
