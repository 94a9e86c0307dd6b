"""docs/performance.md's benchmark table is the last recorded run's (tools/bench_results.py):
written from benchmarks/results.json, with a figure for every benchmark in benchmarks/."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from tools import bench_results

ROOT = Path(__file__).resolve().parent.parent


def _results() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(bench_results.RESULTS.read_text(encoding="utf-8"))
    return loaded


def test_the_documents_table_is_the_recorded_runs() -> None:
    document = bench_results.PERFORMANCE.read_text(encoding="utf-8")
    assert document == bench_results.with_table(document, _results()), (
        "docs/performance.md's benchmark table is not benchmarks/results.json's: run "
        "`python -m tools.bench_results` (or `make bench`)")


def _benchmark_functions() -> set[tuple[str, str]]:
    """Every ``test_*`` function in benchmarks/ that takes the ``benchmark`` fixture."""
    found: set[tuple[str, str]] = set()
    for path in sorted((ROOT / "benchmarks").glob("test_*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
                    and any(arg.arg == "benchmark" for arg in node.args.args)):
                found.add((f"benchmarks/{path.name}", node.name))
    return found


def test_every_benchmark_has_a_recorded_figure() -> None:
    recorded = {(item["file"], item["function"]) for item in _results()["benchmarks"]}
    missing = _benchmark_functions() - recorded
    assert not missing, f"not in benchmarks/results.json, run `make bench`: {sorted(missing)}"
    assert recorded - _benchmark_functions() == set(), "a recorded benchmark is gone"


def test_a_hand_edited_figure_is_caught() -> None:
    document = bench_results.PERFORMANCE.read_text(encoding="utf-8")
    row = bench_results.table(_results()).splitlines()[4]
    edited = document.replace(row, row.replace(" | ", " | 9", 2), 1)
    assert edited != document
    assert bench_results.with_table(edited, _results()) != edited


def test_the_summary_keeps_what_the_table_needs() -> None:
    raw = {"datetime": "2026-12-04T17:00:00", "machine_info": {"cores": 2,
                                                                "load_average": [1.0, 1, 1]},
           "benchmarks": [{"fullname": "benchmarks/test_x.py::test_y[a]", "name": "test_y[a]",
                           "param": "a", "extra_info": {},
                           "stats": {"rounds": 5, "min": 0.001, "median": 0.002, "max": 0.01}}]}
    table = bench_results.table(bench_results.summary(raw))
    assert "| `test_x.py` y | 1 | 2.00 | a | 2.00 | a |" in table
    assert "2 cores, load average 1.0 over the last 5 minutes" in table
    with pytest.raises(ValueError, match="bench:start"):
        bench_results.with_table("no block here", bench_results.summary(raw))
