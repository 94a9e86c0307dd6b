"""Hold the engine to published GPU measurements (issue 15, point 7).

Runs ``app.engine.estimate`` on every figure in ``figures.json`` (next to this file) and prints,
per case, the engine's number against the counter the source reports, then per source the
median and largest absolute error and their sign.

Which engine number is compared with which counter:

* ``max_memory_allocated`` and torchtune's "peak memory active" count the bytes of live tensors
  at the worst moment of the run. That is what the engine's ``peak_live_bytes`` models (the
  largest phase of the step: weights, optimizer states, gradients, activations, the loss head,
  autocast copies, a gathered ZeRO-3 layer; see ``step_model`` in app/engine/estimate.py). It
  leaves out the CUDA context and the allocator's reserve, which the allocated counter does not
  see either, so ``per_gpu_bytes.total`` would over-count by about 1 GiB plus a quarter of the
  per-step tensors.
* ``max_memory_reserved`` includes the caching allocator's reserve, not the CUDA context: the
  engine's ``reserved_bytes`` (``max(live, states) + reserve``, app/engine/overhead.py).
* nvidia-smi / "memory used" screenshots and capacity figures (the longest sequence that
  fitted a card of a given size) include the reserve and the CUDA context, which is what
  ``per_gpu_bytes.total`` adds on top (``fit.StepModel.totals``). For a capacity
  figure the reported bytes are the card's memory, so the error says how far the engine's
  total at that length lands from the card: below zero the engine would have called a run that
  filled the card smaller than it was (under-sizing).

The error is ``(engine - reported) / reported``: negative means the engine under-estimates,
the error a shop must not make. Figures marked ``excluded`` (an impossible set-up, a copied
row, settings the source does not state) are listed with their reason and left out of the
statistics. Settings the engine cannot express (torch.compile, torchao NF4 rather than
bitsandbytes, ...) are printed per case; the job is then run with the
nearest expressible settings and the case still counts.

Usage::

    python -m tools.calibrate.external.compare            # table per case and per source
    python -m tools.calibrate.external.compare --json     # the same as JSON
    python -m tools.calibrate.external.compare --fitcheck /tmp/venv/bin/fitcheck  # side by side
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.engine import EngineError, EstimateResult, Job, ModelShape, estimate, parse_config
from app.engine.framework_litgpt import NEXT_FORWARD_MOMENT
from tools.calibrate.external.peer import fitcheck_bytes

HERE = Path(__file__).resolve().parent
FIGURES = HERE / "figures.json"
REPO = HERE.parents[2]
CATALOG = REPO / "app" / "catalog" / "seed" / "models.json"
CATALOG_CONFIGS = REPO / "app" / "catalog" / "seed" / "models"

# Counters whose figure is the live-tensor peak (torch's allocated / active statistics); every
# other counter (reserved, nvidia-smi, card capacity) is compared with the per-GPU total.
ALLOCATED_COUNTERS = ("max_memory_allocated", "peak memory active", "'Peak Memory per GPU'")
# Counters of what the caching allocator reserved, without the CUDA context: the engine's
# ``reserved_bytes`` (engine 1.5.0, app/engine/overhead.py).
RESERVED_COUNTERS = ("max_memory_reserved",)

GB = 10**9


@dataclass(frozen=True)
class Case:
    id: str
    source: str
    counter: str
    compared: str
    reported_bytes: int
    engine_bytes: int | None
    error: float | None
    excluded: str | None
    not_expressible: tuple[str, ...]
    group: str
    failure: str | None = None
    peer_bytes: int | None = None
    peer_error: float | None = None
    peer_note: str | None = None


def _catalog_configs() -> dict[str, Path]:
    data = json.loads(CATALOG.read_text())
    return {m["slug"]: CATALOG_CONFIGS / m["config"] for m in data["models"]}


def config_path(model: str, catalog: dict[str, Path]) -> Path:
    """A catalog slug's config, or a config.json path relative to this folder."""
    return HERE / model if model.endswith(".json") else catalog[model]


def load_shape(model: str, catalog: dict[str, Path]) -> ModelShape:
    return parse_config(json.loads(config_path(model, catalog).read_text()))


# A figure's ``precision_mode`` as the engine's ``precision`` option (issue 15, point 2).
PRECISION_MODES = {"pure-bf16": "bf16", "amp": "amp"}


# bitsandbytes releases before this one kept every 4-bit layer's input for the backward
# (app/engine/activations.py, BNB_SAVED_INPUT_BYTES; the fix, commit 9e753741, shipped in 0.43.2).
BNB_INPUTS_FREED_IN = (0, 43, 2)


def saves_inputs(versions: dict[str, Any] | None) -> bool | None:
    """Whether the bitsandbytes release the figure ran kept every 4-bit layer's input; None
    when no release is known (or only a lower bound, ``>=``), so the engine's default holds.

    ``bitsandbytes_ran`` is the release the run could only have had, worked out from the
    source's date where it states none or only a lower bound (its evidence follows the
    number); otherwise the stated ``bitsandbytes`` is read."""
    known = versions or {}
    stated = str(known.get("bitsandbytes_ran", known.get("bitsandbytes", "")))
    match = re.match(r"\s*(\d+)\.(\d+)\.(\d+)", stated)
    if match is None:
        return None
    return tuple(int(part) for part in match.groups()) < BNB_INPUTS_FREED_IN


def to_job(fields: dict[str, Any], precision_mode: str | None = None,
           versions: dict[str, Any] | None = None) -> Job:
    values = dict(fields)
    if precision_mode in PRECISION_MODES:
        values.setdefault("precision", PRECISION_MODES[precision_mode])
    old_bnb = saves_inputs(versions) if values.get("method") == "qlora" else None
    if old_bnb is not None:
        values.setdefault("bnb_saves_inputs", old_bnb)
    if isinstance(values.get("lora_targets"), list):
        values["lora_targets"] = tuple(values["lora_targets"])
    return Job(**values)


# A run whose peak is its first micro-step (``"peak_step": "first"`` in figures.json): lit-gpt
# 2023 forced the longest sample into the first batch and drew shorter ones after it, so its
# longest step never had a previous step of the same length still held beside it. Such a
# figure is compared with the largest of the step's own moments, leaving out LitGPT's
# "previous step still held" moment (app/engine/framework_litgpt.py, point 5), which the
# engine adds because it sizes steady steps, every one at the job's batch and length.
FIRST_STEP = "first"


def first_step_peak(result: EstimateResult) -> int:
    """The live-tensor peak of a step that had no previous step (``FIRST_STEP``)."""
    return max(live for name, live in result.phases.items() if name != NEXT_FORWARD_MOMENT)


def compared_figure(counter: str) -> str:
    if counter.startswith(ALLOCATED_COUNTERS):
        return "peak_live_bytes"
    if counter.startswith(RESERVED_COUNTERS):
        return "reserved_bytes"
    return "per_gpu_bytes.total"


def group_of(figure: dict[str, Any]) -> str:
    """The method, and whether the run spans several GPUs (the groups engine work is planned by)."""
    job = figure["job"]
    return f"{job['method']}{'-multi-gpu' if job.get('gpus', 1) > 1 else ''}"


def run_case(figure: dict[str, Any], catalog: dict[str, Path],
             peer: tuple[str, Path] | None = None) -> Case:
    counter = figure["counter"]
    compared = compared_figure(counter)
    common = dict(
        id=figure["id"], source=figure["source"], counter=counter, compared=compared,
        reported_bytes=figure["reported_bytes"], excluded=figure.get("excluded"),
        not_expressible=tuple(figure.get("not_expressible", ())), group=group_of(figure),
    )
    try:
        shape = load_shape(figure["model"], catalog)
        result = estimate(shape, to_job(figure["job"], figure.get("precision_mode"),
                                        figure.get("versions")), (), with_levers=False)
    except EngineError as exc:
        return Case(engine_bytes=None, error=None, failure=f"engine refuses: {exc}", **common)
    engine = {"peak_live_bytes": result.peak_live_bytes,
              "reserved_bytes": result.reserved_bytes}.get(compared, result.per_gpu_bytes.total)
    if figure.get("peak_step") == FIRST_STEP and compared == "peak_live_bytes":
        engine = first_step_peak(result)
    error = (engine - figure["reported_bytes"]) / figure["reported_bytes"]
    case = Case(engine_bytes=engine, error=error, **common)
    if peer is None:
        return case
    exe, hf_home = peer
    peer_bytes, note = fitcheck_bytes(exe, figure, config_path(figure["model"], catalog),
                                      hf_home, compared == "peak_live_bytes")
    peer_error = (None if peer_bytes is None
                  else (peer_bytes - figure["reported_bytes"]) / figure["reported_bytes"])
    return dataclasses.replace(case, peer_bytes=peer_bytes, peer_error=peer_error,
                               peer_note=note)


def summary(cases: list[Case], by_group: bool = False) -> dict[str, dict[str, Any]]:
    """Per source (or per source and group): how many counted, median and largest |error|,
    and how many under."""
    out: dict[str, dict[str, Any]] = {}
    key = (lambda c: f"{c.source} / {c.group}") if by_group else (lambda c: c.source)
    for source in dict.fromkeys(key(c) for c in cases):
        mine = [c for c in cases if key(c) == source]
        counted = [c.error for c in mine if c.error is not None and not c.excluded]
        if not counted:
            out[source] = {"n": 0, "excluded": len(mine)}
            continue
        worst = max(counted, key=abs)
        both = [c for c in mine if c.error is not None and c.peer_error is not None
                and not c.excluded]
        out[source] = {
            "n": len(counted),
            "excluded": sum(1 for c in mine if c.excluded),
            "median_abs_error": statistics.median(abs(e) for e in counted),
            "median_error": statistics.median(counted),
            "max_abs_error": abs(worst),
            "max_error_signed": worst,
            "under": sum(1 for e in counted if e < 0),
            "both_n": len(both),
            "both_engine_median_abs_error": (
                statistics.median(abs(c.error) for c in both if c.error is not None)
                if both else None),
            "both_fitcheck_median_abs_error": (
                statistics.median(abs(c.peer_error) for c in both if c.peer_error is not None)
                if both else None),
        }
    return out


def _fmt_error(error: float | None) -> str:
    return "   -   " if error is None else f"{error * 100:+6.1f}%"


def print_table(cases: list[Case], stats: dict[str, dict[str, Any]],
                groups: dict[str, dict[str, Any]]) -> None:
    for source in stats:
        print(f"\n== {source}")
        print(f"{'case':48} {'compared':20} {'reported':>9} {'engine':>9} {'error':>8}")
        for c in (c for c in cases if c.source == source):
            engine = "-" if c.engine_bytes is None else f"{c.engine_bytes / GB:.2f}"
            mark = " [excluded]" if c.excluded else ""
            peer = "" if c.peer_error is None else f"  fitcheck {_fmt_error(c.peer_error)}"
            print(f"{c.id:48} {c.compared:20} {c.reported_bytes / GB:9.2f} {engine:>9} "
                  f"{_fmt_error(c.error)}{peer}{mark}")
            if c.failure:
                print(f"    ! {c.failure}")
            if c.peer_note and not c.excluded:
                print(f"    fitcheck: {c.peer_note}")
            if c.excluded:
                print(f"    excluded: {c.excluded}")
            for item in c.not_expressible:
                print(f"    cannot express: {item}")
    print("\n== per source and method (error = (engine - reported) / reported)")
    _print_stats(groups)
    print("\n== per source")
    _print_stats(stats)
    counted = [c.error for c in cases if c.error is not None and not c.excluded]
    if counted:
        print(f"{'all':44} {len(counted):3} {'':4} "
              f"{statistics.median(abs(e) for e in counted) * 100:9.1f}% "
              f"{statistics.median(counted) * 100:+8.1f}%")


def _print_stats(stats: dict[str, dict[str, Any]]) -> None:
    print(f"{'source':44} {'n':>3} {'excl':>4} {'median|e|':>10} {'median e':>9} "
          f"{'max|e|':>8} {'max e':>8} {'under':>5}  both: n, ours, fitcheck (median |e|)")
    for source, s in stats.items():
        if not s["n"]:
            print(f"{source:44} {0:3} {s['excluded']:4}")
            continue
        print(f"{source:44} {s['n']:3} {s['excluded']:4} {s['median_abs_error'] * 100:9.1f}% "
              f"{s['median_error'] * 100:+8.1f}% {s['max_abs_error'] * 100:7.1f}% "
              f"{s['max_error_signed'] * 100:+7.1f}% {s['under']:5}{_both(s)}")


def _both(s: dict[str, Any]) -> str:
    if not s.get("both_n"):
        return ""
    return (f"  {s['both_n']:3} {s['both_engine_median_abs_error'] * 100:6.1f}% "
            f"{s['both_fitcheck_median_abs_error'] * 100:6.1f}%")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--fitcheck", metavar="EXE",
                        help="also run fitcheck-llm's CLI (e.g. a venv's bin/fitcheck) on each "
                        "single-GPU figure and show its error beside ours (peer.py)")
    args = parser.parse_args(argv)
    figures = json.loads(FIGURES.read_text())["figures"]
    catalog = _catalog_configs()
    with tempfile.TemporaryDirectory(prefix="fitcheck-hf-") as hf_home:
        peer = (args.fitcheck, Path(hf_home)) if args.fitcheck else None
        cases = [run_case(f, catalog, peer) for f in figures]
    stats = summary(cases)
    groups = summary(cases, by_group=True)
    if args.json:
        json.dump({"cases": [c.__dict__ for c in cases], "per_source": stats,
                   "per_source_and_method": groups}, sys.stdout, indent=1)
        print()
    else:
        print_table(cases, stats, groups)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
