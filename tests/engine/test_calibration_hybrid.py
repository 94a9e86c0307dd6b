"""Hybrid models' activations against real training steps (issue 16): Gated DeltaNet (Qwen3-Next
with experts, Qwen3.5 dense) and Mamba-2 (Nemotron-H) layers beside attention, full fine-tuning
and LoRA, with and without checkpointing, each case within 10 % of the step's measured peak
(tools/calibrate/results/cpu-hybrid.json; no torch needed here)."""

from __future__ import annotations

import pytest

from tools.calibrate import accuracy

HYBRID_PATH = accuracy.GRID_PATH.with_name("cpu-hybrid.json")
GRID = accuracy.load_grid(HYBRID_PATH)
ROWS = {row.case: row for row in accuracy.compare(GRID)}


def test_every_hybrid_kind_and_method_was_measured() -> None:
    assert not GRID["failures"]
    kinds = {record["model_type"] for record in GRID["cases"]}
    assert kinds >= {"qwen3_next", "qwen3_5_text", "nemotron_h"}
    assert {record["method"] for record in GRID["cases"]} == {"full", "lora"}
    assert {record["checkpointing"] for record in GRID["cases"]} == {True, False}


@pytest.mark.parametrize("case", sorted(ROWS))
def test_the_engine_is_within_ten_percent_of_the_measured_step(case: str) -> None:
    row = ROWS[case]
    error = (row.estimated_bytes - row.measured_bytes) / row.measured_bytes
    assert abs(error) <= 0.10, f"{case}: {100 * error:+.1f} %"
