"""The CUDA context by PyTorch and CUDA version: a sourced table, and the engine sizes with the
row named current (issue 28, point 1).

``app/engine/overhead.py``'s ``CUDA_CONTEXTS`` states what the device held outside the caching
allocator on each stack, the card it was seen on and the source; the page and docs/accuracy.md
show every row.
"""

from __future__ import annotations

import re
from pathlib import Path

from app.engine import Job, estimate, overhead
from tests.engine.reference import reference_shape
from tools.calibrate.external import reserved

ROOT = Path(__file__).resolve().parents[2]
ACCURACY_MD = ROOT / "docs" / "accuracy.md"
TABLE_ROW = re.compile(r"^\| `([\w-]+)` \|(.*)\|$", re.MULTILINE)


def test_every_row_is_sourced_and_named_once() -> None:
    keys = [row.key for row in overhead.CUDA_CONTEXTS]
    assert len(keys) == len(set(keys))
    for row in overhead.CUDA_CONTEXTS:
        assert row.bytes > 0 and row.cuda and row.source, row.key
        assert row.loading in {"lazy", "eager"}, row.key


def test_the_engine_sizes_with_the_row_named_current() -> None:
    """One GPU: the fixed overhead is the current row's context, nothing else."""
    current = overhead.cuda_context(overhead.CURRENT_CONTEXT)
    assert overhead.cuda_context() == current
    assert current.bytes == overhead.CUDA_CONTEXT_BYTES
    assert overhead.fixed_overhead_bytes(1) == current.bytes
    assert f"PyTorch {current.pytorch}, CUDA {current.cuda}" == overhead.CUDA_CONTEXT_STACK


def test_an_estimate_adds_the_current_context_to_what_is_reserved() -> None:
    result = estimate(reference_shape("llama-3.1-8b"), Job(method="lora", batch_size=1,
                      seq_len=512), [], with_levers=False)
    assert result.per_gpu_bytes.total - result.reserved_bytes == overhead.cuda_context().bytes


def test_the_published_runs_take_their_own_stack_s_row() -> None:
    """tools/calibrate/external/reserved.py takes the published runs' context off their
    nvidia-smi figures, not the context the engine sizes with."""
    pair = next(p for p in reserved.pairs() if p.includes_context and not p.fsdp)
    context = overhead.cuda_context(overhead.PUBLISHED_RUNS_CONTEXT).bytes
    dynamic = pair.allocated_bytes - pair.resident_bytes
    assert pair.ratio == (pair.reserved_bytes - pair.allocated_bytes - context) / dynamic


def test_the_lazy_stacks_hold_less_than_the_eager_ones() -> None:
    """What the sources measured: lazy module loading (CUDA 11.7+, PyTorch's default since
    1.13) against eager loading on the same build, and before CUDA 11.7."""
    by_key = {row.key: row for row in overhead.CUDA_CONTEXTS}
    assert by_key["lazy-bare"].bytes < by_key["eager-bare"].bytes < by_key["eager-cuda"].bytes


def test_docs_accuracy_shows_every_row_with_its_figure() -> None:
    shown = {key: cells for key, cells in TABLE_ROW.findall(ACCURACY_MD.read_text("utf-8"))}
    for row in overhead.CUDA_CONTEXTS:
        assert row.key in shown, row.key
        assert f"{round(row.bytes / overhead.MIB):,} MiB" in shown[row.key], row.key
