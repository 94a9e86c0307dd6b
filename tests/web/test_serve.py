"""The calculator's Serve mode at /serve: full page and htmx fragment from one shareable URL,
per card and system the users it serves and how fast, the breakdown, quote links, errors
beside their field, German and English; and the page's numbers are the API's and the CLI's."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout

import pytest
from fastapi.testclient import TestClient

from app.cli import main as sizer
from tests.web.conftest import HX

SEED_CARDS = 8
SEED_SYSTEMS = 11
URL = "/serve?model=llama-3.1-8b&context=32768&users=16"


def test_first_load_shows_every_card_and_system(client: TestClient, htmx: bool) -> None:
    response = client.get("/serve", headers=HX if htmx else {})
    assert response.status_code == 200
    body = response.text
    assert ("<html" in body) is not htmx
    assert body.count('<tr id="card-') == SEED_CARDS
    assert body.count('<tr id="system-') == SEED_SYSTEMS
    assert "serves 1 user at 8,192 tokens, up to" in body  # not "1 users" (issue 30)
    assert "Request a quote" in body and "/quote?item=gpu%3A" in body


def test_the_page_shows_the_cli_s_numbers(client: TestClient, database_url: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Page, API and CLI call one service: the users and speeds the page shows for each card
    are those ``sizer serving`` prints."""
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    out = io.StringIO()
    with redirect_stdout(out):
        assert sizer(["serving", "--model", "llama-3.1-8b", "--context", "32768",
                      "--concurrency", "16", "--format", "json"]) == 0
    doc = json.loads(out.getvalue())
    body = client.get(URL).text
    for fit in doc["fits"]:
        row = re.search(rf'<tr id="card-{re.escape(fit["gpu"])}".*?</tr>', body, re.S)
        assert row, fit["gpu"]
        users = re.search(r'<td class="users"[^>]*>([\d,]+)</td>', row.group(0))
        assert users and int(users.group(1).replace(",", "")) == fit["max_concurrency"]
        speed = re.search(r'<td class="speed"[^>]*>([\d,]+)</td>', row.group(0))
        assert speed and int(speed.group(1).replace(",", "")) == round(
            fit["decode_tokens_per_s"]["per_request"])
        assert (' class="ok' in row.group(0)) == fit["fits"]


def test_the_breakdown_names_every_part(client: TestClient) -> None:
    body = client.get(URL).text
    for part in ("Weights", "KV cache for these users", "Activations", "CUDA graphs",
                 "Runtime overhead"):
        assert part in body
    assert 'class="seg-kv"' in body


def test_post_goes_to_the_shareable_url_and_htmx_gets_the_fragment(client: TestClient) -> None:
    form = {"model": "qwen3-8b", "weights": "awq", "kv": "fp8", "context": "16384",
            "users": "8"}
    redirect = client.post("/serve", data=form)
    assert redirect.status_code == 303
    location = redirect.headers["location"]
    assert location.startswith("/serve?") and "weights=awq" in location and "users=8" in location
    fragment = client.post("/serve", data=form, headers=HX)
    assert fragment.status_code == 200 and "<html" not in fragment.text
    assert fragment.headers["hx-push-url"] == location
    assert client.get(location).text.count('<tr id="card-') == SEED_CARDS


@pytest.mark.parametrize(("query", "field", "status"), [
    ("context=0", "context", 422), ("users=abc", "users", 422), ("weights=int3", "weights", 422),
    ("model=no-such-model", "model", 404), ("gpu=no-such-card", "gpu", 404),
    ("runtime=llama.cpp&weights=awq", "weights", 422),
])
def test_bad_input_is_shown_beside_its_field(client: TestClient, query: str, field: str,
                                             status: int) -> None:
    response = client.get(f"/serve?{query}")
    assert response.status_code == status
    error = re.search(rf'<span id="err-{field}" class="field-error">([^<]+)</span>',
                      response.text)
    assert error and error.group(1).strip(), response.text[:500]


def test_a_card_that_does_not_fit_lists_the_changes_that_make_it(client: TestClient) -> None:
    body = client.get("/serve?model=llama-3.3-70b&gpu=rtx-pro-6000&users=4").text
    row = re.search(r'<tr id="card-rtx-pro-6000".*?</tr>\s*<tr class="sub">.*?</tr>', body, re.S)
    assert row and "It serves this with:" in row.group(0)


def test_german_page_has_no_english(make_client: object) -> None:
    client = make_client()  # type: ignore[operator]
    client.headers["Accept-Language"] = "de"
    body = client.get(URL).text
    assert "Welche GPU brauche ich, um ein Modell zu betreiben?" in body
    assert "Gleichzeitige Nutzer" in body
    for english in ("Concurrent users", "Tokens/s per user", "Every card we sell",
                    "What these figures assume", "KV cache for these users", "serves"):
        assert english not in body, english


def test_the_fine_tune_page_links_to_the_serve_mode(client: TestClient) -> None:
    assert 'href="/serve"' in client.get("/").text


def test_every_engine_assumption_warning_and_lever_has_page_words() -> None:
    from app.engine import serving as engine
    from app.web import serving_view

    assert set(serving_view.ASSUMPTIONS) == set(engine.SERVING_ASSUMPTION_TEXTS)
    warnings = {value for name, value in vars(engine).items() if name.endswith("_WARNING")}
    assert set(serving_view.WARNINGS) == warnings
    levers = {"fp8_kv_cache", "four_bit_weights", "more_gpus", "shorter_context"}
    assert set(serving_view.LEVERS) == levers


def test_how_we_calculate_lists_the_logs_and_the_decode_measurements(
        client: TestClient) -> None:
    from app.estimates.serving import decode_cases, log_cases

    body = client.get("/how-we-calculate").text
    assert 'id="serving"' in body
    for case in decode_cases():
        assert case.source in body
        assert f"{case.error * 100:.1f}" in body or f"{case.error * 100:,.1f}" in body
    for log in log_cases():
        assert log.source in body


def test_log_cases_agree_with_the_logs_within_the_tests_tolerances() -> None:
    from app.estimates.serving import log_cases

    for case in log_cases():
        if (case.weights_gib is not None and case.logged_weights_gib is not None
                and case.weights_note is None):
            assert abs(case.weights_gib / case.logged_weights_gib - 1) < 0.03, case.id
        if case.pool_gib is not None and case.logged_pool_gib is not None:
            assert abs(case.pool_gib / case.logged_pool_gib - 1) < 0.10, case.id
        if case.concurrency is not None and case.logged_concurrency is not None:
            assert abs(case.concurrency / case.logged_concurrency - 1) < 0.10, case.id
