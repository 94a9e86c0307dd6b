"""What ``make bench`` records beside the timings (tools/bench_results.py keeps it)."""

from __future__ import annotations

import os
from typing import Any


def pytest_benchmark_update_machine_info(config: Any, machine_info: dict[str, Any]) -> None:
    """The cores and the load average (1, 5 and 15 minutes) as the run ends: on a shared
    machine the load says how far the wall clock measures the other processes."""
    machine_info["cores"] = os.cpu_count()
    machine_info["load_average"] = [round(value, 2) for value in os.getloadavg()]
