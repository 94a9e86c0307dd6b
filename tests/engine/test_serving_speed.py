"""Decode speed against published single-stream measurements.

The measurements: tools/serving/decode_measurements.json.

The engine's decode step reads the weights and the request's KV cache at the card's bandwidth
times ``DECODE_EFFICIENCY``. Each measurement implies the factor that would reproduce it
exactly; the constant is their median (to two decimals), and every case's error is listed by
:func:`decode_cases` for the "How we calculate" page.
"""

from __future__ import annotations

import statistics

from app.engine.serving import DECODE_EFFICIENCY
from app.estimates.serving import decode_cases


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
