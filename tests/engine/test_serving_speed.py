"""Decode speed against published single-stream measurements.

The measurements: app/estimates/measurements/decode_measurements.json.

The engine's decode step reads the weights and the request's KV cache at the card's bandwidth
times ``DECODE_EFFICIENCY``, plus ``DECODE_LAYER_OVERHEAD_S`` per layer. Each measurement
implies the factor that would reproduce it exactly at the per-layer time, and the per-layer
time that would at the factor; each constant is the median of what the measurements imply at
the other (a fixed point), and every case's error is listed by :func:`decode_cases` for the
"How we calculate" page. The tensor-parallel all-reduce is the median of measured all-reduce
latencies (app/estimates/measurements/allreduce_measurements.json).
"""

from __future__ import annotations

import json
import statistics

from app.engine.serving import DECODE_EFFICIENCY, DECODE_LAYER_OVERHEAD_S, TP_ALLREDUCE_S
from app.estimates.serving import MEASUREMENTS_DIR, decode_cases


def test_at_least_six_published_measurements_with_sources() -> None:
    cases = decode_cases()
    assert len(cases) >= 6
    assert len({case.runtime for case in cases}) >= 2
    for case in cases:
        assert case.source.startswith("https://github.com/")


def test_efficiency_is_the_median_of_the_factors_the_measurements_imply() -> None:
    factors = [case.implied_efficiency for case in decode_cases()]
    assert round(statistics.median(factors), 2) == DECODE_EFFICIENCY


def test_each_case_reports_its_error_and_the_median_error_is_small() -> None:
    cases = decode_cases()
    errors = [abs(case.error) for case in cases]
    for case in cases:
        assert case.predicted_tokens_per_s > 0
        assert abs(case.predicted_tokens_per_s / case.measured_tokens_per_s - 1
                   - case.error) < 1e-9
    assert statistics.median(errors) < 0.10


def test_layer_overhead_is_the_median_of_the_times_the_measurements_imply() -> None:
    """At the fitted factor, the per-layer time that reproduces each measurement; their median
    to the microsecond is the constant (and at it, the factor is theirs: the test above)."""
    times = [case.implied_layer_seconds for case in decode_cases()]
    assert len(times) >= 12
    assert round(statistics.median(times), 6) == DECODE_LAYER_OVERHEAD_S


def test_allreduce_is_the_median_of_measured_latencies() -> None:
    document = json.loads((MEASUREMENTS_DIR / "allreduce_measurements.json").read_text())
    assert document["source"].startswith("https://github.com/")
    latencies = [case["latency_ms"] / 1000 for case in document["cases"]]
    assert len(latencies) >= 6 and {case["num_gpus"] for case in document["cases"]} == {2, 4}
    assert round(statistics.median(latencies), 7) == TP_ALLREDUCE_S
