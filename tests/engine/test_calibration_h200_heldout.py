"""The allocator model against 35 more steps measured on one H200 on 2026-12-04, after the
model was set (tests/fixtures/h200_steps/README.md): a held-out check, no constant chosen on
them (issue 28, point 3).

Each step runs as the 15 of :mod:`tests.engine.test_calibration_h200` do
(``tools/calibrate/h200.py``), with the same targets: the per-GPU total within -3 % and +10 %
of the context plus ``max_memory_reserved``, the live-tensor peak within 3 % of
``max_memory_allocated``. The steps run after the paged 8-bit AdamW case in the same process
are compared without the managed memory that case left on the device
(``h200.foreign_context``). The steps not held to the targets are named in ``tools/calibrate/
h200.py`` with why; they are strict xfails here: one that starts to hold fails, and is then
taken off the list.
"""

from __future__ import annotations

import dataclasses

import pytest

from tools.calibrate import h200

DATA = h200.load_steps(h200.HELDOUT_PATH)
STEPS = h200.ran(DATA)
ROWS = {
    row.id: dataclasses.replace(row, context_bytes=row.context_bytes
                                - h200.foreign_context(step, DATA))
    for step, row in zip(STEPS["cases"], h200.compare(STEPS), strict=True)
}


def _params(misses: dict[str, str]) -> list[object]:
    return [pytest.param(step_id, marks=pytest.mark.xfail(reason=misses[step_id], strict=True))
            if step_id in misses else step_id for step_id in ROWS]


def test_every_step_that_ran_is_compared() -> None:
    assert len(DATA["cases"]) == 35
    assert len(ROWS) == 34
    assert [step["id"] for step in DATA["cases"] if step.get("error")] == ["qlora-g9b-b4s2048-ck"]


def test_only_the_steps_after_the_paged_optimizer_hold_foreign_memory() -> None:
    """The four steps run after paged 8-bit AdamW in its process: 16.1 GB beside the next one
    (which filled the card), 8.1 GB beside the three after it; every other step's context is
    within 1 GiB of its process's."""
    foreign = {step["id"]: h200.foreign_context(step, DATA) for step in STEPS["cases"]}
    assert {k for k, v in foreign.items() if v} == {
        "lora-m7b-b4s4096", "full-amp-l1b-b16s2048-ck", "lora-q3-8b-b16s1024-ck",
        "qlora-l70b-b4s2048-ck"}


@pytest.mark.parametrize("step_id", _params(h200.HELDOUT_TOTAL_MISSES))
def test_the_total_per_gpu_is_what_the_card_held(step_id: str) -> None:
    row = ROWS[step_id]
    assert h200.TOTAL_MIN_ERROR <= row.total_error <= h200.TOTAL_MAX_ERROR, (
        f"{row.id}: engine {row.engine_total_bytes / 1e9:.2f} GB, card held "
        f"{row.total_bytes / 1e9:.2f} GB ({100 * row.total_error:+.1f} %)")


@pytest.mark.parametrize("step_id", _params(h200.HELDOUT_ALLOCATED_MISSES))
def test_allocated_is_max_memory_allocated(step_id: str) -> None:
    row = ROWS[step_id]
    assert abs(row.allocated_error) <= h200.ALLOCATED_MAX_ABS_ERROR, (
        f"{row.id}: engine {row.engine_allocated_bytes / 1e9:.2f} GB, measured "
        f"{row.allocated_bytes / 1e9:.2f} GB ({100 * row.allocated_error:+.1f} %)")


def test_a_case_without_dropout_named_ran_with_measure_gpu_default() -> None:
    """measure_gpu.py runs LoRA dropout 0.05 unless a case names one; the jobs follow it."""
    step = next(s for s in STEPS["cases"] if s["id"] == "lora-l8b-b2s4096")
    assert "drop" not in step
    assert h200.job_for(step).lora_dropout == h200.MEASURED_DEFAULT_DROPOUT == 0.05
