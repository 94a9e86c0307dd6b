"""docs/performance.md's figures for one result are the recorded measurement: the table
between its markers is what ``python -m benchmarks.fragment_report`` writes from
``benchmarks/fragment_speed.json``, and that file measured the jobs the benchmark names now.
Rerun the report after a change that moves them; no hand edits."""

from __future__ import annotations

import json

from benchmarks import fragment_report
from benchmarks._fragment import JOBS


def _recorded() -> dict[str, object]:
    return json.loads(fragment_report.RESULTS.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_the_page_shows_the_recorded_figures() -> None:
    page = fragment_report.PAGE.read_text(encoding="utf-8")
    start = page.index(fragment_report.BLOCK_START)
    end = page.index(fragment_report.BLOCK_END) + len(fragment_report.BLOCK_END)
    assert page[start:end] == fragment_report.block(_recorded())


def test_the_recording_measured_today_s_jobs() -> None:
    recorded = _recorded()
    assert [(j["job"], j["path"], j["fields"]) for j in recorded["jobs"]] == [  # type: ignore[attr-defined]
        (job.name, job.path, job.fields) for job in JOBS]
