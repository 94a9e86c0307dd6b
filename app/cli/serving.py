"""``sizer serving``: which card serves a model at a context to so many users, and how fast.

The JSON it prints is the document ``POST /api/v1/serving-estimates`` returns; both come from
:func:`app.estimates.serving.serving_estimate`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from app.cli.estimate import (
    add_card_arguments,
    add_model_arguments,
    custom_memory,
    hub_choice,
    load_catalog,
    read_config,
)
from app.engine.serving import KV_DTYPES, MIN_TOKENS_PER_S, RUNTIMES, ServingResult
from app.engine.serving_weights import WEIGHT_FORMATS
from app.estimates import serving
from app.estimates.job_input import SERVING_INPUT_FIELDS, ServingJobInput
from app.estimates.service import EstimateCache
from app.estimates.serving import PUBLISHED

GB = 10**9


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `serving` command's options."""
    add_model_arguments(parser)
    parser.add_argument("--weights", choices=(PUBLISHED, *WEIGHT_FORMATS), default=PUBLISHED,
                        help="the checkpoint's format (default: published, the format its "
                        "config.json's quantization_config names, such as MXFP4 for gpt-oss "
                        "and FP8 for DeepSeek-V3; 16-bit when it names none)")
    parser.add_argument("--kv-cache", choices=KV_DTYPES, default="auto",
                        help="the KV cache's dtype (auto: the model's 16-bit dtype)")
    parser.add_argument("--context", type=int, default=8192,
                        help="tokens per request, prompt and answer (default: 8192)")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="requests served at once, each at --context (default: 1)")
    parser.add_argument("--gpus", type=int, default=1,
                        help="GPUs the model is split over, tensor parallel (default: 1)")
    parser.add_argument("--runtime", choices=RUNTIMES, default="vllm")
    parser.add_argument("--gpu-memory-utilization", type=float, default=None,
                        help="the fraction of each card the runtime may use (default: vLLM's "
                        "0.9; SGLang its own mem_fraction_static; llama.cpp the whole card)")
    parser.add_argument("--max-num-batched-tokens", type=int, default=None, metavar="N",
                        help="vLLM's prefill budget per step (default: by card size, 8192 on "
                        "cards of 70 GiB or more, else 2048)")
    parser.add_argument("--min-tokens-per-s", type=float, default=MIN_TOKENS_PER_S,
                        metavar="N", help="the speed floor: a card serves the load only if "
                        "every user decodes at least N tokens per second, and its most users "
                        "count up to it (default: 10; 0: memory alone)")
    add_card_arguments(parser)
    parser.set_defaults(func=run)


def job_input(args: argparse.Namespace) -> ServingJobInput:
    """The options of the job as the one input every surface fills (each option is the
    input field's name with dashes, :mod:`app.estimates.job_input`)."""
    return ServingJobInput.of({name: getattr(args, name) for name in SERVING_INPUT_FIELDS})


def run(args: argparse.Namespace) -> int:
    config: Mapping[str, Any] | None = (read_config(args.model_config) if args.model_config
                                         else None)
    source = load_catalog(offline=args.offline)
    slug, fetched = args.model, None
    if args.model is not None and "/" in args.model:  # a Hub repository id (hub.is_repo_id)
        choice = hub_choice(args.model, source)
        slug, config, fetched = choice.slug, choice.config, choice.hub
    job = job_input(args)
    request = serving.ServingRequest(
        job=job.job(), model_slug=slug, model_config=config, gpu_slugs=tuple(args.gpu),
        gpu_memory_bytes=custom_memory(args), published_weights=job.published,
    )
    # A DomainError (bad input, an unknown model or card) leaves here: main() prints it as one
    # line naming the field and exits 2.
    result = serving.serving_estimate(source.catalog, request, cache=EstimateCache())
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    else:
        if fetched is not None:
            print(f"{fetched.repo_id}: config.json at commit {fetched.commit_sha[:12]} "
                  "(Hugging Face Hub)")
        print(format_table(result))
    return 0


def _gb(value: int) -> str:
    return f"{value / GB:.1f}"


def _speed(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def format_table(result: ServingResult) -> str:
    """The same numbers for people: aligned, GB with one decimal."""
    b = result.per_gpu_bytes
    fidelity = " (approximate)" if result.fidelity == "approximate" else ""
    lines = [
        f"engine {result.engine_version}  {result.model_type}{fidelity}  "
        f"runtime {result.runtime}  "
        f"params {result.params.total:,}  active {result.params.active:,}",
        f"weights {result.weights}"
        + (" (as published)" if result.weights_as_published else ""),
        f"KV cache per token per GPU: {result.kv_cache_bytes_per_token:,} bytes; "
        f"per request {_gb(result.kv_cache_bytes_per_request)} GB",
        "",
        "per GPU (first card)  GB",
    ]
    for label, value in (("weights", b.weights), ("activations", b.activations),
                         ("cuda graphs", b.cuda_graphs), ("overhead", b.overhead),
                         ("kv cache", b.kv_cache), ("total", b.total)):
        lines.append(f"  {label:<17}{_gb(value):>7}")
    lines.append("")
    lines.append(f"  {'card':<22}{'usable':>8}{'kv pool':>9}  {'fits':<5}{'users':>7}"
                 f"{'context':>9}{'tok/s/user':>12}{'tok/s':>9}")
    for fit in result.fits:
        speed = fit.decode_tokens_per_s
        lines.append(
            f"  {fit.gpu:<22}{_gb(fit.usable_bytes):>8}{_gb(fit.kv_cache_capacity_bytes):>9}  "
            f"{'yes' if fit.fits else 'no':<5}{fit.max_concurrency:>7}{fit.max_context:>9}"
            f"{_speed(speed.per_request if speed else None):>12}"
            f"{_speed(speed.total if speed else None):>9}")
        lines += [f"    warning: {item}" for item in fit.warnings]
    if result.levers:
        lines += ["", "  levers (card: change -> users, context)"]
        for lever in result.levers:
            change = ", ".join(f"{key} {value}" for key, value in lever.change.items())
            lines.append(f"  {lever.gpu}: {lever.lever} ({change}) -> "
                         f"{lever.max_concurrency} users, {lever.max_context} tokens")
    lines += ["", "assumptions:"] + [f"  - {item}" for item in result.assumptions]
    return "\n".join(lines)
