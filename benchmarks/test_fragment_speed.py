"""How long the server takes for one calculator result fragment, uncached (run: `make bench`).

What a change on the page costs the server when nothing is remembered (issue 30, point 7): size
a catalog model against the whole seed catalog (`estimates.sizing`, every card and system, the
levers), shape the view and render the htmx blocks (result, field errors, verdict bar) in
German. Each round sizes a job not sized before (its own micro-batch), so neither the answer
cache nor the fragment cache helps. Target: under 8 ms median. Reported in
docs/performance.md, never asserted: wall-clock limits in tests are flaky.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request

from app.catalog.seed import load_seed_catalog
from app.config import load_settings
from app.main import create_app
from app.web import calculator, calculator_form, serving, serving_form

CATALOG = load_seed_catalog()
JOBS = {
    "lora-8b": {"model": "llama-3.1-8b", "method": "lora", "seq": "2048"},
    "full-70b": {"model": "llama-3.3-70b", "method": "full", "seq": "4096"},
    "qlora-qwen3-30b-moe": {"model": "qwen3-30b-a3b", "method": "qlora", "seq": "2048"},
}


def _request(app: Any, path: str) -> Request:
    request = Request({"type": "http", "method": "POST", "path": path, "query_string": b"",
                       "headers": [(b"hx-request", b"true"), (b"host", b"bench")],
                       "app": app, "scheme": "http", "server": ("bench", 80)})
    request.state.lang = "de"
    return request


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    database: Path = tmp_path_factory.mktemp("bench") / "unused.db"
    return create_app(load_settings(database_url=f"sqlite:///{database}"))


@pytest.mark.parametrize("name", list(JOBS))
def test_one_fine_tuning_fragment_uncached(benchmark: Any, app: Any, name: str) -> None:
    batches = itertools.count(1)

    def fragment() -> int:
        calc, errors = calculator_form.parse({**JOBS[name], "batch": str(next(batches))})
        response = calculator.sized_page(_request(app, "/"), CATALOG, calc, errors)
        return response.status_code

    assert benchmark(fragment) in (200, 422)


@pytest.mark.parametrize("model", ["llama-3.1-8b", "llama-3.3-70b"])
def test_one_serving_fragment_uncached(benchmark: Any, app: Any, model: str) -> None:
    users = itertools.count(1)

    def fragment() -> int:
        calc, errors = serving_form.parse({"model": model, "users": str(next(users))})
        cache = app.state.caches.estimates
        view = serving.size(CATALOG, calc, errors, cache=cache)
        from app.web import sizing_page
        response = sizing_page.render_sizing(
            _request(app, "/serve"), serving.TEMPLATE, calc=calc, errors=errors,
            catalog=CATALOG, form=serving_form, sized=view, blocks=serving.FRAGMENTS)
        return response.status_code

    assert benchmark(fragment) == 200
