"""An uncached htmx result does only the work its fragments show (the server time of a
change on the page: docs/performance.md)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.web import sizing_page
from tests.web.conftest import HX


def _no_model_list(*_args: object) -> object:
    raise AssertionError("the model list was built for an answer that does not show it")


@pytest.mark.parametrize(("path", "fields"), [
    ("/", {"model": "llama-3.1-8b", "method": "lora"}),
    ("/serve", {"model": "llama-3.1-8b", "users": "20"}),
])
def test_an_htmx_result_does_not_sort_the_model_list(
        client: TestClient, monkeypatch: pytest.MonkeyPatch, path: str,
        fields: dict[str, str]) -> None:
    monkeypatch.setattr(sizing_page, "model_groups", _no_model_list)
    monkeypatch.setattr(sizing_page, "derivatives", _no_model_list)
    answer = client.post(path, data=fields, headers=HX)
    assert answer.status_code == 200
    assert "GB" in answer.text


def test_the_page_and_the_search_still_show_the_model_list(client: TestClient) -> None:
    page = client.get("/")
    assert "Llama-3.1-8B" in page.text and "derived from another model" in page.text
    found = client.get("/models", params={"q": "llama 8b"}, headers=HX)
    assert found.status_code == 200 and "Llama-3.1-8B" in found.text
