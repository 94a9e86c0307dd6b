"""How long ``sizer estimate`` takes as a user runs it: a new process each time, the console
script of this environment (run: `make bench`; the figures are in docs/performance.md).

Two paths: ``--offline`` (the seed files; neither the settings, SQLAlchemy nor
prometheus_client are imported: tests/cli/test_end_to_end.py holds that), and no database yet
(SIZER_DATABASE_URL unset, no ./data/sizer.db: the settings are read and validated, then the
seed files, still without SQLAlchemy). The interpreter's own start is timed beside them, the
floor neither can go under. Each run's CPU time (user and system, from the child's resource
usage) is kept in the benchmark's ``extra_info`` (``cpu_s_min``, ``cpu_s_median``): on a
shared machine the wall clock mostly measures the other processes. Never asserted: wall-clock
limits in tests are flaky.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SIZER = Path(sys.executable).parent / "sizer"
ESTIMATE = ("estimate", "--model", "llama-3.1-8b", "--method", "lora", "--format", "json")


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SIZER_")}


@pytest.mark.parametrize("argv", [
    pytest.param((str(SIZER), *ESTIMATE, "--offline"), id="estimate --offline"),
    pytest.param((str(SIZER), *ESTIMATE), id="estimate, no database yet"),
    pytest.param((sys.executable, "-c", "pass"), id="python -c pass"),
])
def test_sizer_estimate_in_a_new_process(benchmark: Any, tmp_path: Path,
                                         argv: tuple[str, ...]) -> None:
    cpu: list[float] = []

    def run() -> subprocess.CompletedProcess[str]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(argv, cwd=tmp_path, env=_environment(), capture_output=True,
                              text=True, check=True, timeout=60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        return done

    done = benchmark.pedantic(run, rounds=10, warmup_rounds=1)
    assert done.returncode == 0
    benchmark.extra_info["cpu_s_min"] = round(min(cpu), 3)
    benchmark.extra_info["cpu_s_median"] = round(statistics.median(cpu), 3)
