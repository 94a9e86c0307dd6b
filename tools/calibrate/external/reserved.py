"""Reserved against allocated: the caching allocator's reserve held to published runs (issue 15,
point 4).

``reserved.json`` (next to this file) holds runs that report, for the same step, the
live-tensor peak (``max_memory_allocated``) and what the allocator reserved
(``max_memory_reserved``, or nvidia-smi, which adds the CUDA context). For each pair the
engine's allocator model (``app/engine/overhead.py``) predicts the reserved figure from the
reported allocated one:

    predicted = allocated + fraction x (allocated - resident) [+ context, for nvidia-smi]

where ``resident`` is what stays allocated between steps (weights and optimizer states): the
source's own figure where it reports one, else the engine's model states for the figure's job
in ``figures.json``. ``ratio`` is the same equation solved for the fraction: the fraction that
pair implies. The single-GPU pairs are what ``ALLOCATOR_RESERVE_FRACTION`` is the median of,
the FSDP pairs what ``FSDP_ALLOCATOR_RESERVE_FRACTION`` is the median of
(``tests/engine/test_allocator_reserve.py`` holds both).

Usage::

    python -m tools.calibrate.external.reserved          # every pair
    python -m tools.calibrate.external.reserved --json
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from app.engine import estimate, overhead
from tools.calibrate.external.compare import FIGURES, _catalog_configs, load_shape, to_job

HERE = Path(__file__).resolve().parent
PAIRS = HERE / "reserved.json"
GIB = 2**30


@dataclass(frozen=True)
class Pair:
    id: str
    source: str
    gpus: int
    fsdp: bool
    allocated_bytes: int
    reserved_bytes: int
    resident_bytes: int
    includes_context: bool
    predicted_bytes: int
    error: float
    ratio: float


@cache
def _figures() -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in json.loads(FIGURES.read_text(encoding="utf-8"))["figures"]}


def _resident(pair: dict[str, Any]) -> int:
    resident = pair["resident"]
    if "bytes" in resident:
        return int(resident["bytes"])
    figure = _figures()[resident["figure"]]
    shape = load_shape(figure["model"], _catalog_configs())
    job = to_job(figure["job"], figure.get("precision_mode"), figure.get("versions"))
    return estimate(shape, job, (), with_levers=False).model_states_bytes


def evaluate(pair: dict[str, Any]) -> Pair:
    allocated = int(pair["allocated"]["bytes"])
    reported = int(pair["reserved"]["bytes"])
    resident = _resident(pair)
    # The published runs' stack, not the one the engine sizes with (overhead.CUDA_CONTEXTS).
    context = (overhead.fixed_overhead_bytes(pair["gpus"]) - overhead.CUDA_CONTEXT_BYTES
               + overhead.cuda_context(overhead.PUBLISHED_RUNS_CONTEXT).bytes
               if pair["reserved"]["includes_context"] else 0)
    fsdp = bool(pair["sharded"])
    fraction = overhead.reserve_fraction(expandable_segments=pair["expandable_segments"],
                                         fsdp=fsdp)
    dynamic = allocated - resident
    predicted = allocated + overhead.reserve_bytes(dynamic, fraction) + context
    return Pair(
        id=pair["id"], source=pair["source"], gpus=pair["gpus"], fsdp=fsdp,
        allocated_bytes=allocated, reserved_bytes=reported, resident_bytes=resident,
        includes_context=bool(context), predicted_bytes=predicted,
        error=(predicted - reported) / reported,
        ratio=(reported - allocated - context) / dynamic,
    )


def pairs() -> list[Pair]:
    data = json.loads(PAIRS.read_text(encoding="utf-8"))
    return [evaluate(p) for p in data["pairs"]]


def summary(found: list[Pair]) -> dict[str, dict[str, float | int]]:
    """Per group (single GPU, FSDP): count, the median ratio, median and largest |error|."""
    out: dict[str, dict[str, float | int]] = {}
    for name, group in (("single-gpu", [p for p in found if not p.fsdp]),
                        ("fsdp", [p for p in found if p.fsdp])):
        out[name] = {
            "n": len(group),
            "median_ratio": round(statistics.median(p.ratio for p in group), 3),
            "median_abs_error_pct": round(100 * statistics.median(abs(p.error) for p in group), 1),
            "max_abs_error_pct": round(100 * max(abs(p.error) for p in group), 1),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    found = pairs()
    if args.json:
        print(json.dumps({"pairs": [asdict(p) for p in found], "summary": summary(found)},
                         indent=1))
        return 0
    print(f"{'pair':58} {'alloc':>7} {'resid':>7} {'report':>7} {'ours':>7} {'error':>7} "
          f"{'ratio':>6}  (GiB)")
    for p in found:
        print(f"{p.id:58} {p.allocated_bytes / GIB:7.2f} {p.resident_bytes / GIB:7.2f} "
              f"{p.reserved_bytes / GIB:7.2f} {p.predicted_bytes / GIB:7.2f} "
              f"{100 * p.error:+6.1f}% {p.ratio:6.3f}")
    for name, row in summary(found).items():
        print(name, row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
