"""Problem+json everywhere under /api; the storefront keeps its HTML error pages."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.api.v1.conftest import assert_problem


@pytest.mark.parametrize("path", ["/api", "/api/", "/api/v2/gpus", "/api/v1/", "/api/v1/nope",
                                  "/api/v1/gpus/a/b"])
def test_unknown_api_paths_are_404_problems(client: TestClient, auth: dict[str, str],
                                            path: str) -> None:
    response = client.get(path, headers={**auth, "Accept": "text/html"})
    assert_problem(response, 404, "not_found")


def test_a_wrong_method_is_405_with_allow(client: TestClient, auth: dict[str, str]) -> None:
    response = client.delete("/api/v1/gpus", headers=auth)
    assert_problem(response, 405, "method_not_allowed")
    assert response.headers["Allow"] == "GET"
    assert_problem(client.get("/api/v1/estimates", headers=auth), 405)


def test_validation_problems_list_location_and_reason(
    client: TestClient, auth: dict[str, str]
) -> None:
    body = assert_problem(client.post("/api/v1/estimates", headers=auth, json={
        "model": "llama-3.1-8b", "method": "lora", "batch_size": -1, "gpus": 0,
    }), 422)
    assert body["errors"] == [
        {"location": "body.batch_size", "reason": "Input should be greater than or equal to 1"},
        {"location": "body.gpus", "reason": "Input should be greater than or equal to 1"},
    ]
    assert body["detail"] == "2 fields are invalid"


def test_the_storefront_keeps_its_html_errors(client: TestClient) -> None:
    page = client.get("/no-such-page", headers={"Accept": "text/html"})
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")


def test_a_path_no_route_can_match_is_still_a_problem(
    client: TestClient, auth: dict[str, str]
) -> None:
    assert_problem(client.get("/api/v1/models/a%0Ab", headers=auth), 404)
    assert_problem(client.get("/api/v%0A1/gpus", headers=auth), 404)


def test_the_storefront_error_pages_never_answer_an_api_path(
    client: TestClient, auth: dict[str, str]
) -> None:
    """The HTML surface's handlers (app/web/errors.py) have no API branch: a form body, an HTML
    Accept header or a POST to an unknown /api path still gets the API's own problem."""
    sent_as_form = client.post("/api/v1/estimates", data={"model": "llama-3.1-8b"},
                               headers={**auth, "Accept": "text/html"})
    assert sent_as_form.headers["content-type"] == "application/problem+json"
    assert_problem(client.post("/api/nope", data={"a": "b"},
                               headers={**auth, "Accept": "text/html"}), 404)
