"""Command line: ``python -m tools.calibrate {run,grid,list} ...`` (run from the repo root)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path


def _targets(value: str) -> str | list[str]:
    if value == "all-linear":
        return value
    return [t for t in value.split(",") if t]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python -m tools.calibrate", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="measure one training step and print its JSON record")
    r.add_argument("--config", required=True, help="path to a Hugging Face config.json")
    r.add_argument("--method", choices=["full", "lora", "qlora"], default="full")
    r.add_argument(
        "--quant", choices=["nf4", "nf4-dq"], default="nf4-dq",
        help="qlora: nf4, or nf4 with double quantisation (bitsandbytes, bf16 compute dtype)",
    )
    r.add_argument("--lora-r", type=int, default=16)
    r.add_argument(
        "--lora-targets",
        type=_targets,
        default="all-linear",
        help="'all-linear' or a comma-separated list of module names",
    )
    r.add_argument("--lora-dropout", type=float, default=0.0)
    r.add_argument(
        "--bnb-saves-inputs", action="store_true",
        help="qlora: keep each 4-bit layer's input for the backward, as bitsandbytes < 0.43.2",
    )
    r.add_argument("-b", "--micro-batch", dest="b", type=int, default=1)
    r.add_argument("-s", "--seq", dest="s", type=int, default=512)
    r.add_argument("--attention", choices=["eager", "sdpa"], default="sdpa")
    r.add_argument(
        "--checkpointing", action="store_true", help="non-reentrant gradient checkpointing"
    )
    r.add_argument("--mode", choices=["real", "fake"], default="real")
    r.add_argument("--optimizer", choices=["auto", "fused", "foreach"], default="auto")
    r.add_argument("--dropout-routing", choices=["native", "none"], default="native")
    r.add_argument("--device", default="auto", help="auto | cpu | cuda")
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--out", type=Path, help="also write the record here")

    g = sub.add_parser("grid", help="run the calibration grid (results written after each case)")
    g.add_argument("--out", type=Path, default=None)
    g.add_argument("--only", help="regular expression on case ids")
    g.add_argument("--resume", action="store_true", help="skip ids already in --out")
    g.add_argument("--limit", type=int)
    g.add_argument(
        "--heldout", action="store_true",
        help="the held-out grid (architectures no constant was set from) -> cpu-heldout.json",
    )
    g.add_argument(
        "--qlora", action="store_true",
        help="real bitsandbytes QLoRA steps (needs bitsandbytes) -> cpu-qlora.json",
    )
    g.add_argument(
        "--hybrid", action="store_true",
        help="Gated DeltaNet and Mamba-2 hybrids (issue 16) -> cpu-hybrid.json",
    )
    g.add_argument(
        "--moe", action="store_true",
        help="MoE QLoRA/LoRA, MLA and attention sinks (issue 16; needs bitsandbytes) "
        "-> cpu-moe.json",
    )

    sub.add_parser("list", help="print the grid's case ids")
    sub.add_parser(
        "accuracy",
        help="compare the engine with the committed grid; write "
        "app/web/published/accuracy.json and app/static/img/accuracy.png "
        "(needs matplotlib, not torch)",
    )

    a = p.parse_args(argv)
    if a.cmd == "accuracy":
        from .accuracy import main as accuracy_main

        return accuracy_main()
    if a.cmd == "list":
        from .grid import all_cases

        for c in all_cases():
            print(c["id"])
        return 0

    if a.cmd == "grid":
        from .grid import DEFAULT_OUT, HELDOUT_OUT, HYBRID_OUT, MOE_OUT, QLORA_OUT, run_grid

        out = a.out or (HELDOUT_OUT if a.heldout else QLORA_OUT if a.qlora
                        else HYBRID_OUT if a.hybrid else MOE_OUT if a.moe else DEFAULT_OUT)
        command = "python -m tools.calibrate " + " ".join(shlex.quote(x) for x in argv)
        doc = run_grid(
            out, command, only=a.only, resume=a.resume, limit=a.limit, heldout=a.heldout,
            qlora=a.qlora, hybrid=a.hybrid, moe=a.moe,
        )
        fvr = doc["fake_vs_real"]
        print(
            f"{doc['counts']} in {doc['seconds_total']} s; fake==real peak on "
            f"{sum(x['peak_equal'] for x in fvr)}/{len(fvr)} pairs -> {out}"
        )
        return 1 if doc["failures"] else 0

    import torch

    from .harness import Case, run_case, summarize

    torch.set_num_threads(a.threads)
    case = Case(
        config=a.config,
        method=a.method,
        b=a.b,
        s=a.s,
        attention=a.attention,
        checkpointing=a.checkpointing,
        mode=a.mode,
        lora_r=a.lora_r,
        lora_targets=a.lora_targets,
        lora_dropout=a.lora_dropout,
        quant=a.quant,
        bnb_saves_inputs=a.bnb_saves_inputs,
        optimizer=a.optimizer,
        dropout_routing=a.dropout_routing,
        device=a.device,
    )
    rec = run_case(case)
    text = json.dumps(rec, indent=1)
    if a.out:
        a.out.write_text(text + "\n")
    print(text)
    print(summarize(rec), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
