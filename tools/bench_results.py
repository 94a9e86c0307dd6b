"""The benchmarks' last recorded run, and the table docs/performance.md shows of it.

``make bench`` runs ``benchmarks/`` with pytest-benchmark's JSON output, then this module keeps
a summary of it in ``benchmarks/results.json`` (each benchmark's rounds, min, median and max in
seconds, what it recorded in ``extra_info``, and the run's date, cores and load average as it
ended) and writes the table between the ``bench:start`` and ``bench:end`` markers of
docs/performance.md from that file. ``tests/test_bench_results.py`` fails when the table is not
the file's or a benchmark in ``benchmarks/`` has no figure in it, so the document's benchmark
figures are the last run's, never typed by hand.

Run: ``python -m tools.bench_results RAW.json`` (``make bench`` does), or without an argument to
rewrite the table from ``benchmarks/results.json`` alone.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results.json"
PERFORMANCE = ROOT / "docs" / "performance.md"
START = "<!-- bench:start (written by `make bench`: tools/bench_results.py) -->"
END = "<!-- bench:end -->"
BLOCK = re.compile(re.escape(START) + r"\n.*?" + re.escape(END), re.DOTALL)


def summary(raw: Mapping[str, Any]) -> dict[str, Any]:
    """What is kept of pytest-benchmark's JSON: per benchmark its file, function, case,
    rounds, min/median/max seconds and extra_info; the run's date, cores and load."""
    machine = raw.get("machine_info", {})
    benchmarks = [
        {"file": item["fullname"].split("::")[0], "function": item["name"].split("[")[0],
         "case": item.get("param") or "", "rounds": item["stats"]["rounds"],
         "min_s": item["stats"]["min"], "median_s": item["stats"]["median"],
         "max_s": item["stats"]["max"], "extra_info": item.get("extra_info", {})}
        for item in raw["benchmarks"]]
    return {"datetime": raw.get("datetime", ""), "cores": machine.get("cores"),
            "load_average": machine.get("load_average"),
            "benchmarks": sorted(benchmarks, key=lambda b: (b["file"], b["function"], b["case"]))}


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.2f}" if seconds < 1 else f"{seconds * 1000:,.0f}"


def _groups(benchmarks: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], list[Any]]:
    groups: dict[tuple[str, str], list[Any]] = {}
    for item in benchmarks:
        groups.setdefault((item["file"], item["function"]), []).append(item)
    return groups


def table(results: Mapping[str, Any]) -> str:
    """The Markdown the document shows: one row per benchmark function, its cases' fastest and
    slowest median in milliseconds (and CPU seconds where the benchmark records them)."""
    load = results.get("load_average")
    lines = [
        f"Last run: {results['datetime'][:16].replace('T', ' ')} UTC, {results['cores']} cores"
        + (f", load average {load[1]:.1f} over the last 5 minutes" if load else "")
        + " (`benchmarks/results.json`). Milliseconds per call, the median of each case's"
        " rounds: the fastest case's and the slowest case's.",
        "",
        "| benchmark | cases | fastest median ms | its case | slowest median ms | its case |",
        "|---|---:|---:|---|---:|---|",
    ]
    for (file, function), items in _groups(results["benchmarks"]).items():
        fast = min(items, key=lambda b: b["median_s"])
        slow = max(items, key=lambda b: b["median_s"])
        lines.append(f"| `{Path(file).name}` {function.removeprefix('test_').replace('_', ' ')}"
                     f" | {len(items)} | {_ms(fast['median_s'])} | {fast['case']}"
                     f" | {_ms(slow['median_s'])} | {slow['case']} |")
    cpu = [b for b in results["benchmarks"] if "cpu_s_median" in b["extra_info"]]
    if cpu:
        lines += ["", "CPU seconds per run, median (wall clock above): " + "; ".join(
            f"{b['case']} {b['extra_info']['cpu_s_median']:.2f} s" for b in cpu) + "."]
    return "\n".join(lines)


def with_table(document: str, results: Mapping[str, Any]) -> str:
    """``document`` with the block between the markers replaced by :func:`table`."""
    if not BLOCK.search(document):
        raise ValueError(f"no {START} ... {END} block")
    return BLOCK.sub(lambda _: f"{START}\n{table(results)}\n{END}", document)


def main(argv: Sequence[str]) -> int:
    if argv:
        raw = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
        RESULTS.write_text(json.dumps(summary(raw), indent=1) + "\n", encoding="utf-8")
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    PERFORMANCE.write_text(with_table(PERFORMANCE.read_text(encoding="utf-8"), results),
                           encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
