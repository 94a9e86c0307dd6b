"""Load: the partner estimate endpoint, the calculator's result fragment and /healthz, side by
side, against `sizer serve --workers 2` on PostgreSQL. Bounded: it stops by itself.

    .venv/bin/python -m benchmarks.load            # 60 s, 64 connections (make load)
    .venv/bin/python -m benchmarks.load --duration 10 --connections 16

Each of the three endpoints gets a third of the connections; every connection sends its next
request as soon as the last one is answered (closed loop). Prints requests per second, p50 and
p99 latency and errors per endpoint, and the estimate endpoint's throughput as a share of
/healthz's in the same run. Loopback only; the database and server are created and removed.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from benchmarks._http import Call, Connection, Outcome, percentile
from benchmarks._service import DEFAULT_SERVER, running_service

ESTIMATE_FLOOR, ESTIMATE_GOAL = 0.70, 0.85
FRAGMENT_FLOOR = 0.60
"""Each endpoint's throughput as a share of /healthz's in the same run (issue 19, point 4):
what the cached path should reach on any machine, since both share it."""

# A spread of real jobs, so the engine's work (and any cache) sees what customers ask.
JOBS: list[dict[str, Any]] = [
    {"model": "llama-3.1-8b", "method": "lora", "batch_size": 4, "seq_len": 2048},
    {"model": "llama-3.1-8b", "method": "full", "gradient_checkpointing": True},
    {"model": "qwen3-32b", "method": "qlora", "seq_len": 4096},
    {"model": "llama-3.3-70b", "method": "qlora", "batch_size": 2},
    {"model": "mistral-7b-v0.3", "method": "lora", "lora_rank": 64},
    {"model": "qwen2.5-14b", "method": "lora", "gradient_checkpointing": True, "seq_len": 8192},
    {"model": "gemma-2-9b", "method": "lora", "attention": "eager"},
    {"model": "mixtral-8x7b", "method": "qlora"},
    {"model": "phi-4", "method": "full", "gpus": 4, "sharding": "zero3"},
    {"model": "qwen3-30b-a3b", "method": "lora", "batch_size": 8, "seq_len": 1024},
]


def _form(job: dict[str, Any]) -> dict[str, str]:
    form = {"model": job["model"], "method": job["method"],
            "batch": str(job.get("batch_size", 1)), "seq": str(job.get("seq_len", 2048))}
    if job.get("gradient_checkpointing"):
        form["ckpt"] = "on"
    return form


def lanes(api_key: str) -> dict[str, list[Call]]:
    estimate = [
        Call("POST", "/api/v1/estimates",
             {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
             json.dumps(job).encode())
        for job in JOBS
    ]
    fragment = [
        Call("POST", "/", {"HX-Request": "true",
                           "Content-Type": "application/x-www-form-urlencoded"},
             urlencode(_form(job)).encode())
        for job in JOBS
    ]
    return {
        "POST /api/v1/estimates": estimate,
        "POST / (htmx result)": fragment,
        "GET /healthz": [Call("GET", "/healthz")],
    }


async def _worker(base_url: str, calls: Sequence[Call], until: float,
                  out: list[Outcome], offset: int) -> None:
    connection = Connection(base_url)
    rotation = itertools.islice(itertools.cycle(calls), offset, None)
    try:
        while time.perf_counter() < until:
            out.append(await connection.send(next(rotation)))
    finally:
        await connection.close()


async def run_load(base_url: str, api_key: str, duration_s: float,
                   connections: int) -> dict[str, list[Outcome]]:
    plan = lanes(api_key)
    results: dict[str, list[Outcome]] = {name: [] for name in plan}
    until = time.perf_counter() + duration_s
    tasks = []
    for index in range(connections):
        name = list(plan)[index % len(plan)]
        tasks.append(_worker(base_url, plan[name], until, results[name], index))
    await asyncio.gather(*tasks)
    return results


def report(results: dict[str, list[Outcome]], duration_s: float) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for name, outcomes in results.items():
        latencies = sorted(o.seconds for o in outcomes)
        errors = sum(1 for o in outcomes if not 200 <= o.status < 300)
        rows[name] = {
            "requests": len(outcomes),
            "rps": round(len(outcomes) / duration_s, 1),
            "p50_ms": round(1000 * percentile(latencies, 0.50), 2),
            "p99_ms": round(1000 * percentile(latencies, 0.99), 2),
            "errors": errors,
            "statuses": sorted({o.status for o in outcomes}),
        }
    estimate, health = rows["POST /api/v1/estimates"]["rps"], rows["GET /healthz"]["rps"]
    fragment = rows["POST / (htmx result)"]["rps"]
    return {
        "endpoints": rows,
        "estimate_share_of_healthz": round(estimate / health, 3) if health else None,
        "fragment_share_of_healthz": round(fragment / health, 3) if health else None,
        "errors": sum(row["errors"] for row in rows.values()),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds (default 60)")
    parser.add_argument("--connections", type=int, default=64, help="in all (default 64)")
    parser.add_argument("--workers", type=int, default=2, help="server workers (default 2)")
    parser.add_argument("--database-server", default=DEFAULT_SERVER,
                        help="PostgreSQL to create the load database on")
    args = parser.parse_args(argv)
    with running_service(args.database_server, workers=args.workers) as service:
        asyncio.run(run_load(service.base_url, service.api_key, 3, 8))  # warm every worker
        started = time.perf_counter()
        results = asyncio.run(
            run_load(service.base_url, service.api_key, args.duration, args.connections)
        )
        elapsed = time.perf_counter() - started
    summary = report(results, elapsed)
    summary.update(duration_s=round(elapsed, 1), connections=args.connections,
                   workers=args.workers)
    print(f"{'endpoint':<26}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
    for name, row in summary["endpoints"].items():
        print(f"{name:<26}{row['rps']:>9}{row['p50_ms']:>9}{row['p99_ms']:>9}{row['errors']:>8}")
    print(f"estimate throughput / healthz throughput: {summary['estimate_share_of_healthz']}"
          f" (floor {ESTIMATE_FLOOR}, goal {ESTIMATE_GOAL})")
    print(f"fragment throughput / healthz throughput: {summary['fragment_share_of_healthz']}"
          f" (floor {FRAGMENT_FLOOR})")
    print(json.dumps(summary))
    return 0 if summary["errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
