"""Hold the engine against the committed calibration grid; write the published accuracy.

Standard library and ``app.engine`` only (no torch), so the test suite runs the same
comparison the page publishes: ``tests/engine/test_calibration.py`` enforces the targets and
checks that ``app/web/published/accuracy.json`` is current. The plot needs matplotlib (the
``calibrate`` extra); ``python -m tools.calibrate accuracy`` regenerates both files.

What is compared, per case: the engine's weights + adapter + gradients + optimizer states +
activations for one GPU (its breakdown without the CUDA overhead terms) against the measured
peak bytes of live tensors (``peak_bytes``). The CUDA context and the allocator's
fragmentation are not live tensors; they need a GPU run and are not part of this comparison.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.engine.architectures.registry import parse_config
from app.engine.estimate import ENGINE_VERSION, estimate
from app.engine.job import Job
from app.engine.shapes import ModelShape
from tools.calibrate import h200

ROOT = Path(__file__).resolve().parents[2]
GRID_PATH = ROOT / "tools" / "calibrate" / "results" / "cpu-grid.json"
# Architectures and shapes measured only after the engine was tuned on GRID_PATH: their error
# is what to expect on a model we have not measured.
HELDOUT_PATH = ROOT / "tools" / "calibrate" / "results" / "cpu-heldout.json"
# Real bitsandbytes QLoRA steps (``python -m tools.calibrate grid --qlora``), measured apart
# because they need bitsandbytes and run in real mode only; held to the same targets as the
# grid, whose cases they join (load_grid).
QLORA_PATH = ROOT / "tools" / "calibrate" / "results" / "cpu-qlora.json"
# Held-out cases that measure a CPU artefact, not what a GPU does, with the reason. GPT-2's
# configs set attn_pdrop 0.1; on a CPU, scaled_dot_product_attention with dropout falls back
# to the math kernel, which materialises the score matrix and its dropout mask. On a GPU the
# flash and memory-efficient kernels apply dropout inside the kernel and keep no score matrix
# (the same cases with attn_pdrop 0 are within 2 %). Reported, not held to the target.
CPU_ONLY_CASES: dict[str, str] = {
    case: "attention dropout under SDPA runs the math kernel on a CPU (score matrix kept)"
    for case in (
        "tiny-gpt2_full_b2_s512_sdpa_nogc_real",
        "tiny-gpt2_lora_r16-all-linear-do0.05_b2_s512_sdpa_nogc_real",
    )
}
ACCURACY_JSON = ROOT / "app" / "web" / "published" / "accuracy.json"
ACCURACY_PNG = ROOT / "app" / "static" / "img" / "accuracy.png"
ACCURACY_PAGE = ROOT / "docs" / "accuracy.md"
"""The accuracy page the block between the markers is written into (the README's until the
README was cut to what a newcomer needs, issue 14)."""
README_START = "<!-- accuracy:start (written by `make accuracy`) -->"
README_END = "<!-- accuracy:end -->"
# Where a grid record's config lives in this repository: the harness's tiny configs, or the
# reference copies of real configs that the engine tests use (the grid was run from
# ../shared/reference/models, which the repository vendors under tests/fixtures).
CONFIG_DIRS = (
    ROOT / "tools" / "calibrate" / "configs",
    ROOT / "tests" / "fixtures" / "reference" / "models",
    ROOT / "app" / "catalog" / "seed" / "models",
)

# The targets of issue 4: every case within 10 %, median absolute error at most 3 %.
MAX_ABS_ERROR = 0.10
MAX_MEDIAN_ABS_ERROR = 0.03
GIB = 1 << 30


@dataclass(frozen=True, slots=True)
class CaseComparison:
    case: str
    model: str
    method: str
    batch: int
    seq: int
    attention: str
    checkpointing: bool
    mode: str
    measured_bytes: int
    estimated_bytes: int

    @property
    def error(self) -> float:
        """Signed relative error: positive when the engine estimates more than was measured."""
        return (self.estimated_bytes - self.measured_bytes) / self.measured_bytes


def load_grid(path: Path = GRID_PATH) -> dict[str, Any]:
    """A committed grid. The main grid comes with the QLoRA grid's cases appended (its
    command and versions under ``qlora_grid``): both are held to the same targets."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if path == GRID_PATH and QLORA_PATH.is_file():
        qlora: dict[str, Any] = json.loads(QLORA_PATH.read_text(encoding="utf-8"))
        data["cases"] = [*data["cases"], *qlora["cases"]]
        data["qlora_grid"] = {
            "grid": str(QLORA_PATH.relative_to(ROOT)),
            "command": qlora.get("command"),
            "versions": qlora.get("versions"),
        }
    return data


def config_for(record: Mapping[str, Any]) -> dict[str, Any]:
    """The config.json a record was measured from, found in this repository by file name."""
    name = Path(str(record["config_path"])).name
    for directory in CONFIG_DIRS:
        path = directory / name
        if path.is_file():
            config: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return config
    raise FileNotFoundError(f"{name}: not in {', '.join(str(d) for d in CONFIG_DIRS)}")


def job_for(record: Mapping[str, Any]) -> Job:
    """The engine's job for a measured case.

    Full fine-tuning was measured as the Hugging Face Trainer runs it with ``bf16=True``
    (fp32 weights under autocast): the engine's ``hf`` accounting. LoRA on a bf16 base with
    fp32 adapters is the engine's ``lora`` method as it stands. QLoRA was measured as PEFT's
    recipe runs it (prepare_model_for_kbit_training, mixed precision): the engine's ``qlora``
    with the hf preset; the bitsandbytes < 0.43.2 emulation with ``bnb_saves_inputs``.
    """
    common: dict[str, Any] = {
        "batch_size": int(record["b"]),
        "seq_len": int(record["s"]),
        "attention": record["attention"],
        "gradient_checkpointing": bool(record["checkpointing"]),
    }
    if record["method"] == "full":
        return Job(method="full", accounting="hf", **common)
    lora = record["lora"]
    targets = lora["targets"]
    if record["method"] == "qlora":
        quant = record["quant"]
        common["quant"] = "nf4-dq" if quant["double_quant"] else "nf4"
        common["bnb_saves_inputs"] = bool(quant.get("saves_inputs", False))
    return Job(
        method=record["method"],
        lora_rank=int(lora["r"]),
        lora_targets=targets if isinstance(targets, str) else tuple(targets),
        lora_dropout=float(lora["dropout"]),
        **common,
    )


def estimated_bytes(shape: ModelShape, job: Job) -> int:
    """Weights + adapter + gradients + optimizer + activations: the breakdown less overhead."""
    breakdown = estimate(shape, job, (), with_levers=False).per_gpu_bytes
    return breakdown.total - breakdown.overhead


def compare(grid: Mapping[str, Any]) -> list[CaseComparison]:
    shapes: dict[str, ModelShape] = {}
    rows = []
    for record in grid["cases"]:
        name = str(record["config"])
        if name not in shapes:
            shapes[name] = parse_config(config_for(record))
        rows.append(
            CaseComparison(
                case=str(record["id"]),
                model=name,
                method=str(record["method"]),
                batch=int(record["b"]),
                seq=int(record["s"]),
                attention=str(record["attention"]),
                checkpointing=bool(record["checkpointing"]),
                mode=str(record["mode"]),
                measured_bytes=int(record["peak_bytes"]),
                estimated_bytes=estimated_bytes(shapes[name], job_for(record)),
            )
        )
    return rows


def summary(rows: Sequence[CaseComparison]) -> dict[str, Any]:
    errors = [abs(row.error) for row in rows]
    return {
        "cases": len(rows),
        "fake_mode_cases": sum(row.mode == "fake" for row in rows),
        "median_abs_error_pct": round(100 * statistics.median(errors), 2),
        "max_abs_error_pct": round(100 * max(errors), 2),
        "within_10_pct": sum(error <= MAX_ABS_ERROR for error in errors),
    }


def _row(row: CaseComparison) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "case": row.case,
        "model": row.model,
        "method": row.method,
        "batch": row.batch,
        "seq": row.seq,
        "attention": row.attention,
        "checkpointing": row.checkpointing,
        "mode": row.mode,
        "measured_gib": round(row.measured_bytes / GIB, 3),
        "estimated_gib": round(row.estimated_bytes / GIB, 3),
        "error_pct": round(100 * row.error, 2),
    }
    if row.case in CPU_ONLY_CASES:
        entry["not_held_to_target"] = CPU_ONLY_CASES[row.case]
    return entry


def heldout_document(
    grid: Mapping[str, Any], rows: Sequence[CaseComparison]
) -> dict[str, Any]:
    held = [row for row in rows if row.case not in CPU_ONLY_CASES]
    return {
        "grid": str(HELDOUT_PATH.relative_to(ROOT)),
        "grid_command": grid.get("command"),
        "summary": summary(held),
        "not_held_to_target": len(rows) - len(held),
        "rows": [_row(row) for row in rows],
    }


def accuracy_document(
    grid: Mapping[str, Any], rows: Sequence[CaseComparison],
    heldout: Mapping[str, Any] | None = None, heldout_rows: Sequence[CaseComparison] = (),
) -> dict[str, Any]:
    """What ``app/web/published/accuracy.json`` holds and the "How we calculate" page renders."""
    document = {
        "engine_version": ENGINE_VERSION,
        "grid": str(GRID_PATH.relative_to(ROOT)),
        "grid_command": grid.get("command"),
        "measured_with": grid.get("versions"),
        "measured": "peak bytes of live tensors (torch MemTracker), CPU, real and FakeTensor mode",
        "qlora_grid": grid.get("qlora_grid"),
        "summary": summary(rows),
        "rows": [_row(row) for row in rows],
    }
    if heldout is not None:
        document["heldout"] = heldout_document(heldout, heldout_rows)
    return document


def readme_block(document: Mapping[str, Any]) -> str:
    """docs/accuracy.md's accuracy summary and per-case table (between the two markers)."""
    stats = document["summary"]
    lines = [
        README_START,
        f"{stats['cases']} cases ({stats['fake_mode_cases']} in FakeTensor mode, "
        f"{sum(row['method'] == 'qlora' for row in document['rows'])} real bitsandbytes QLoRA "
        f"steps, engine {document['engine_version']}): median absolute error "
        f"**{stats['median_abs_error_pct']} %**, maximum **{stats['max_abs_error_pct']} %**, "
        f"{stats['within_10_pct']} of {stats['cases']} within 10 %.",
    ]
    heldout = document.get("heldout")
    if heldout:
        held = heldout["summary"]
        lines += [
            "",
            f"Held out (measured after tuning; Qwen2 with biases and tied embeddings, Mistral, "
            f"Qwen3-MoE, GPT-2, and real Qwen2.5 7B, Mistral 7B and Llama 3.2 3B shapes): "
            f"{held['cases']} cases, median **{held['median_abs_error_pct']} %**, maximum "
            f"**{held['max_abs_error_pct']} %**; {heldout['not_held_to_target']} more measure "
            "a CPU artefact (GPT-2's attention dropout under SDPA runs the math kernel on a "
            "CPU) and are listed, not held to the target.",
        ]
    if document.get("h200"):
        lines += ["", *h200.markdown_block(document["h200"])]
    if document.get("h200_heldout"):
        lines += ["", *h200.heldout_markdown_block(document["h200_heldout"])]
    lines += [
        "",
        "<details><summary>Every case</summary>",
        "",
        "| case | measured GiB | estimated GiB | error % |",
        "|---|---:|---:|---:|",
    ]
    all_rows = list(document["rows"]) + list((heldout or {}).get("rows", []))
    lines += [
        f"| `{row['case']}`{' (held out)' if row in (heldout or {}).get('rows', []) else ''}"
        f"{' †' if 'not_held_to_target' in row else ''} | {row['measured_gib']} | "
        f"{row['estimated_gib']} | {row['error_pct']:+.2f} |"
        for row in all_rows
    ]
    lines += ["", "† a CPU artefact, not held to the target (see above).", "", "</details>",
              README_END]
    return "\n".join(lines)


def readme_with_block(readme: str, block: str) -> str:
    start = readme.index(README_START)
    end = readme.index(README_END) + len(README_END)
    return readme[:start] + block + readme[end:]


def write_json(document: Mapping[str, Any], path: Path = ACCURACY_JSON) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


def write_plot(
    rows: Sequence[CaseComparison], path: Path = ACCURACY_PNG,
    heldout_rows: Sequence[CaseComparison] = (),
) -> None:
    """Estimate against measurement on log axes, one marker per method and mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 5.6), dpi=100)
    styles = {
        ("full", "real"): ("o", "#1f5fa8"), ("full", "fake"): ("s", "#7aa7dd"),
        ("lora", "real"): ("^", "#b5461b"), ("lora", "fake"): ("D", "#e69a6d"),
        ("qlora", "real"): ("v", "#6b3fa0"),
    }
    for (method, mode), (marker, colour) in styles.items():
        chosen = [r for r in rows if r.method == method and r.mode == mode]
        if chosen:
            axes.scatter(
                [r.measured_bytes / GIB for r in chosen],
                [r.estimated_bytes / GIB for r in chosen],
                marker=marker, color=colour, label=f"{method}, {mode} ({len(chosen)})", s=28,
            )
    if heldout_rows:
        axes.scatter(
            [r.measured_bytes / GIB for r in heldout_rows],
            [r.estimated_bytes / GIB for r in heldout_rows],
            marker="o", facecolors="none", edgecolors="#2a7f3f", s=60, linewidths=1.2,
            label=f"held out ({len(heldout_rows)})",
        )
    everything = [*rows, *heldout_rows]
    low = min(min(r.measured_bytes, r.estimated_bytes) for r in everything) / GIB / 1.3
    high = max(max(r.measured_bytes, r.estimated_bytes) for r in everything) / GIB * 1.3
    axes.plot([low, high], [low, high], color="#444", linewidth=1, label="estimate = measured")
    axes.fill_between([low, high], [low * 0.9, high * 0.9], [low * 1.1, high * 1.1],
                      color="#999", alpha=0.15, label="±10 %")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_ylim(low, high)
    axes.set_xlabel("measured peak of live tensors (GiB)")
    axes.set_ylabel("engine estimate (GiB)")
    stats = summary(rows)
    axes.set_title(
        f"{stats['cases']} cases: median |error| {stats['median_abs_error_pct']} %, "
        f"max {stats['max_abs_error_pct']} %", fontsize=10,
    )
    axes.legend(fontsize=8, loc="upper left")
    axes.grid(True, which="both", alpha=0.2)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, metadata={"Software": None})
    plt.close(figure)


def published_document() -> tuple[dict[str, Any], list[CaseComparison], list[CaseComparison]]:
    """The document from the committed grids, and the rows of both."""
    grid = load_grid()
    rows = compare(grid)
    heldout = load_grid(HELDOUT_PATH) if HELDOUT_PATH.is_file() else None
    heldout_rows = compare(heldout) if heldout is not None else []
    document = accuracy_document(grid, rows, heldout, heldout_rows)
    steps = h200.load_steps()
    document["h200"] = h200.document(steps, h200.compare(steps))
    if h200.HELDOUT_PATH.is_file():
        document["h200_heldout"] = h200.heldout_document(h200.load_steps(h200.HELDOUT_PATH))
    return document, rows, heldout_rows


def main() -> int:
    document, rows, heldout_rows = published_document()
    write_json(document)
    ACCURACY_PAGE.write_text(
        readme_with_block(ACCURACY_PAGE.read_text(encoding="utf-8"), readme_block(document)),
        encoding="utf-8",
    )
    write_plot(rows, heldout_rows=heldout_rows)
    stats = document["summary"]
    print(json.dumps(stats))
    return 0 if stats["within_10_pct"] == stats["cases"] else 1
