"""The engine against real training steps: every committed calibration case within 10 %,
the median within 3 % (issue 4), and the published accuracy is the current one. Real
bitsandbytes QLoRA steps (results/cpu-qlora.json) join the grid's cases (issue 15, point 1).

The grid (tools/calibrate/results/cpu-grid.json) was measured with PyTorch's MemTracker on
real Hugging Face training steps; this test needs no torch, only the committed numbers.
"""

from __future__ import annotations

import json
import statistics

import pytest

from tools.calibrate import accuracy

GRID = accuracy.load_grid()
ROWS = accuracy.compare(GRID)
HELDOUT = accuracy.load_grid(accuracy.HELDOUT_PATH)
HELDOUT_ROWS = accuracy.compare(HELDOUT)


def test_the_grid_is_big_enough_to_mean_something() -> None:
    assert len(ROWS) >= 60
    assert sum(row.mode == "fake" and not row.model.startswith("tiny-") for row in ROWS) >= 12
    assert {row.method for row in ROWS} == {"full", "lora", "qlora"}
    assert {row.attention for row in ROWS} == {"sdpa", "eager"}
    assert {row.checkpointing for row in ROWS} == {True, False}
    assert {"llama", "qwen3", "gemma2", "phi3", "mixtral"} <= {
        record["model_type"] for record in GRID["cases"]
    }


def test_qlora_is_measured_not_assumed() -> None:
    """Real bitsandbytes steps: nf4 with and without double quantisation, checkpointing on and
    off, several architectures, a real 1B shape, and the bitsandbytes < 0.43.2 emulation."""
    qlora = [record for record in GRID["cases"] if record["method"] == "qlora"]
    assert len(qlora) >= 12
    assert all(record["mode"] == "real" and record["versions"]["bitsandbytes"] for record in qlora)
    assert {record["quant"]["double_quant"] for record in qlora} == {True, False}
    assert {record["checkpointing"] for record in qlora} == {True, False}
    assert {"llama", "qwen3", "gemma2", "phi3"} <= {record["model_type"] for record in qlora}
    assert any(not record["config"].startswith("tiny-") for record in qlora)
    assert any(record["quant"]["saves_inputs"] for record in qlora)
    # the packed weights are parameters and the quantisation state is counted (as buffers)
    assert all(record["start_split"]["buffers"] >= record["quant"]["quant_state_bytes"]
               for record in qlora)


@pytest.mark.parametrize("row", ROWS, ids=[row.case for row in ROWS])
def test_each_case_is_within_ten_percent(row: accuracy.CaseComparison) -> None:
    assert abs(row.error) <= accuracy.MAX_ABS_ERROR, (
        f"{row.case}: estimated {row.estimated_bytes:,} B, measured {row.measured_bytes:,} B "
        f"({100 * row.error:+.2f} %)"
    )


def test_median_absolute_error_is_at_most_three_percent() -> None:
    median = statistics.median(abs(row.error) for row in ROWS)
    assert median <= accuracy.MAX_MEDIAN_ABS_ERROR, f"median |error| {100 * median:.2f} %"


def test_published_accuracy_matches_the_engine_and_the_grid() -> None:
    """app/web/published/accuracy.json (rendered on "How we calculate" and quoted in
    docs/accuracy.md) must be regenerated whenever the engine or the grid changes:
    `make accuracy`."""
    published = json.loads(accuracy.ACCURACY_JSON.read_text(encoding="utf-8"))
    assert published == accuracy.published_document()[0]
    assert accuracy.ACCURACY_PNG.is_file()


def test_fake_mode_measures_what_real_mode_measures() -> None:
    pairs = GRID["fake_vs_real"]
    assert len(pairs) >= 10
    assert all(pair["peak_equal"] and pair["split_equal"] for pair in pairs)


def test_the_accuracy_page_quotes_the_current_accuracy() -> None:
    page = accuracy.ACCURACY_PAGE.read_text(encoding="utf-8")
    block = accuracy.readme_block(accuracy.published_document()[0])
    assert block in page, "run `make accuracy` to refresh docs/accuracy.md's accuracy table"


@pytest.mark.parametrize("row", HELDOUT_ROWS, ids=[row.case for row in HELDOUT_ROWS])
def test_held_out_architectures_are_within_ten_percent(row: accuracy.CaseComparison) -> None:
    """Measured after the engine was tuned: Qwen2, Mistral, Qwen3-MoE, GPT-2, real shapes."""
    if row.case in accuracy.CPU_ONLY_CASES:
        # Listed with its reason; it must stay an underestimate of the CPU's math kernel, or
        # the reason no longer holds and the case should be held to the target again.
        assert row.error < -0.05, row.case
        return
    assert abs(row.error) <= accuracy.MAX_ABS_ERROR, f"{row.case}: {100 * row.error:+.2f} %"


def test_the_held_out_set_is_new() -> None:
    assert len(HELDOUT_ROWS) >= 15
    assert not {row.model for row in HELDOUT_ROWS} & {row.model for row in ROWS}
