"""Measure one htmx result per job, uncached and remembered, and publish the figures.

Usage: ``.venv/bin/python -m benchmarks.fragment_report [--rounds N]``

Sends each job of ``benchmarks/_fragment.py`` through the whole application ``--rounds`` times
with the answer caches dropped before each (uncached), then as many times again with them kept
(the server's remembered fragment), timing each request in wall time and in CPU time of the
process (all its threads). Writes the figures, the machine's load average before and after,
its core count, the date and the commit to ``benchmarks/fragment_speed.json``, and the table
made from them into docs/performance.md between the markers below;
``tests/test_performance_doc.py`` holds the page to the recorded figures. CPU time is the
figure to read on a shared machine: wall time there is mostly waiting for a core.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks._fragment import JOBS, FragmentBench, Job, fragment_bench

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "fragment_speed.json"
PAGE = ROOT / "docs" / "performance.md"
BLOCK_START = "<!-- fragment-speed:start (written by `python -m benchmarks.fragment_report`) -->"
BLOCK_END = "<!-- fragment-speed:end -->"
TARGET_MS = 8.0
"""The goal for an uncached result of a catalog model, server time."""


def _timed(bench: FragmentBench, job: Job, rounds: int, *, cached: bool) -> dict[str, float]:
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(rounds):
        if not cached:
            bench.forget()
        wall, cpu = time.perf_counter(), time.process_time()
        status, _ = bench.ask(job)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        if status != 200:
            raise RuntimeError(f"{job.name}: status {status}")
    return {"cpu_min_ms": round(1000 * min(cpus), 2),
            "cpu_median_ms": round(1000 * statistics.median(cpus), 2),
            "wall_min_ms": round(1000 * min(walls), 2),
            "wall_median_ms": round(1000 * statistics.median(walls), 2)}


def _commit() -> str:
    run = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    return run.stdout.strip() or "unknown"


def measure(rounds: int) -> dict[str, Any]:
    """The figures of every job, with when and where they were measured."""
    load_before = os.getloadavg()
    with fragment_bench() as bench:
        jobs = [{"job": job.name, "path": job.path, "fields": job.fields,
                 "uncached": _timed(bench, job, rounds, cached=False),
                 "remembered": _timed(bench, job, rounds, cached=True)} for job in JOBS]
    return {"measured_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
            "commit": _commit(), "cores": os.cpu_count(), "rounds": rounds,
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()], "jobs": jobs}


def _load(values: list[float]) -> str:
    return ", ".join(f"{x:.2f}" for x in values)


def block(results: dict[str, Any]) -> str:
    """The generated part of docs/performance.md for ``results``."""
    rows = [f"| {j['job']} | {j['uncached']['cpu_min_ms']:.1f} | "
            f"{j['uncached']['cpu_median_ms']:.1f} | {j['uncached']['wall_min_ms']:.1f} | "
            f"{j['uncached']['wall_median_ms']:.1f} | {j['remembered']['cpu_median_ms']:.1f} |"
            for j in results["jobs"]]
    return "\n".join([
        BLOCK_START,
        f"Measured {results['measured_utc']} UTC at commit {results['commit']} on a machine "
        f"of {results['cores']} cores (load average {_load(results['load_before'])} before, "
        f"{_load(results['load_after'])} after), {results['rounds']} requests per job and "
        f"kind; milliseconds, the German page; target under {TARGET_MS:g} ms uncached:",
        "",
        "| change | uncached CPU min | uncached CPU median | uncached wall min | "
        "uncached wall median | remembered CPU median |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        BLOCK_END,
    ])


def write_page(results: dict[str, Any], page: Path = PAGE) -> None:
    """Put :func:`block` between the markers of ``page``."""
    text = page.read_text(encoding="utf-8")
    start, end = text.index(BLOCK_START), text.index(BLOCK_END) + len(BLOCK_END)
    page.write_text(text[:start] + block(results) + text[end:], encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    results = measure(args.rounds)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    write_page(results)
    print(block(results))


if __name__ == "__main__":
    main()
