"""The committed results of the external comparison (issue 15, points 6 and 7).

``compare.py`` runs the engine (and, with ``--fitcheck``, the fitcheck-llm peer) on every
published figure; this module writes what it finds to
``app/web/published/external_results.json`` (package data), and the same numbers as the
generated block of ``docs/accuracy.md``. The "How we calculate" page (``app/web/pages.py``)
renders that document, and ``tests/engine/test_external_validation.py``
holds the engine to it: its medians may only get better.

fitcheck-llm is not a dependency: it is run once from a throwaway venv and its numbers are
kept as data with the version used. Rerunning without ``--fitcheck`` keeps the recorded peer
numbers per case, so the engine's side can be refreshed on a machine without the peer.

Usage::

    python -m tools.calibrate.external.results                       # engine side only
    python -m tools.calibrate.external.results --fitcheck /tmp/v/bin/fitcheck
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from app.engine.estimate import ENGINE_VERSION
from tools.calibrate.external.compare import FIGURES, GB, REPO, Case, _catalog_configs, run_case

RESULTS = REPO / "app" / "web" / "published" / "external_results.json"
"""Package data: the "How we calculate" page renders it (``app/web/pages.py``)."""
ACCURACY_PAGE = REPO / "docs" / "accuracy.md"
BLOCK_START = "<!-- external:start (written by `python -m tools.calibrate.external.results`) -->"
BLOCK_END = "<!-- external:end -->"
PEER = "fitcheck-llm"
# Percentages are kept to two decimals: finer than any figure's own rounding (sources print
# GB to two decimals, i.e. 0.05 % of a 20 GB figure).
PCT_DIGITS = 2


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100 * value, PCT_DIGITS)


def _stats(errors: Sequence[float]) -> dict[str, Any]:
    """n, median |error| and the largest |error| with its sign (negative: under-sized)."""
    if not errors:
        return {"n": 0, "median_abs_error_pct": None, "max_error_pct": None}
    worst = max(errors, key=abs)
    return {"n": len(errors),
            "median_abs_error_pct": _pct(statistics.median(abs(e) for e in errors)),
            "max_error_pct": _pct(worst)}


def _side_by_side(cases: Sequence[Case]) -> dict[str, Any]:
    counted = [c for c in cases if not c.excluded and c.error is not None]
    both = [c for c in counted if c.peer_error is not None]
    return {
        "excluded": sum(1 for c in cases if c.excluded),
        "engine": _stats([c.error for c in counted if c.error is not None]),
        "peer": _stats([c.peer_error for c in both if c.peer_error is not None]),
        # Ours on exactly the cases the peer can express: the fair comparison per group.
        "engine_on_peer_cases": _stats([c.error for c in both if c.error is not None]),
    }


def _grouped(cases: Sequence[Case], key: Callable[[Case], str]) -> dict[str, Any]:
    return {name: _side_by_side([c for c in cases if key(c) == name])
            for name in dict.fromkeys(key(c) for c in cases)}


def _case(case: Case) -> dict[str, Any]:
    return {
        "id": case.id, "source": case.source, "group": case.group, "counter": case.counter,
        "compared": case.compared, "reported_gb": round(case.reported_bytes / GB, 2),
        "engine_gb": None if case.engine_bytes is None else round(case.engine_bytes / GB, 2),
        "error_pct": _pct(case.error),
        "peer_gb": None if case.peer_bytes is None else round(case.peer_bytes / GB, 2),
        "peer_error_pct": _pct(case.peer_error), "peer_note": case.peer_note,
        "excluded": case.excluded, "not_expressible": list(case.not_expressible),
    }


def document(cases: Sequence[Case], peer_version: str | None) -> dict[str, Any]:
    """What ``external_results.json`` holds."""
    return {
        "about": "Engine (and fitcheck-llm) against published GPU peak-memory figures "
                 "(figures.json); error = (estimate - reported) / reported, negative = "
                 "under-sized. See README.md in this folder.",
        "engine_version": ENGINE_VERSION,
        "peer": {"name": PEER, "version": peer_version,
                 "how": "its CLI run as a black box from a throwaway venv (peer.py); only "
                        "single-GPU, unsharded, non-offloaded figures can be expressed"},
        "sources": len({c.source for c in cases if not c.excluded}),
        "all": _side_by_side(cases),
        "per_source": _grouped(cases, lambda c: c.source),
        "per_group": _grouped(cases, lambda c: f"{c.source} / {c.group}"),
        "cases": [_case(c) for c in cases],
    }


def with_recorded_peer(cases: Iterable[Case], recorded: Mapping[str, Any]) -> list[Case]:
    """Cases with the peer's numbers taken from an earlier external_results.json (by case id)."""
    by_id = {row["id"]: row for row in recorded.get("cases", ())}
    out = []
    for case in cases:
        row = by_id.get(case.id)
        if row is None:
            out.append(case)
            continue
        peer_gb = row.get("peer_gb")
        peer_bytes = None if peer_gb is None else round(peer_gb * GB)
        peer_error = (None if peer_bytes is None
                      else (peer_bytes - case.reported_bytes) / case.reported_bytes)
        out.append(dataclasses.replace(case, peer_bytes=peer_bytes, peer_error=peer_error,
                                       peer_note=row.get("peer_note")))
    return out


def engine_cases(peer: tuple[str, Path] | None = None) -> list[Case]:
    """Every figure run through the engine (and the peer, when given)."""
    figures = json.loads(FIGURES.read_text(encoding="utf-8"))["figures"]
    catalog = _catalog_configs()
    return [run_case(f, catalog, peer) for f in figures]


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f} %"


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.1f} %"


def _row(name: str, s: Mapping[str, Any]) -> str:
    ours, peer = s["engine"], s["peer"]
    return (f"| {name} | {ours['n']} | {_num(ours['median_abs_error_pct'])} | "
            f"{_signed(ours['max_error_pct'])} | {peer['n']} | "
            f"{_num(peer['median_abs_error_pct'])} | {_signed(peer['max_error_pct'])} | "
            f"{_num(s['engine_on_peer_cases']['median_abs_error_pct'])} | {s['excluded']} |")


def markdown_block(doc: Mapping[str, Any]) -> str:
    """docs/accuracy.md's external-validation tables (between the two markers)."""
    head = ("| {} | n | median \\|e\\| | max e | fitcheck n | fitcheck median \\|e\\| | "
            "fitcheck max e | ours on fitcheck's cases | excluded |")
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    everything = doc["all"]
    lines = [
        BLOCK_START,
        f"{everything['engine']['n']} figures counted from {doc['sources']} sources, "
        f"{everything['excluded']} excluded (engine {doc['engine_version']}, "
        f"{doc['peer']['name']} {doc['peer']['version']}): our median |error| "
        f"**{_num(everything['engine']['median_abs_error_pct'])}**; fitcheck-llm "
        f"**{_num(everything['peer']['median_abs_error_pct'])}** on the "
        f"{everything['peer']['n']} it can express, where ours is "
        f"**{_num(everything['engine_on_peer_cases']['median_abs_error_pct'])}**. "
        "Error = (estimate − reported) / reported; negative = under-sized.",
        "", head.format("source"), rule,
        *(_row(name, s) for name, s in doc["per_source"].items()),
        _row("**all**", everything),
        "", "<details><summary>Per source and group</summary>", "",
        head.format("source / group"), rule,
        *(_row(name, s) for name, s in doc["per_group"].items()),
        "", "</details>", "",
        "<details><summary>Every figure</summary>", "",
        "| figure | counter | reported GB | ours GB | error | fitcheck GB | fitcheck error |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for c in doc["cases"]:
        if c["excluded"]:
            continue
        lines.append(
            f"| `{c['id']}` | {c['compared']} | {c['reported_gb']:.2f} | "
            f"{'–' if c['engine_gb'] is None else format(c['engine_gb'], '.2f')} | "
            f"{_signed(c['error_pct'])} | "
            f"{'–' if c['peer_gb'] is None else format(c['peer_gb'], '.2f')} | "
            f"{_signed(c['peer_error_pct'])} |")
    lines += ["", "Excluded (kept in `figures.json`, out of the statistics):", ""]
    lines += [f"- `{c['id']}`: {c['excluded']}" for c in doc["cases"] if c["excluded"]]
    lines += ["", "</details>", BLOCK_END]
    return "\n".join(lines)


def page_with_block(page: str, block: str) -> str:
    start = page.index(BLOCK_START)
    end = page.index(BLOCK_END) + len(BLOCK_END)
    return page[:start] + block + page[end:]


def peer_version(exe: str) -> str:
    """The version the peer's CLI reports (``fitcheck, version 0.3.1`` -> ``0.3.1``)."""
    done = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True,
                          timeout=60)
    return done.stdout.strip().rsplit(" ", 1)[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fitcheck", metavar="EXE",
                        help="rerun fitcheck-llm's CLI (a throwaway venv's bin/fitcheck); "
                        "without it the recorded peer numbers are kept")
    args = parser.parse_args(argv)
    recorded = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else {}
    if args.fitcheck:
        with tempfile.TemporaryDirectory(prefix="fitcheck-hf-") as hf_home:
            cases = engine_cases((args.fitcheck, Path(hf_home)))
        version = peer_version(args.fitcheck)
    else:
        cases = with_recorded_peer(engine_cases(), recorded)
        version = recorded.get("peer", {}).get("version")
    doc = document(cases, version)
    RESULTS.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    ACCURACY_PAGE.write_text(
        page_with_block(ACCURACY_PAGE.read_text(encoding="utf-8"), markdown_block(doc)),
        encoding="utf-8")
    print(json.dumps(doc["all"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
