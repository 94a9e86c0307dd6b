"""How long ``sizer estimate`` takes as a user runs it: a new process each time, the console
script of this environment (run: `make bench`; the figures are in docs/performance.md).

Two paths: ``--offline`` (the seed files; neither the settings, SQLAlchemy nor
prometheus_client are imported: tests/cli/test_end_to_end.py holds that), and no database yet
(SIZER_DATABASE_URL unset, no ./data/sizer.db: the settings are read and validated, then the
seed files). The interpreter's own start is timed beside them, the floor neither can go under.
Never asserted: wall-clock limits in tests are flaky.
"""

from __future__ import annotations

import os
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
    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=tmp_path, env=_environment(), capture_output=True,
                              text=True, check=True, timeout=60)

    done = benchmark.pedantic(run, rounds=10, warmup_rounds=1)
    assert done.returncode == 0
