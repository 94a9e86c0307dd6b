"""Prometheus metrics: request latency by route, estimates by method.

With several workers (``sizer serve --workers N``) each process counts its own requests;
``sizer serve`` then sets PROMETHEUS_MULTIPROC_DIR so that every worker writes its samples
there and /metrics adds them up (prometheus_client's multiprocess mode), whichever worker
answers the scrape.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Buckets from 1 ms to 10 s: an estimate takes about 1 ms in the engine, a page tens of ms.
LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)

REQUEST_SECONDS = Histogram(
    "sizer_http_request_duration_seconds",
    "Time from request to response, by route template, method and status class.",
    ["route", "method", "status"],
    buckets=LATENCY_BUCKETS_S,
)
ESTIMATES = Counter(
    "sizer_estimates_total",
    "Estimates computed, by fine-tuning method (every surface: page, API, CLI).",
    ["method"],
)


def render() -> tuple[bytes, str]:
    """The exposition text and its content type; all workers' samples in multiprocess mode."""
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST
