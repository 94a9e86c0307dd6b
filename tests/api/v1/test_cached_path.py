"""The cached path at full speed (issue 19, point 4): a partner estimate and the calculator's
htmx result that this process answered before, against a catalog snapshot and a key checked
within the last second, are sent without a database statement and without a thread-pool hop.
Only what is due costs a thread: a job not yet computed, the catalog's revision check and the
key's check once their second is over, so an edit or a revocation elsewhere still arrives."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, text

from app.accounts.api_keys import PRINCIPAL_CACHE_S, KeyCheckCache
from app.caches import Caches
from app.catalog import revision
from app.catalog.service import REVISION_CHECK_INTERVAL_S, CatalogCache

JOB = {"model": "llama-3.1-8b", "method": "lora", "batch_size": 4, "seq_len": 2048}
OTHER_JOB = {**JOB, "batch_size": 8}
FORM = {"model": "llama-3.1-8b", "method": "lora", "batch": "4", "seq": "2048"}
HX = {"HX-Request": "true", "Accept-Language": "en"}


@dataclass
class Counts:
    """Thread-pool hops and SQL statements since the last :meth:`reset`."""

    threads: int = 0
    statements: int = 0

    def reset(self) -> None:
        self.threads = self.statements = 0


@dataclass
class Setup:
    client: TestClient
    counts: Counts
    step: Callable[[float], None]
    auth: dict[str, str]


@pytest.fixture
def setup(api: Callable[..., TestClient], issue_key: Callable[..., str],
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    now = [1000.0]
    clock = lambda: now[0]  # noqa: E731
    client = api(caches=Caches(catalog=CatalogCache(clock=clock),
                               key_checks=KeyCheckCache(clock=clock)))
    counts = Counts()
    original = anyio.to_thread.run_sync

    async def counted(*args: Any, **kwargs: Any) -> Any:
        counts.threads += 1
        return await original(*args, **kwargs)

    def statement(*_: Any) -> None:
        counts.statements += 1

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    engine = client.app.state.engine  # type: ignore[attr-defined]
    event.listen(engine, "before_cursor_execute", statement)

    def step(seconds: float) -> None:
        now[0] += seconds

    try:
        yield Setup(client, counts, step, {"Authorization": f"Bearer {issue_key()}"})
    finally:
        event.remove(engine, "before_cursor_execute", statement)


def test_a_repeated_estimate_costs_no_thread_and_no_statement(setup: Setup) -> None:
    first = setup.client.post("/api/v1/estimates", headers=setup.auth, json=JOB)
    assert first.status_code == 200
    assert setup.counts.threads > 0 and setup.counts.statements > 0  # key, catalog, engine
    setup.counts.reset()
    again = setup.client.post("/api/v1/estimates", headers=setup.auth, json=JOB)
    assert again.status_code == 200 and again.content == first.content
    assert again.headers["RateLimit-Remaining"] == str(
        int(first.headers["RateLimit-Remaining"]) - 1)
    assert (setup.counts.threads, setup.counts.statements) == (0, 0)


def test_a_new_job_is_computed_in_a_thread_without_a_statement(setup: Setup) -> None:
    assert setup.client.post("/api/v1/estimates", headers=setup.auth, json=JOB).status_code == 200
    setup.counts.reset()
    other = setup.client.post("/api/v1/estimates", headers=setup.auth, json=OTHER_JOB)
    assert other.status_code == 200 and other.json()["fits"]
    assert (setup.counts.threads, setup.counts.statements) == (1, 0)


def test_after_a_second_the_key_and_the_catalog_are_checked_again(setup: Setup) -> None:
    assert setup.client.post("/api/v1/estimates", headers=setup.auth, json=JOB).status_code == 200
    setup.step(max(PRINCIPAL_CACHE_S, REVISION_CHECK_INTERVAL_S))
    setup.counts.reset()
    assert setup.client.post("/api/v1/estimates", headers=setup.auth, json=JOB).status_code == 200
    assert setup.counts.threads == 2  # the key check, the catalog's revision check
    assert setup.counts.statements >= 2


def test_a_refused_key_still_costs_its_database_check(setup: Setup) -> None:
    refused = setup.client.post("/api/v1/estimates", json=JOB,
                                headers={"Authorization": "Bearer gsz_not-a-key-we-issued"})
    assert refused.status_code == 401
    assert setup.counts.statements >= 1


def test_a_repeated_htmx_result_costs_no_thread_and_no_statement(setup: Setup) -> None:
    first = setup.client.post("/", headers=HX, data=FORM)
    assert first.status_code == 200 and "llama-3.1-8b" in first.text
    setup.counts.reset()
    again = setup.client.post("/", headers=HX, data=FORM)
    assert again.status_code == 200 and again.text == first.text
    assert again.headers["HX-Push-Url"] == first.headers["HX-Push-Url"]
    assert again.headers["Vary"] == first.headers["Vary"]
    assert (setup.counts.threads, setup.counts.statements) == (0, 0)


def test_an_htmx_result_not_yet_rendered_is_rendered_in_a_thread(setup: Setup) -> None:
    assert setup.client.post("/", headers=HX, data=FORM).status_code == 200
    setup.counts.reset()
    other = setup.client.post("/", headers=HX, data={**FORM, "batch": "8"})
    assert other.status_code == 200
    assert (setup.counts.threads, setup.counts.statements) == (1, 0)


def test_a_kept_result_is_kept_per_language(setup: Setup) -> None:
    english = setup.client.post("/", headers=HX, data=FORM)
    german = setup.client.post("/", headers={**HX, "Accept-Language": "de"}, data=FORM)
    assert english.status_code == german.status_code == 200
    assert english.text != german.text
    assert setup.client.post("/", headers=HX, data=FORM).text == english.text


def test_a_catalog_edit_elsewhere_reaches_a_kept_result_within_a_second(setup: Setup) -> None:
    before = setup.client.post("/", headers=HX, data=FORM)
    assert "H200 NVL" in before.text
    app = setup.client.app
    with app.state.session_factory.begin() as session:  # type: ignore[attr-defined]
        # Another worker retires a card: the revision moves, our snapshot does not know yet.
        session.execute(text("UPDATE gpu_sku SET active = false WHERE slug = 'h200-nvl'"))
        revision.bump(session)
    assert setup.client.post("/", headers=HX, data=FORM).text == before.text
    setup.step(REVISION_CHECK_INTERVAL_S)
    after = setup.client.post("/", headers=HX, data=FORM)
    assert after.status_code == 200 and "H200 NVL" not in after.text
