"""Hold the engine to 15 real training steps measured on one H200 (issue 28).

``tests/fixtures/h200_steps/h200-steps.json`` (copied from the measurement, its recipe in
``tools/calibrate/README.md``, "Real GPU steps") holds, per step,
``torch.cuda.max_memory_allocated`` and ``max_memory_reserved`` and the memory the device
held outside the allocator (CUDA context and library workspaces). The engine is run on each
step's job, and compared:

* allocated: the engine's ``allocated_bytes`` against ``peak_alloc``;
* total: the engine's per-GPU total (``per_gpu_bytes.total``: reserved + context, what the
  verdict holds against a card) against ``context_bytes + peak_reserved`` (about what
  nvidia-smi showed at the peak).

Targets (issue 28): every step's total within -3 % and +10 %, its allocated within 3 %
(``tests/engine/test_calibration_h200.py``). Standard library and ``app.engine`` only.

How a step maps to a job: full fine-tunes in ``amp`` ran as the Hugging Face Trainer runs them
(fp32 weights, gradients and AdamW states under bf16 autocast): the engine's ``hf``
accounting, as the CPU grid (``accuracy.job_for``); ``bf16``: pure bf16. LoRA and QLoRA:
PEFT's recipe with the step's rank, dropout and all-linear targets. SDPA is the engine's
``sdpa``, eager its ``eager``; ``alloc_conf`` ``expandable_segments:True`` is
``expandable_segments``. AdamW ran with ``fused=True``, which needs no memory beyond its
states (its multi-tensor kernels write in place).

Usage::

    python -m tools.calibrate.h200          # per step
    python -m tools.calibrate.h200 --json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.engine.architectures.registry import parse_config
from app.engine.estimate import estimate
from app.engine.job import Job
from app.engine.step_model import step_model

ROOT = Path(__file__).resolve().parents[2]
STEPS_PATH = ROOT / "tests" / "fixtures" / "h200_steps" / "h200-steps.json"
HELDOUT_PATH = ROOT / "tests" / "fixtures" / "h200_steps" / "h200-steps-2026-12-04.json"
"""35 more steps measured after the allocator model was set: a held-out check, never fitted."""
SECOND_STEP_PATH = (ROOT / "tests" / "fixtures" / "h200_steps"
                    / "h200-steps-2026-12-04-second-step.json")
"""8 checkpointed full fine-tunes measured after the second-step term was set: held out."""
CONFIGS = ROOT / "tests" / "fixtures" / "h200_steps" / "configs"

# Issue 28's targets: the per-GPU total within -3 % and +10 % of context + reserved (an
# under-estimate is a card that runs out of memory), allocated within 3 %.
TOTAL_MIN_ERROR = -0.03
TOTAL_MAX_ERROR = 0.10
ALLOCATED_MAX_ABS_ERROR = 0.03
GB = 10**9
# What shared/measured/measure_gpu.py runs when a case names no dropout
# (``LoraConfig(..., lora_dropout=c.get("drop", 0.05))``); its other defaults (rank 16, amp,
# SDPA, AdamW, no checkpointing) are job_for's too.
MEASURED_DEFAULT_DROPOUT = 0.05


@dataclass(frozen=True, slots=True)
class StepComparison:
    id: str
    model: str
    method: str
    precision: str
    batch: int
    seq: int
    checkpointing: bool
    attention: str
    expandable_segments: bool
    allocated_bytes: int
    reserved_bytes: int
    context_bytes: int
    engine_allocated_bytes: int
    engine_reserved_bytes: int
    engine_total_bytes: int

    @property
    def total_bytes(self) -> int:
        """What the card held at the peak: the context plus what the allocator reserved."""
        return self.context_bytes + self.reserved_bytes

    @property
    def allocated_error(self) -> float:
        return (self.engine_allocated_bytes - self.allocated_bytes) / self.allocated_bytes

    @property
    def total_error(self) -> float:
        return (self.engine_total_bytes - self.total_bytes) / self.total_bytes


def load_steps(path: Path = STEPS_PATH) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def job_for(step: Mapping[str, Any]) -> Job:
    """The engine's job for one measured step (module docstring)."""
    common: dict[str, Any] = {
        "batch_size": int(step["b"]),
        "seq_len": int(step["s"]),
        "gradient_checkpointing": bool(step["ckpt"]),
        "attention": "eager" if step.get("attn") == "eager" else "sdpa",
        "expandable_segments": "expandable_segments:True" in str(step.get("alloc_conf") or ""),
        # The step's optimizer: torch's fused AdamW unless the case names a bitsandbytes one.
        "optimizer": str(step.get("opt", "adamw")),
    }
    if step["method"] == "full":
        precision = str(step.get("precision", "amp"))
        if precision == "amp":
            return Job(method="full", accounting="hf", precision="amp", **common)
        return Job(method="full", precision="bf16", **common)
    return Job(method=str(step["method"]), lora_rank=int(step.get("r", 16)),  # type: ignore[arg-type]
               lora_dropout=float(step.get("drop", MEASURED_DEFAULT_DROPOUT)), **common)


def compare(data: Mapping[str, Any]) -> list[StepComparison]:
    rows = []
    for step in data["cases"]:
        config = json.loads((CONFIGS / f"{step['model']}.json").read_text(encoding="utf-8"))
        job = job_for(step)
        result = estimate(parse_config(config), job, (), with_levers=False)
        rows.append(StepComparison(
            id=str(step["id"]), model=str(step["model"]), method=job.method,
            precision=job.training_precision.precision, batch=job.batch_size, seq=job.seq_len,
            checkpointing=job.gradient_checkpointing, attention=job.attention,
            expandable_segments=job.expandable_segments,
            allocated_bytes=int(step["peak_alloc"]), reserved_bytes=int(step["peak_reserved"]),
            context_bytes=int(step["context_bytes"]),
            engine_allocated_bytes=result.allocated_bytes,
            engine_reserved_bytes=result.reserved_bytes,
            engine_total_bytes=result.per_gpu_bytes.total,
        ))
    return rows


# A held-out step whose measured context exceeds its process's context (taken before any case)
# by more than this holds memory that is not its own: bitsandbytes' paged 8-bit AdamW keeps its
# states in CUDA managed memory, which stayed resident for the cases run after it in the same
# process (16.1 GB beside the next case, which filled the card, and 8.1 GB beside the three
# after it). cuBLAS and bitsandbytes add about 90 MB to a clean context (the 15: 685-777 MiB).
FOREIGN_CONTEXT_BYTES = 2**30


def ran(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with only the steps that ran (a held-out case failed in transformers and is
    kept with its error in the file)."""
    return {**data, "cases": [step for step in data["cases"]
                              if step.get("peak_alloc") and not step.get("error")]}


def second_step_rise(step: Mapping[str, Any]) -> tuple[float, float]:
    """The new segments the engine gives the second step's loss head (beyond the first step's
    reserve) and the measured rise of reserved from the first step to the second, both in
    bytes per token per vocabulary entry (overhead.py, "the second step's loss head")."""
    config = json.loads((CONFIGS / f"{step['model']}.json").read_text(encoding="utf-8"))
    job = job_for(step)
    model = step_model(parse_config(config), job)
    b, s = job.batch_size, job.seq_len
    stranded = model.reserve.stranded(b, s)
    stranding = max(m.live(b, s) + stranded for m in model.moments if m.strands)
    first = max(stranding - model.reserve.first_step_absent, model.reserve.floor_static)
    second = model.reserve.second_step(stranding, b, s)
    unit = b * s * int(config["vocab_size"])
    rise = int(step["steps"][1]["reserved"]) - int(step["steps"][0]["reserved"])
    return (second - first) / unit if second else 0.0, rise / unit


def foreign_context(step: Mapping[str, Any], data: Mapping[str, Any]) -> int:
    """Bytes of a step's measured context that an earlier case left (0 for a clean step)."""
    processes = data.get("process_context_bytes") or {}
    if not processes:
        return 0
    extra = int(step["context_bytes"]) - max(int(v) for v in processes.values())
    return extra if extra > FOREIGN_CONTEXT_BYTES else 0


def summary(rows: Sequence[StepComparison]) -> dict[str, Any]:
    totals = [row.total_error for row in rows]
    allocated = [row.allocated_error for row in rows]
    return {
        "steps": len(rows),
        "total_median_abs_error_pct": round(100 * statistics.median(map(abs, totals)), 1),
        "total_min_error_pct": round(100 * min(totals), 1),
        "total_max_error_pct": round(100 * max(totals), 1),
        "allocated_median_abs_error_pct": round(100 * statistics.median(map(abs, allocated)), 1),
        "allocated_max_abs_error_pct": round(100 * max(map(abs, allocated)), 1),
        "within_target": sum(
            TOTAL_MIN_ERROR <= row.total_error <= TOTAL_MAX_ERROR
            and abs(row.allocated_error) <= ALLOCATED_MAX_ABS_ERROR for row in rows),
    }


def _row(row: StepComparison) -> dict[str, Any]:
    return {
        "step": row.id,
        "model": row.model,
        "method": row.method,
        "precision": row.precision,
        "batch": row.batch,
        "seq": row.seq,
        "checkpointing": row.checkpointing,
        "attention": row.attention,
        "expandable_segments": row.expandable_segments,
        "allocated_gb": round(row.allocated_bytes / GB, 2),
        "engine_allocated_gb": round(row.engine_allocated_bytes / GB, 2),
        "allocated_error_pct": round(100 * row.allocated_error, 1),
        "total_gb": round(row.total_bytes / GB, 2),
        "engine_total_gb": round(row.engine_total_bytes / GB, 2),
        "total_error_pct": round(100 * row.total_error, 1),
    }


def document(data: Mapping[str, Any], rows: Sequence[StepComparison]) -> dict[str, Any]:
    """The H200 section of ``app/web/published/accuracy.json`` (the "How we calculate" page
    renders it)."""
    return {
        "steps": str(STEPS_PATH.relative_to(ROOT)),
        "measured_with": data.get("env"),
        "measured": "torch.cuda.max_memory_allocated, max_memory_reserved and the memory "
                    "outside the allocator (CUDA context) on one H200",
        "summary": summary(rows),
        "rows": [_row(row) for row in rows],
    }


# Held-out steps the engine is not held to, each with why (tests/engine/
# test_calibration_h200_heldout.py keeps them strict: a step that starts to hold fails there).
PAGED_STATES = ("paged 8-bit AdamW keeps its states in CUDA managed memory, which "
                "max_memory_allocated and max_memory_reserved do not count: the engine's "
                "16.1 GB more are those states")
HELDOUT_ALLOCATED_MISSES = {
    "full-bf16-l8b-b1s2048-ck-paged8bit": PAGED_STATES,
    "qlora-m7b-b2s4096-ck": ("QLoRA Mistral 7B with checkpointing: 0.55 GB (4.0 %) more "
                             "allocated than counted, not explained"),
}
HELDOUT_TOTAL_MISSES = {
    "full-bf16-l8b-b1s2048-ck-paged8bit": PAGED_STATES,
}


SECOND_STEP_OVER = (
    "full {precision} Llama 3.2 1B with checkpointing at {tokens} tokens a step: reserved rose "
    "by {rise} bytes per token per vocabulary entry from the first step to the second; the "
    "engine's bound on the second loss head's new segments gives {model} (it does not follow "
    "the blocks the freed gradients leave or where best fit put each state): over-sized, never "
    "under")
SECOND_STEP_TOTAL_MISSES = {
    "full-amp-l1b-b2s8192-ck": SECOND_STEP_OVER.format(
        precision="amp", tokens="16,384", rise=4, model="8.2"),
    "full-bf16-l1b-b4s4096-ck": SECOND_STEP_OVER.format(
        precision="bf16", tokens="16,384", rise=4, model="5.6"),
    "full-amp-l1b-b8s4096-ck": SECOND_STEP_OVER.format(
        precision="amp", tokens="32,768", rise=0, model="4.7"),
    "full-amp-l1b-b1s16384-ck": SECOND_STEP_OVER.format(
        precision="amp", tokens="16,384", rise=4, model="8.2"),
}
"""The held-out second-step steps the engine is not held to, each with why (strict xfails in
tests/engine/test_calibration_h200_second_step.py)."""


def heldout_document(data: Mapping[str, Any]) -> dict[str, Any]:
    """The held-out steps against the engine: every row, its errors, and the steps that are
    not held to the targets with why (measured context of another case taken off first)."""
    steps = ran(data)
    rows = compare(steps)
    out = []
    for step, row in zip(steps["cases"], rows, strict=True):
        foreign = foreign_context(step, data)
        clean = dataclasses.replace(row, context_bytes=row.context_bytes - foreign)
        item = _row(clean)
        if foreign:
            item["foreign_context_gb"] = round(foreign / GB, 2)
        note = HELDOUT_TOTAL_MISSES.get(row.id) or HELDOUT_ALLOCATED_MISSES.get(row.id)
        if note:
            item["not_held"] = note
        out.append(item)
    held = [r for r in out if "not_held" not in r]
    return {
        "steps": str(HELDOUT_PATH.relative_to(ROOT)),
        "measured_with": data.get("env"),
        "failed": [step["id"] for step in data["cases"] if step.get("error")],
        "held": len(held),
        "within_target": sum(
            100 * TOTAL_MIN_ERROR <= r["total_error_pct"] <= 100 * TOTAL_MAX_ERROR
            and abs(r["allocated_error_pct"]) <= 100 * ALLOCATED_MAX_ABS_ERROR for r in out),
        "total_median_abs_error_pct": round(statistics.median(
            abs(r["total_error_pct"]) for r in out), 1),
        "allocated_median_abs_error_pct": round(statistics.median(
            abs(r["allocated_error_pct"]) for r in out), 1),
        "rows": out,
    }


def heldout_markdown_block(section: Mapping[str, Any]) -> list[str]:
    """docs/accuracy.md's held-out H200 table, beside the 15."""
    rows = section["rows"]
    lines = [
        f"**Held out on the same GPU** ({len(rows)} more steps measured on 2026-12-04 after the "
        f"allocator model was set, `{section['steps']}`; no constant chosen on them): "
        f"{section['within_target']} of {len(rows)} within the targets, median |error| total "
        f"{section['total_median_abs_error_pct']} %, allocated "
        f"{section['allocated_median_abs_error_pct']} %; the {len(rows) - section['held']} "
        "not held to them are named below with why. A step run after the paged 8-bit AdamW "
        "case in the same process is compared without the managed memory that case left "
        "on the device (GB off its measured context in brackets).",
        "",
        "| step | allocated GB | engine | error % | total GB | engine | error % | not held |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        foreign = f" (−{row['foreign_context_gb']})" if row.get("foreign_context_gb") else ""
        lines.append(
            f"| `{row['step']}` | {row['allocated_gb']} | {row['engine_allocated_gb']} | "
            f"{row['allocated_error_pct']:+.1f} | {row['total_gb']}{foreign} | "
            f"{row['engine_total_gb']} | {row['total_error_pct']:+.1f} | "
            f"{row.get('not_held', '')} |")
    failed = ", ".join(f"`{step}`" for step in section["failed"])
    if failed:
        lines += ["", f"Failed in transformers, kept in the file with its error: {failed}."]
    return lines


def markdown_block(section: Mapping[str, Any]) -> list[str]:
    """docs/accuracy.md's H200 table (inside the accuracy block)."""
    stats = section["summary"]
    env = section.get("measured_with") or {}
    lines = [
        f"**On a real GPU** ({stats['steps']} training steps on one H200, PyTorch "
        f"{env.get('torch', '?')}, transformers {env.get('transformers', '?')}): the per-GPU "
        f"total (context + `max_memory_reserved`) within **{stats['total_min_error_pct']:+} %** "
        f"to **{stats['total_max_error_pct']:+} %** (median |error| "
        f"{stats['total_median_abs_error_pct']} %), allocated (`max_memory_allocated`) within "
        f"**{stats['allocated_max_abs_error_pct']} %** (median "
        f"{stats['allocated_median_abs_error_pct']} %); {stats['within_target']} of "
        f"{stats['steps']} within the targets (total -3 % to +10 %, allocated 3 %).",
        "",
        "| step | allocated GB | engine | error % | total GB | engine | error % |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| `{row['step']}` | {row['allocated_gb']} | {row['engine_allocated_gb']} | "
        f"{row['allocated_error_pct']:+.1f} | {row['total_gb']} | {row['engine_total_gb']} | "
        f"{row['total_error_pct']:+.1f} |"
        for row in section["rows"]
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    data = load_steps()
    rows = compare(data)
    if args.json:
        print(json.dumps({"rows": [asdict(r) for r in rows], "summary": summary(rows)},
                         indent=1))
        return 0
    print(f"{'step':34} {'alloc':>7} {'engine':>7} {'err':>6}  {'total':>7} {'engine':>7} "
          f"{'err':>6}  (GB)")
    for r in rows:
        print(f"{r.id:34} {r.allocated_bytes / GB:7.2f} {r.engine_allocated_bytes / GB:7.2f} "
              f"{100 * r.allocated_error:+5.1f}%  {r.total_bytes / GB:7.2f} "
              f"{r.engine_total_bytes / GB:7.2f} {100 * r.total_error:+5.1f}%")
    print(json.dumps(summary(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
