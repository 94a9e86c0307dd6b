"""fitcheck-llm on the same published figures, for the side-by-side of issue 15 point 6.

fitcheck-llm (PyPI) is run as a black box through its CLI (``fitcheck MODEL --json``); none
of its code is used here. It reads ``config.json`` through the Hugging Face hub cache, so each
figure's config is placed in a private ``HF_HOME`` as the cached snapshot of its ``hf_id`` and
the CLI runs with ``HF_HUB_OFFLINE=1``: nothing is downloaded.

What it is given: the figure's method, rank, targets, quantisation (``--double-quant`` for
nf4-dq), micro-batch, sequence, checkpointing, flash attention for flash/SDPA, AdamW or 8-bit
Adam, bf16 compute, and bf16 optimizer states where the run trained in pure bf16 (its
``--optimizer-dtype bf16``, a setting our engine cannot yet express). It prices one GPU,
so sharded runs are skipped (data-parallel runs without sharding are priced as one GPU). Its
``memory_mib.total`` is compared with reserved / nvidia-smi / capacity counters and
``total - overhead`` (its tensors without context and fragmentation) with allocated
counters, the same split as our engine's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

MIB = 2**20
# The card passed to fitcheck: large enough that no figure is refused for size (the verdict
# is not compared, only the bytes).
UNBOUNDED_VRAM_MIB = 1_000_000
# One CLI run takes about a second; a stuck one must not hang the comparison.
TIMEOUT_S = 120
# Our preset expanded to the module names fitcheck takes.
ALL_LINEAR = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"
SNAPSHOT = "0" * 40

ADAM_8BIT = ("adamw_8bit", "paged_adamw_8bit")


def _cache(hf_home: Path, hf_id: str, config: Path) -> None:
    """Place ``config`` where huggingface_hub looks for ``hf_id``'s cached config.json."""
    repo = hf_home / "hub" / ("models--" + hf_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(SNAPSHOT)
    snapshot = repo / "snapshots" / SNAPSHOT
    snapshot.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(config, snapshot / "config.json")


def arguments(figure: dict[str, Any]) -> list[str] | str:
    """fitcheck's flags for a figure, or why it cannot price it."""
    job = figure["job"]
    if job.get("gpus", 1) > 1 and job.get("sharding", "none") != "none":
        return "sharded over several GPUs (fitcheck prices one unsharded GPU)"
    if job.get("offload", "none") != "none":
        return "offload (fitcheck has no offload)"
    args = ["--json", "--vram-mib", str(UNBOUNDED_VRAM_MIB), "--precision", "bf16",
            "--batch-size", str(job["batch_size"]), "--seq-len", str(job["seq_len"])]
    if job["method"] == "full":
        args.append("--no-lora")
    else:
        targets = job["lora_targets"]
        args += ["--lora-r", str(job["lora_rank"]),
                 "--lora-targets", ALL_LINEAR if targets == "all-linear" else ",".join(targets)]
    if job["method"] == "qlora":
        args += ["--quant", "nf4"] + (["--double-quant"] if job.get("quant") == "nf4-dq" else [])
    if job.get("gradient_checkpointing"):
        args.append("--grad-checkpoint")
    if job.get("attention", "flash") in ("flash", "sdpa"):
        args.append("--flash-attn")
    args += ["--optimizer", "adam8bit" if job.get("optimizer") in ADAM_8BIT else "adamw"]
    if figure.get("precision_mode") == "pure-bf16" and job.get("optimizer") not in ADAM_8BIT:
        args += ["--optimizer-dtype", "bf16"]
    return args


def fitcheck_bytes(exe: str, figure: dict[str, Any], config: Path, hf_home: Path,
                   allocated: bool) -> tuple[int | None, str | None]:
    """fitcheck's figure in bytes for this case, or None and the reason."""
    args = arguments(figure)
    if isinstance(args, str):
        return None, args
    _cache(hf_home, figure["hf_id"], config)
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([exe, figure["hf_id"], *args], capture_output=True, text=True,
                          env=env, timeout=TIMEOUT_S, check=False)
    try:
        memory = json.loads(done.stdout)["memory_mib"]
    except (ValueError, KeyError):
        return None, "fitcheck: " + (done.stderr.strip().splitlines() or ["no output"])[-1]
    mib = memory["total"] - memory["overhead"] if allocated else memory["total"]
    return round(mib * MIB), None
