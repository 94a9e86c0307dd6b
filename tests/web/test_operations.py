"""Operations: every response carries a request id, each request is logged once as JSON with
its route, and /metrics counts latency by route and estimates by method."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from app.ops import logs
from app.ops.logs import JsonFormatter
from app.ops.middleware import metric_labels

HEX_ID = re.compile(r"^[0-9a-f]{32}$")


def test_every_response_gets_a_request_id(client: TestClient) -> None:
    assert HEX_ID.match(client.get("/healthz").headers["X-Request-ID"])


def test_a_proxys_request_id_is_kept(client: TestClient) -> None:
    response = client.get("/healthz", headers={"X-Request-ID": "lb-1234.abc"})
    assert response.headers["X-Request-ID"] == "lb-1234.abc"


@pytest.mark.parametrize(
    "forged", ["a b", "x" * 101, "<script>", '"}{"level":"error'], ids=repr
)
def test_an_id_that_could_forge_a_log_line_is_replaced(client: TestClient, forged: str) -> None:
    response = client.get("/healthz", headers={"X-Request-ID": forged})
    assert HEX_ID.match(response.headers["X-Request-ID"])


def test_each_request_is_logged_once_with_route_status_and_id(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="sizer.request"):
        response = client.get("/q/" + "x" * 43)
    records = [r for r in caplog.records if r.name == "sizer.request"]
    assert len(records) == 1
    record = records[0]
    assert vars(record)["route"] == "/q/{token}"
    assert vars(record)["status"] == response.status_code == 404
    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "request" and line["route"] == "/q/{token}" and line["status"] == 404
    assert set(line) >= {"ts", "level", "logger", "request_id", "ms", "method", "route"}
    assert "path" not in line and "x" * 43 not in JsonFormatter().format(record)


def test_log_lines_carry_the_request_id_of_their_context() -> None:
    token = logs.request_id.set("req-42")
    try:
        record = logging.makeLogRecord({"msg": "hello %s", "args": ("world",), "name": "t"})
        line = json.loads(JsonFormatter().format(record))
    finally:
        logs.request_id.reset(token)
    assert line["msg"] == "hello world" and line["request_id"] == "req-42"


METRICS_TOKEN = "a-metrics-token-for-the-tests"
LATENCY_COUNT = "sizer_http_request_duration_seconds_count"


@pytest.fixture
def scraper(make_client: Callable[..., TestClient]) -> TestClient:
    """A client that may read /metrics (it carries the metrics token)."""
    client = make_client(metrics_token=METRICS_TOKEN)
    client.headers.update({"Authorization": f"Bearer {METRICS_TOKEN}", "Accept-Language": "en"})
    return client


def _sample(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_metrics_count_estimates_by_method_and_latency_by_route(scraper: TestClient) -> None:
    client = scraper
    before = client.get("/metrics").text
    client.get("/", params={"model": "llama-3.1-8b", "method": "qlora"})
    after = client.get("/metrics")
    assert after.headers["content-type"].startswith("text/plain")
    assert _sample(after.text, "sizer_estimates_total", method="qlora") >= (
        _sample(before, "sizer_estimates_total", method="qlora") + 1
    )
    assert _sample(
        after.text, "sizer_http_request_duration_seconds_count", route="/", method="GET",
        status="2xx",
    ) >= 1


def _series(text: str, name: str) -> set[str]:
    return {line.split(" ")[0] for line in text.splitlines() if line.startswith(name + "{")}


def test_invented_methods_and_paths_do_not_grow_the_metrics(scraper: TestClient) -> None:
    """`curl -X M$RANDOM` and random paths once added a series each (issue 13, point 7)."""
    scraper.request("MFIRST", "/")
    scraper.request("MFIRST", "/no/such/page")
    before = scraper.get("/metrics").text
    for n in range(20):
        scraper.request(f"M{n}{n * 7919}", "/")
        scraper.request(f"X{n}", f"/no/such/page/{n}")
    after = scraper.get("/metrics").text
    assert _series(after, LATENCY_COUNT) == _series(before, LATENCY_COUNT)
    assert "MFIRST" not in after and "M17919" not in after and "/no/such/page" not in after
    assert _sample(after, LATENCY_COUNT, route="/", method="other") >= 21
    assert _sample(after, LATENCY_COUNT, route="unmatched", method="other") >= 21


@pytest.mark.parametrize(
    ("scope", "labels"),
    [
        ({"method": "GET", "path": "/"}, ("unmatched", "GET", "2xx")),
        ({"method": "get", "path": "/"}, ("unmatched", "other", "2xx")),
        ({"method": "BREW", "path": "/static/x.css"}, ("/static", "other", "2xx")),
        ({"method": "POST", "path": "/"}, ("unmatched", "POST", "other")),
    ],
    ids=["known", "lower-case", "invented", "status-999"],
)
def test_every_label_comes_from_a_fixed_set(
    scope: dict[str, str], labels: tuple[str, str, str]
) -> None:
    status = 999 if labels[2] == "other" else 200
    assert metric_labels(scope, status) == labels


def _template_count(text: str, route: str) -> float:
    """Requests counted for a route template (its braces defeat :func:`_sample`'s parsing)."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(LATENCY_COUNT + "{") and f'route="{route}"' in line)


def test_partner_api_routes_are_labelled_with_their_mount_and_template(
    scraper: TestClient,
) -> None:
    before = _template_count(scraper.get("/metrics").text, "/api/v1/models/{slug}")
    for slug in ("llama-3.1-8b", "no-such-model", "x" * 60):
        scraper.get(f"/api/v1/models/{slug}")
    text = scraper.get("/metrics").text
    assert _template_count(text, "/api/v1/models/{slug}") == before + 3
    assert "no-such-model" not in text


def test_an_invented_fine_tuning_method_adds_no_estimates_series(scraper: TestClient) -> None:
    response = scraper.get("/", params={"model": "llama-3.1-8b", "method": "Mbogus"})
    assert response.status_code == 422
    assert "Mbogus" not in scraper.get("/metrics").text
