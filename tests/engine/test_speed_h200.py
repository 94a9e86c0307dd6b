"""Training speed against the 15 steps measured on an H200 SXM (tests/fixtures/h200_steps).

Each step's job (method, batch, sequence, checkpointing, precision, attention, LoRA dropout) is
estimated for the H200 SXM with its datasheet figures (989.5 TFLOP/s dense BF16, 4.8 TB/s), and
the predicted tokens per second is held to the measured one: every case within 20 %, the
median within 10 % (issue 26).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from app.engine import GpuSpec, Job, shape_of
from app.engine.estimate import estimate
from app.engine.speed import config_attention_layers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "h200_steps"
STEPS = json.loads((FIXTURES / "h200-steps.json").read_text())["cases"]

H200_SXM = GpuSpec(
    slug="h200-sxm", name="NVIDIA H200 SXM", usable_bytes=143_771 * 2**20,
    compute_capability="9.0", interconnect="nvlink", bf16_tflops=989.5, fp4_tflops=None,
    memory_bandwidth_gbps=4800.0, interconnect_bandwidth_gbps=900.0, comparison_only=True,
)


def job_of(step: dict[str, object]) -> Job:
    """The measured step's job as the surfaces take it (shared/measured/README.md)."""
    method = str(step["method"])
    return Job(
        method=method,  # type: ignore[arg-type]
        batch_size=int(str(step["b"])), seq_len=int(str(step["s"])),
        gradient_checkpointing=bool(step["ckpt"]),
        attention="eager" if step.get("attn") == "eager" else "sdpa",
        precision=step.get("precision") if method == "full" else None,  # type: ignore[arg-type]
        lora_dropout=float(str(step.get("drop") or 0.0)),
        expandable_segments=step.get("alloc_conf") == "expandable_segments:True",
    )


def predicted(step: dict[str, object]) -> float:
    config = json.loads((FIXTURES / "configs" / f"{step['model']}.json").read_text())
    shape = shape_of(config)
    result = estimate(shape, job_of(step), [H200_SXM], with_levers=False,
                      layers=config_attention_layers(config, shape))
    training = result.fits[0].training
    assert training is not None
    return training.tokens_per_s


def error(step: dict[str, object]) -> float:
    return predicted(step) / float(str(step["tokens_per_s"])) - 1


@pytest.mark.parametrize("step", STEPS, ids=[str(step["id"]) for step in STEPS])
def test_each_measured_step_within_20_percent(step: dict[str, object]) -> None:
    assert abs(error(step)) <= 0.20


def test_median_error_within_10_percent() -> None:
    assert len(STEPS) == 15
    assert statistics.median(abs(error(step)) for step in STEPS) <= 0.10
