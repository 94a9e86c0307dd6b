"""Training speed against published throughput measurements.

The measurements, sources and cards: app/estimates/measurements/published_speed.json.

Each case is the job as its source ran it (card, framework, model, method, batch, sequence,
checkpointing, GPUs); the engine's tokens per second is compared with the measured figure and
the error of every case is part of the test report (and of /how-we-calculate). The cases the
file holds (``held``) must each be within 20 % and their median within 10 %; the cases it
lists but does not hold say why (a trainer in PyTorch's deterministic mode runs slower than the
engine's figure; a framework that fuses the adapters and norms into fewer kernels runs faster;
a miss whose cause is not established says so) and must err on that side.
"""

from __future__ import annotations

import statistics

import pytest

from app.estimates.speed_cases import SpeedCase, published_cases

CASES = published_cases()
HELD = [case for case in CASES if case.held]


def test_at_least_ten_cases_from_three_sources_on_three_cards() -> None:
    """Issue 26: at least 10 published measurements from at least 3 sources on at least 3
    card types, held to the bound."""
    assert len(HELD) >= 10
    assert len({case.source for case in HELD}) >= 3
    assert len({case.card for case in HELD}) >= 3
    for case in CASES:
        assert case.source_url.startswith("https://github.com/")


@pytest.mark.parametrize("case", HELD, ids=[case.id for case in HELD])
def test_each_held_case_within_20_percent(case: SpeedCase) -> None:
    print(f"{case.id}: measured {case.measured_tokens_per_s:,.0f} tokens/s, "
          f"predicted {case.predicted_tokens_per_s:,.0f}, error {case.error:+.1%}")
    assert abs(case.error) <= 0.20


def test_median_error_of_the_held_cases_within_10_percent() -> None:
    assert statistics.median(abs(case.error) for case in HELD) <= 0.10


REASONS = {"deterministic_kernels": {"faster"}, "fused_kernels": {"slower"},
           "unexplained": {"faster", "slower"}}
"""Why a case is not held, and the side the engine may then err on (``unexplained``: a miss
whose cause is not established, listed with its error rather than left out, on the side the
file states)."""


@pytest.mark.parametrize("case", [c for c in CASES if not c.held],
                         ids=[c.id for c in CASES if not c.held])
def test_each_case_not_held_errs_on_the_side_its_reason_says(case: SpeedCase) -> None:
    print(f"{case.id} (not held, {case.not_held}): measured {case.measured_tokens_per_s:,.0f} "
          f"tokens/s, predicted {case.predicted_tokens_per_s:,.0f}, error {case.error:+.1%}")
    assert case.engine_predicts in REASONS[case.not_held]
    assert (case.error > 0) == (case.engine_predicts == "faster")
