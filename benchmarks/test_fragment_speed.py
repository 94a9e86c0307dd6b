"""How long the server takes for one htmx result, uncached (run: `make bench`).

What a change on the page costs the server when nothing is remembered: one htmx request
through the whole application (``benchmarks/_fragment.py``: middleware, route, form, the sizing
against every card and system of the seed catalog with levers, setups and speed, the view, the
German render), the application's answer caches dropped before every round. Target: under
8 ms. ``python -m benchmarks.fragment_report`` measures the same requests (wall and CPU time,
with the machine's load) and writes docs/performance.md's figures; never asserted here:
wall-clock limits in tests are flaky.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks._fragment import JOBS, FragmentBench, Job, fragment_bench


@pytest.fixture(scope="module")
def bench() -> Iterator[FragmentBench]:
    with fragment_bench() as running:
        yield running


@pytest.mark.parametrize("job", JOBS, ids=[job.name for job in JOBS])
def test_one_result_uncached(benchmark: Any, bench: FragmentBench, job: Job) -> None:
    status, body = benchmark.pedantic(bench.ask, args=(job,), setup=bench.forget,
                                      rounds=30, warmup_rounds=2)
    assert status == 200 and b'id="result-title"' in body
