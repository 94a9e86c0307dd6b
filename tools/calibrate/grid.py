"""The calibration grid: which training steps are measured, and the runner that records them.

Three kinds of cases:
  * real  -- scaled-down copies of the reference architectures (tools/calibrate/configs/), run
             for real on the CPU;
  * twin  -- a subset of those same cases again in fake mode: the fake-vs-real check
             (record["mode"] == "fake", same id stem);
  * fake  -- tiny configs at large micro-batch x sequence, and the real model shapes
             (Llama 3.1 8B, Qwen3-32B, Llama 3.3 70B) under FakeTensorMode.

The results file is rewritten after every case (so an interrupted run keeps what it measured;
``--resume`` skips ids already in the file).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CONFIGS = HERE / "configs"
REFERENCE = Path(os.environ.get("SIZER_REFERENCE_MODELS", "/work/shared/reference/models"))
DEFAULT_OUT = HERE / "results" / "cpu-grid.json"
HELDOUT_OUT = HERE / "results" / "cpu-heldout.json"
QLORA_OUT = HERE / "results" / "cpu-qlora.json"
HYBRID_OUT = HERE / "results" / "cpu-hybrid.json"
MOE_OUT = HERE / "results" / "cpu-moe.json"


def _cfg(name: str) -> str:
    """Path of a config, relative to the repo root when it is inside the repo."""
    local = CONFIGS / f"{name}.json"
    if local.exists():
        return str(local.relative_to(REPO))
    ref = REFERENCE / f"{name}.json"
    seed = REPO / "app" / "catalog" / "seed" / "models" / f"{name}.json"
    if not ref.exists() and seed.exists():
        return str(seed.relative_to(REPO))
    return str(ref)


def _c(
    cfg: str,
    method: str,
    b: int,
    s: int,
    attention: str = "sdpa",
    gc: bool = False,
    mode: str = "real",
    r: int = 16,
    targets: str | list[str] = "all-linear",
    dropout: float = 0.0,
    quant: str = "nf4-dq",
    saves_inputs: bool = False,
) -> dict[str, Any]:
    d: dict[str, Any] = {
        "config": _cfg(cfg),
        "method": method,
        "b": b,
        "s": s,
        "attention": attention,
        "checkpointing": gc,
        "mode": mode,
    }
    if method in ("lora", "qlora"):
        d.update({"lora_r": r, "lora_targets": targets, "lora_dropout": dropout})
    if method == "qlora":
        d["quant"] = quant
        if saves_inputs:
            d["bnb_saves_inputs"] = True
    return d


def real_cases() -> list[dict[str, Any]]:
    L, Q, G, P, M = "tiny-llama", "tiny-qwen3", "tiny-gemma2", "tiny-phi3", "tiny-mixtral"
    return [
        # Llama (GQA, 128256 vocabulary): full fine-tuning
        _c(L, "full", 1, 256),
        _c(L, "full", 2, 512),
        _c(L, "full", 4, 256),
        _c(L, "full", 2, 256, gc=True),
        _c(L, "full", 1, 2048, gc=True),
        _c(L, "full", 1, 1024, attention="eager"),
        _c(L, "full", 2, 256, attention="eager", gc=True),
        # Llama LoRA
        _c(L, "lora", 1, 512),
        _c(L, "lora", 4, 256),
        _c(L, "lora", 1, 1024),
        _c(L, "lora", 2, 512, dropout=0.05),
        _c(L, "lora", 2, 512, dropout=0.05, gc=True),
        _c(L, "lora", 1, 1024, attention="eager", dropout=0.05),
        _c(L, "lora", 8, 256, dropout=0.05, gc=True),
        _c(L, "lora", 2, 512, r=64, targets=["q_proj", "v_proj"], dropout=0.05),
        _c(L, "lora", 1, 512, r=8, targets=["q_proj", "k_proj", "v_proj", "o_proj"]),
        # Qwen3 (q/k norm, explicit head_dim)
        _c(Q, "full", 2, 512),
        _c(Q, "full", 1, 1024, gc=True),
        _c(Q, "lora", 2, 256),
        _c(Q, "lora", 1, 1024, attention="eager", dropout=0.05),
        _c(Q, "lora", 4, 256, dropout=0.05, gc=True),
        # Gemma 2 (tied, explicit head_dim, soft-capping: transformers supports eager only)
        _c(G, "full", 2, 512, attention="eager"),
        _c(G, "full", 1, 1024, attention="eager", gc=True),
        _c(G, "lora", 2, 512, attention="eager"),
        _c(G, "lora", 1, 1024, attention="eager", dropout=0.05, gc=True),
        _c(G, "lora", 4, 256, attention="eager", dropout=0.05),
        # Phi-3 (fused qkv_proj / gate_up_proj)
        _c(P, "full", 2, 512),
        _c(P, "full", 1, 1024, attention="eager", gc=True),
        _c(P, "lora", 2, 512, dropout=0.05),
        _c(P, "lora", 8, 256, gc=True),
        _c(P, "lora", 1, 2048, attention="eager"),
        _c(P, "lora", 1, 4096, dropout=0.05, gc=True),
        _c(P, "full", 1, 4096, gc=True),
        # Mixtral (mixture of experts; PEFT's fused-expert LoRA needs dropout 0)
        _c(M, "full", 2, 256),
        _c(M, "full", 1, 512, gc=True),
        _c(M, "lora", 2, 512),
        _c(M, "lora", 1, 1024, gc=True),
    ]


# Real cases repeated in fake mode: the fake-vs-real check (every architecture that runs fake).
TWIN_IDS = [
    "tiny-llama_full_b2_s512_sdpa_nogc",
    "tiny-llama_full_b1_s1024_eager_nogc",
    "tiny-llama_full_b1_s2048_sdpa_gc",
    "tiny-llama_lora_r16-all-linear-do0.05_b2_s512_sdpa_gc",
    "tiny-llama_lora_r64-q_proj+v_proj-do0.05_b2_s512_sdpa_nogc",
    "tiny-qwen3_full_b2_s512_sdpa_nogc",
    "tiny-qwen3_lora_r16-all-linear-do0.05_b1_s1024_eager_nogc",
    "tiny-gemma2_full_b2_s512_eager_nogc",
    "tiny-gemma2_lora_r16-all-linear-do0.05_b1_s1024_eager_gc",
    "tiny-phi3_lora_r16-all-linear-do0.05_b2_s512_sdpa_nogc",
    "tiny-phi3_full_b1_s1024_eager_gc",
    "tiny-phi3_full_b1_s4096_sdpa_gc",
]


def fake_cases() -> list[dict[str, Any]]:
    L, Q, G, P = "tiny-llama", "tiny-qwen3", "tiny-gemma2", "tiny-phi3"
    small_big = [  # tiny configs at micro-batch x sequence too large to run for real here
        _c(L, "full", 8, 4096, gc=True, mode="fake"),
        _c(L, "lora", 8, 2048, dropout=0.05, mode="fake"),
        _c(L, "lora", 4, 4096, gc=True, mode="fake"),
        _c(Q, "full", 8, 2048, gc=True, mode="fake"),
        _c(G, "lora", 2, 4096, attention="eager", gc=True, mode="fake"),
        _c(P, "full", 4, 4096, attention="eager", mode="fake"),
    ]
    l8, q32, l70 = "llama-3.1-8b", "qwen3-32b", "llama-3.3-70b"
    real_shapes = [
        _c(l8, "full", 1, 2048, mode="fake"),
        _c(l8, "full", 1, 2048, gc=True, mode="fake"),
        _c(l8, "full", 4, 1024, mode="fake"),
        _c(l8, "full", 2, 4096, gc=True, mode="fake"),
        _c(l8, "full", 1, 2048, attention="eager", gc=True, mode="fake"),
        _c(l8, "lora", 1, 2048, dropout=0.05, mode="fake"),
        _c(l8, "lora", 1, 2048, dropout=0.05, gc=True, mode="fake"),
        _c(l8, "lora", 1, 1024, mode="fake"),
        _c(l8, "lora", 4, 2048, dropout=0.05, gc=True, mode="fake"),
        _c(l8, "lora", 2, 4096, gc=True, mode="fake"),
        _c(q32, "lora", 1, 2048, dropout=0.05, gc=True, mode="fake"),
        _c(q32, "lora", 1, 4096, gc=True, mode="fake"),
        _c(q32, "lora", 2, 1024, mode="fake"),
        _c(l70, "lora", 1, 2048, dropout=0.05, gc=True, mode="fake"),
        _c(l70, "lora", 1, 4096, gc=True, mode="fake"),
        _c(l70, "lora", 2, 1024, mode="fake"),
    ]
    return small_big + real_shapes


def heldout_cases() -> list[dict[str, Any]]:
    """Architectures and shapes that no engine constant was set from (results/cpu-heldout.json):
    run once after the engine was tuned on the main grid, so their error is an honest guess
    of the error on models we have not measured."""
    Q2, MI, QM, G2 = "tiny-qwen2", "tiny-mistral", "tiny-qwen3moe", "tiny-gpt2"
    return [
        _c(Q2, "full", 2, 512),
        _c(Q2, "full", 1, 1024, gc=True),
        _c(Q2, "lora", 2, 512, dropout=0.05),
        _c(Q2, "lora", 1, 1024, attention="eager", gc=True),
        _c(MI, "full", 2, 512, attention="eager"),
        _c(MI, "lora", 4, 256, dropout=0.05, gc=True),
        _c(MI, "lora", 1, 2048),
        _c(QM, "full", 2, 256),
        _c(QM, "lora", 2, 512),
        _c(QM, "lora", 1, 1024, gc=True),
        _c(G2, "full", 2, 512),
        _c(G2, "full", 1, 1024, gc=True),
        _c(G2, "lora", 2, 512, dropout=0.05),
        _c(G2, "lora", 1, 1024, attention="eager"),
        _c("tiny-gpt2-noattndrop", "full", 2, 512),
        _c("tiny-gpt2-noattndrop", "lora", 2, 512, dropout=0.05),
        _c("qwen2.5-7b", "full", 1, 2048, gc=True, mode="fake"),
        _c("qwen2.5-7b", "lora", 2, 2048, dropout=0.05, mode="fake"),
        _c("mistral-7b-v0.3", "lora", 1, 4096, gc=True, mode="fake"),
        _c("llama-3.2-3b", "full", 2, 2048, mode="fake"),
    ]


def qlora_cases() -> list[dict[str, Any]]:
    """Real bitsandbytes QLoRA steps (results/cpu-qlora.json): nf4 with and without double
    quantisation, checkpointing on and off, eager and SDPA, on the tiny configs and on the real
    shape of Llama 3.2 1B (the largest that runs in real mode here: quantising its 1 B linear
    weights on one CPU thread takes most of its four minutes)."""
    L, Q, G, P = "tiny-llama", "tiny-qwen3", "tiny-gemma2", "tiny-phi3"
    q = "qlora"
    return [
        _c(L, q, 1, 512),
        _c(L, q, 1, 512, quant="nf4"),
        _c(L, q, 2, 512, dropout=0.05),
        _c(L, q, 2, 512, dropout=0.05, gc=True),
        _c(L, q, 2, 512, dropout=0.05, gc=True, quant="nf4"),
        _c(L, q, 1, 1024, attention="eager", dropout=0.05),
        _c(L, q, 4, 256, r=64, targets=["q_proj", "v_proj"]),
        _c(Q, q, 2, 256),
        _c(Q, q, 2, 512, dropout=0.05, gc=True),
        _c(G, q, 2, 512, attention="eager", dropout=0.05),
        _c(G, q, 1, 1024, attention="eager", gc=True, quant="nf4"),
        _c(P, q, 2, 512, dropout=0.05),
        _c(P, q, 1, 1024, gc=True),
        # bitsandbytes < 0.43.2 kept every 4-bit layer's input (harness.bnb_saves_inputs_emulation)
        _c(L, q, 2, 512, dropout=0.05, saves_inputs=True),
        _c(L, q, 2, 512, dropout=0.05, gc=True, saves_inputs=True),
        _c(Q, q, 2, 256, saves_inputs=True),
        _c("llama-3.2-1b", q, 1, 256, gc=True),
        _c("llama-3.2-1b", q, 1, 256, dropout=0.05),
    ]


def hybrid_cases() -> list[dict[str, Any]]:
    """Layers that are not attention (results/cpu-hybrid.json, issue 16): Gated DeltaNet
    (Qwen3-Next with experts, Qwen3.5 dense) and Mamba-2 (Nemotron-H; Granite 4.0 H and
    Falcon-H1, two norms a layer, issue 29), full fine-tuning and
    LoRA, with and without checkpointing, at two lengths. transformers' torch paths run here
    (no flash-linear-attention or mamba_ssm kernels on a CPU)."""
    QN, Q5, NH = "tiny-qwen3next", "tiny-qwen35", "tiny-nemotronh"
    GH, FH = "tiny-granitehybrid", "tiny-falconh1"
    cases = []
    # PEFT refuses "all-linear" on Nemotron-H and Falcon-H1 (a Mamba block's out_proj): every
    # other linear. Granite 4.0 H is not on PEFT's Mamba list: all-linear.
    nemotron_targets = ["in_proj", "q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj"]
    falcon_targets = ["in_proj", "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                      "down_proj"]
    for cfg in (QN, Q5, NH, GH, FH):
        targets: str | list[str] = (nemotron_targets if cfg == NH else falcon_targets
                                    if cfg == FH else "all-linear")
        cases += [
            _c(cfg, "full", 1, 512),
            _c(cfg, "full", 2, 1024),
            _c(cfg, "full", 1, 1024, gc=True),
            _c(cfg, "lora", 1, 512, targets=targets),
            _c(cfg, "lora", 2, 1024, targets=targets),
            _c(cfg, "lora", 1, 2048, gc=True, targets=targets),
        ]
    # Falcon-H1 without the mixer's gated RMSNorm (mamba_rms_norm false, its config's default).
    cases += [_c(f"{FH}-nonorm", "full", 2, 1024),
              _c(f"{FH}-nonorm", "lora", 2, 1024, targets=falcon_targets)]
    return cases


def moe_cases() -> list[dict[str, Any]]:
    """Mixtures of experts and their attention kinds (results/cpu-moe.json, issue 16): QLoRA and
    LoRA on a Qwen3-MoE whose experts dominate (fused experts stay 16-bit under
    ``load_in_4bit``; PEFT merges each adapted expert tensor with its adapter), DeepSeek-V3's
    multi-head latent attention at 3 and 5 layers, and gpt-oss's attention sinks with sliding
    and full layers. Both with eager attention: transformers offers gpt-oss no SDPA path (and
    OpenAI's fine-tuning recipe loads it eager); MLA's value heads are narrower than its
    query/key heads, which PyTorch's CPU flash kernel refuses, so SDPA on a CPU falls back to
    the math kernel and keeps the score matrix, which a GPU's memory-efficient kernel does
    not. Eager keeps the same tensors on either device."""
    QE, DS, DS5, GO = ("tiny-qwen3moe-experts", "tiny-deepseekv3", "tiny-deepseekv3-5l",
                       "tiny-gptoss")
    cases = [
        _c(QE, "qlora", 2, 256),
        _c(QE, "qlora", 2, 256, gc=True),
        _c(QE, "lora", 2, 256),
        _c(QE, "lora", 2, 256, gc=True),
    ]
    for cfg in (DS, GO):
        attention = "eager"
        cases += [
            _c(cfg, "full", 1, 512, attention=attention),
            _c(cfg, "full", 2, 1024, attention=attention),
            _c(cfg, "full", 1, 1024, attention=attention, gc=True),
            _c(cfg, "lora", 1, 512, attention=attention),
            _c(cfg, "lora", 2, 1024, attention=attention),
            _c(cfg, "lora", 1, 2048, attention=attention, gc=True),
        ]
    cases += [_c(DS5, "full", 1, 512, attention="eager"),
              _c(DS5, "lora", 1, 512, attention="eager")]
    return cases


def moe_grid() -> list[dict[str, Any]]:
    return _with_ids(moe_cases())


def _with_ids(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from .harness import Case

    for c in cases:
        c["id"] = Case(**c).default_id()
    return cases


def hybrid_grid() -> list[dict[str, Any]]:
    return _with_ids(hybrid_cases())


def qlora_grid() -> list[dict[str, Any]]:
    return _with_ids(qlora_cases())


def heldout_grid() -> list[dict[str, Any]]:
    return _with_ids(heldout_cases())


def all_cases() -> list[dict[str, Any]]:
    from .harness import Case

    real = real_cases()
    by_stem = {Case(**c).default_id().rsplit("_", 1)[0]: c for c in real}
    missing = [t for t in TWIN_IDS if t not in by_stem]
    if missing:
        raise ValueError(f"twin ids not in the real grid: {missing}")
    twins = [{**by_stem[t], "mode": "fake"} for t in TWIN_IDS]
    cases = real + twins + fake_cases()
    for c in cases:
        c["id"] = Case(**c).default_id()
    ids = [c["id"] for c in cases]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate case ids in the grid")
    return cases


def fake_vs_real(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {r["id"]: r for r in records}
    out = []
    for r in records:
        if r["mode"] != "real":
            continue
        twin = by_id.get(r["id"].rsplit("_", 1)[0] + "_fake")
        if twin is None:
            continue
        out.append(
            {
                "case": r["id"].rsplit("_", 1)[0],
                "real_peak_bytes": r["peak_bytes"],
                "fake_peak_bytes": twin["peak_bytes"],
                "peak_equal": r["peak_bytes"] == twin["peak_bytes"],
                "phase_peaks_equal": r["phase_peaks"] == twin["phase_peaks"],
                "split_equal": r["split_at_peak"] == twin["split_at_peak"],
            }
        )
    return out


def _write(path: Path, doc: dict[str, Any]) -> None:
    doc["fake_vs_real"] = fake_vs_real(doc["cases"])
    counts = {
        "cases": len(doc["cases"]),
        "real": sum(r["mode"] == "real" for r in doc["cases"]),
        "fake": sum(r["mode"] == "fake" for r in doc["cases"]),
        "fake_real_shapes": sum(
            r["mode"] == "fake" and not r["config"].startswith("tiny-") for r in doc["cases"]
        ),
        "failures": len(doc["failures"]),
    }
    doc["counts"] = counts
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)


def run_grid(
    out: Path,
    command: str,
    only: str | None = None,
    resume: bool = False,
    limit: int | None = None,
    heldout: bool = False,
    qlora: bool = False,
    hybrid: bool = False,
    moe: bool = False,
) -> dict[str, Any]:
    import torch

    from .harness import Case, _versions, run_case, summarize

    torch.set_num_threads(1)
    cases = (heldout_grid() if heldout else qlora_grid() if qlora
             else hybrid_grid() if hybrid else moe_grid() if moe else all_cases())
    if only:
        cases = [c for c in cases if re.search(only, c["id"])]
    if limit is not None:
        cases = cases[:limit]
    doc: dict[str, Any] = {
        "about": (
            "One steady-state Hugging Face training step per case (forward with labels, "
            "backward, clip_grad_norm_(1.0), AdamW step, zero_grad(set_to_none=True)), "
            "peak bytes of live tensors from torch.distributed._tools.mem_tracker.MemTracker. "
            "See tools/calibrate/README.md."
        ),
        "command": command,
        "versions": _versions(bitsandbytes=qlora or moe),
        "torch_threads": 1,
        "cases": [],
        "failures": [],
    }
    if resume and out.exists():
        old = json.loads(out.read_text())
        doc["cases"] = old.get("cases", [])
        if old.get("command") and old["command"] != command:
            doc["resumed_from_command"] = old["command"]
    done = {r["id"] for r in doc["cases"]}
    out.parent.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    for i, c in enumerate(cases, 1):
        if c["id"] in done:
            continue
        try:
            rec = run_case(Case(**c))
            doc["cases"].append(rec)
            print(f"[{i}/{len(cases)}] {summarize(rec)}", flush=True)
        except Exception as e:  # keep going; the failure is recorded
            doc["failures"].append(
                {
                    "id": c["id"],
                    "case": c,
                    "error": repr(e)[:2000],
                    "traceback": traceback.format_exc(limit=-4)[-4000:],
                }
            )
            print(f"[{i}/{len(cases)}] FAILED {c['id']}: {e!r}"[:500], file=sys.stderr, flush=True)
        doc["seconds_total"] = round(time.perf_counter() - t_all, 1)
        _write(out, doc)
    doc["seconds_total"] = round(time.perf_counter() - t_all, 1)
    _write(out, doc)
    return doc
