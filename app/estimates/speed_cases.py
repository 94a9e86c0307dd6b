"""Published training-throughput measurements beside the engine's speed for the same job.

The measurements, their sources and the cards' figures:
``app/estimates/measurements/published_speed.json``.
``tests/engine/test_speed_published.py`` holds the engine to them and "How we calculate" lists
each case with its error (app/engine/speed.py models the step).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.config import SEED_DIR
from app.engine import GpuSpec, Job, shape_of
from app.engine.estimate import estimate
from app.engine.speed import config_attention_layers

PUBLISHED_MEASUREMENTS = Path(__file__).resolve().parent / "measurements" / "published_speed.json"
SEED_MODELS = SEED_DIR / "models"


@dataclass(frozen=True, slots=True)
class SpeedCase:
    """One published measurement and the engine's tokens per second for the same job."""

    id: str
    source: str
    source_url: str
    framework: str
    card: str
    gpus: int
    model: str
    method: str
    batch_size: int
    seq_len: int
    measured_as: str
    measured_tokens_per_s: float
    predicted_tokens_per_s: float
    held: bool
    not_held: str = ""
    """Why a case is listed but not held to the bound: ``deterministic_kernels`` (a trainer in
    PyTorch's deterministic mode), ``fused_kernels`` (a framework that fuses what the engine
    counts as Hugging Face's and PEFT's separate kernels) or ``unexplained`` (a miss whose
    cause is not established); ``""`` for a held case."""
    engine_predicts: str = ""
    """The side the engine errs on for a case not held: ``faster`` or ``slower``."""

    @property
    def error(self) -> float:
        """(predicted - measured) / measured."""
        return self.predicted_tokens_per_s / self.measured_tokens_per_s - 1


def _config(document: dict[str, Any], model: str) -> dict[str, Any]:
    configs: dict[str, dict[str, Any]] = document["configs"]
    if model in configs:
        return configs[model]
    loaded: dict[str, Any] = json.loads((SEED_MODELS / f"{model}.json").read_text("utf-8"))
    return loaded


def published_cases(path: Path = PUBLISHED_MEASUREMENTS) -> tuple[SpeedCase, ...]:
    """Every published case with the engine's prediction, in the file's order."""
    document = json.loads(path.read_text(encoding="utf-8"))
    cases: list[SpeedCase] = []
    for item in document["cases"]:
        config = _config(document, item["model"])
        shape = shape_of(config)
        card = document["cards"][item["card"]]
        spec = GpuSpec(
            slug=item["card"], name=card["name"], usable_bytes=1 << 50,
            compute_capability=card["compute_capability"], interconnect=card["interconnect"],
            bf16_tflops=card["bf16_tflops"], memory_bandwidth_gbps=card["memory_bandwidth_gbps"],
            interconnect_bandwidth_gbps=card["interconnect_bandwidth_gbps"])
        # a list in the file (LoRA's module names) is the job's tuple
        fields: dict[str, Any] = {key: tuple(value) if isinstance(value, list) else value
                                  for key, value in item["job"].items()}
        job = Job(gpus=item["gpus"], **fields)
        result = estimate(shape, job, [spec], with_levers=False,
                          layers=config_attention_layers(config, shape))
        training = result.fits[0].training
        assert training is not None  # every card in the file has its figures
        source = document["sources"][item["source"]]
        cases.append(SpeedCase(
            id=item["id"], source=source["title"], source_url=source["url"],
            framework=source["framework"], card=card["name"], gpus=item["gpus"],
            model=item["model"], method=job.method, batch_size=job.batch_size,
            seq_len=job.seq_len, measured_as=item["measured_as"],
            measured_tokens_per_s=item["measured_tokens_per_s"],
            predicted_tokens_per_s=training.tokens_per_s, held=item["held"],
            not_held=item.get("not_held", ""), engine_predicts=item.get("engine_predicts", "")))
    return tuple(cases)
