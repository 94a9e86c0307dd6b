"""Achieved dense BF16 matmul TFLOP/s on a CUDA GPU for the linear shapes of a fine-tuning step.

The speed model (app/engine/speed.py) takes a share of the card's peak for the matmul-bound
part of a step; this measures what one card reaches for the shapes a step multiplies (m tokens
times a k -> n weight: Llama 3.1 8B's attention, MLP and head, Llama 3.2 1B's and Llama 3.3
70B's MLP, and rank-16 LoRA factors) from 256 to 32,768 tokens. It ran once on an H200 SXM
(tests/fixtures/h200_steps/gemm-h200-2026-12-04.json). Needs torch with CUDA.

Usage::

    python -m tools.calibrate.gemm_rates out.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

import torch

SHAPES: dict[str, tuple[int, int]] = {
    "l8b_qkvo": (4096, 4096), "l8b_kv": (4096, 1024), "l8b_up": (4096, 14336),
    "l8b_down": (14336, 4096), "l1b_up": (2048, 8192), "l70b_up": (8192, 28672),
    "l8b_head": (4096, 128256), "lora_a_r16": (4096, 16), "lora_b_r16": (16, 4096),
}
"""Name -> (in features k, out features n)."""
TOKENS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
WARM_UPS = 3
REPETITIONS = 20


def rate(m: int, k: int, n: int) -> dict[str, Any]:
    """One shape's mean time over REPETITIONS products after WARM_UPS, timed with CUDA events."""
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(WARM_UPS):
        a @ w
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPETITIONS):
        a @ w
    end.record()
    torch.cuda.synchronize()
    ms = float(start.elapsed_time(end)) / REPETITIONS
    tflops = 2 * m * k * n / ms / 1e9
    return {"m": m, "k": k, "n": n, "ms": round(ms, 5), "tflops": round(tflops, 1)}


def main(argv: list[str] | None = None) -> int:
    out = (argv if argv is not None else sys.argv[1:])[0]
    rows = [dict(rate(m, k, n), shape=name) for name, (k, n) in SHAPES.items() for m in TOKENS]
    document = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1)
    for row in rows:
        print(row["shape"], row["m"], row["tflops"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
