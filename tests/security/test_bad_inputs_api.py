"""The bad-input catalogue against the partner API: POST /estimates, /recommendations and
/quote-requests, the GET reads with bad paths and query parameters, and bodies it cannot read.
Every entry is an RFC 9457 problem (422 pointing at the field, 404, 413), never a 5xx, and no
table gains or loses a row. SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from httpx2 import Response  # what starlette's TestClient returns

from tests.security.catalogue import (
    BODIES,
    CALCULATOR,
    FIELDS,
    QUOTE,
    READS,
    BadBody,
    BadInput,
    BadRead,
    llama_with,
)
from tests.security.conftest import RowCounts, Shop

JOB_PATHS = ("/api/v1/estimates", "/api/v1/recommendations", "/api/v1/quote-requests")
CONTACT = {"name": "Ada Buyer", "company": "Example GmbH", "email": "ada@example.com",
           "country": "DE"}


def splice(document: dict[str, Any], path: str, token: str) -> str:
    """``document`` as JSON with ``path`` (``a`` or ``a.b``) set to a raw JSON token."""
    head, _, rest = path.partition(".")
    if rest:
        inner = splice(document.get(head, {}), rest, token)
        token, path = inner, head
    others = json.dumps({k: v for k, v in document.items() if k != path})
    return others[:-1] + (", " if len(others) > 2 else "") + f"{json.dumps(path)}: {token}}}"


def job_body(entry: BadInput) -> str:
    """A valid job with the entry's field (and its context) set, as JSON text."""
    job: dict[str, Any] = {"model": "llama-3.1-8b", "method": "lora"}
    for name, value in entry.context.items():
        job[str(FIELDS[name].api)] = value
    if entry.field == "config":
        del job["model"]
    return splice(job, str(FIELDS[entry.field].api), entry.as_json)


def quote_body(estimate: str, entry: BadInput | None = None) -> str:
    """A valid quote request around ``estimate`` (JSON text), with a quote field set."""
    request: dict[str, Any] = {"item_kind": "gpu", "item_slug": "rtx-pro-6000", "quantity": 1,
                               "contact": CONTACT, "partner_reference": "SEC-1"}
    text = splice(request, "estimate", estimate)
    if entry is None:
        return text
    return splice(json.loads(text), str(FIELDS[entry.field].api), entry.as_json)


def assert_problem(response: Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text[:1000]
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["detail"] and body["code"]
    return body


def assert_points_at(body: dict[str, Any], location: str) -> None:
    """One of the problem's ``errors`` is at ``location`` (or inside it)."""
    locations = [error["location"] for error in body.get("errors") or []]
    assert any(loc == location or loc.startswith(location + ".") for loc in locations), (
        location, body)
    assert all(error["reason"] for error in body["errors"])


def post(shop: Shop, path: str, content: str) -> Response:
    return shop.client.post(path, content=content.encode("utf-8", "surrogatepass"),
                            headers={**shop.auth, "Content-Type": "application/json"})


@pytest.mark.parametrize("path", JOB_PATHS, ids=lambda p: p.rsplit("/", 1)[1])
@pytest.mark.parametrize("entry", [e for e in CALCULATOR if e.applies_to("api")],
                         ids=lambda e: e.id)
def test_a_bad_job_is_a_problem_pointing_at_its_field(
    shop: Shop, row_counts: Callable[[], RowCounts], entry: BadInput, path: str
) -> None:
    before = row_counts()
    in_quote = path.endswith("quote-requests")
    body = quote_body(job_body(entry)) if in_quote else job_body(entry)

    problem = assert_problem(post(shop, path, body), entry.api_status)

    if entry.api_status == 422:
        location = entry.api_location or (
            f"body.estimate.{FIELDS[entry.field].api}" if in_quote
            else f"body.{FIELDS[entry.field].api}"
        )
        assert_points_at(problem, location)
    assert row_counts() == before


@pytest.mark.parametrize("entry", [e for e in QUOTE if e.applies_to("api")], ids=lambda e: e.id)
def test_a_bad_quote_request_field_is_a_problem_pointing_at_it(
    shop: Shop, row_counts: Callable[[], RowCounts], entry: BadInput
) -> None:
    before = row_counts()
    body = quote_body('{"model": "llama-3.1-8b", "method": "lora"}', entry)

    problem = assert_problem(post(shop, "/api/v1/quote-requests", body), entry.api_status)

    if entry.api_status == 422:
        assert_points_at(problem, f"body.{FIELDS[entry.field].api}")
    assert row_counts() == before


@pytest.mark.parametrize("read", [r for r in READS if r.api], ids=lambda r: r.id)
def test_a_bad_read_is_a_problem(
    shop: Shop, row_counts: Callable[[], RowCounts], read: BadRead
) -> None:
    before = row_counts()

    problem = assert_problem(shop.client.get(str(read.api), headers=shop.auth), read.status)

    if read.location is not None:
        assert_points_at(problem, read.location)
    assert row_counts() == before


@pytest.mark.parametrize("path", JOB_PATHS, ids=lambda p: p.rsplit("/", 1)[1])
@pytest.mark.parametrize("body", BODIES, ids=lambda b: b.id)
def test_a_body_the_api_cannot_read_is_a_problem_about_the_body(
    shop: Shop, row_counts: Callable[[], RowCounts], body: BadBody, path: str
) -> None:
    before = row_counts()
    headers = {**shop.auth, **({"Content-Type": body.content_type} if body.content_type else {})}

    problem = assert_problem(shop.client.post(path, content=body.content, headers=headers), 422)

    assert_points_at(problem, "body")
    assert row_counts() == before


def test_the_baseline_bodies_are_valid(shop: Shop, row_counts: Callable[[], RowCounts]) -> None:
    """The catalogue's requests differ from these in one field only."""
    job = '{"model": "llama-3.1-8b", "method": "lora"}'
    assert post(shop, "/api/v1/estimates", job).status_code == 200
    assert post(shop, "/api/v1/recommendations", job).status_code == 200
    before = row_counts()
    assert post(shop, "/api/v1/quote-requests", quote_body(job)).status_code == 201
    assert row_counts()["quote_request"] == before["quote_request"] + 1


@pytest.mark.parametrize(("fragment", "place"), [
    ('"rope_scaling": {"factor": 9007199254740993}', "rope_scaling.factor"),
    ('"layers": [1, ' + "9" * 5000 + "]", "layers[1]"),
    ('"\\udc80": 1', "\\udc80"),
], ids=["2-53-plus-1", "5000-digits", "surrogate-key"])
def test_a_refused_config_names_the_place_in_the_document(
    shop: Shop, fragment: str, place: str
) -> None:
    body = '{"method": "lora", "model_config": ' + llama_with(fragment) + "}"

    problem = assert_problem(post(shop, "/api/v1/estimates", body), 422)

    assert_points_at(problem, "body.model_config")
    (error,) = problem["errors"]
    assert error["reason"].startswith(place + ": "), error


def test_nan_and_infinity_where_transformers_reads_them_are_sized(shop: Shop) -> None:
    """Nemotron-H's ``"time_step_limit": [0.0, Infinity]`` (issue 29): the body's parser reads
    them as transformers does, the engine ignores a field it does not use."""
    body = ('{"method": "lora", "model_config": '
            + llama_with('"time_step_limit": [0.0, Infinity], "rope_scaling": {"factor": NaN}')
            + "}")
    assert post(shop, "/api/v1/estimates", body).status_code == 200
