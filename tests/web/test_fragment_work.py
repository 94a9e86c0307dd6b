"""An uncached htmx result does only the work its fragments show (the server time of a
change on the page: docs/performance.md)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from jinja2 import Template
from jinja2.environment import TemplateModule

from app.web import sizing_page
from tests.web.conftest import HX

RESULTS = [("/", {"model": "llama-3.1-8b", "method": "lora"}),
           ("/serve", {"model": "llama-3.1-8b", "users": "20"})]
"""An htmx result of each mode: its path and form."""


def _no_model_list(*_args: object) -> object:
    raise AssertionError("the model list was built for an answer that does not show it")


@pytest.mark.parametrize(("path", "fields"), RESULTS)
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


@pytest.mark.parametrize(("path", "fields"), RESULTS)
def test_an_htmx_answer_runs_each_imported_template_once_for_its_blocks(
        monkeypatch: pytest.MonkeyPatch, client: TestClient, path: str,
        fields: dict[str, str]) -> None:
    """Its blocks (result, field errors, verdict bar) import the same macro modules with the
    same context: Jinja would run each module's body again for every block."""
    made: list[str | None] = []
    make_module = Template.make_module

    def counted(self: Template, *args: Any, **kwargs: Any) -> TemplateModule:
        made.append(self.name)
        return make_module(self, *args, **kwargs)

    monkeypatch.setattr(Template, "make_module", counted)
    page = client.post(path, data=fields, headers=HX)
    assert page.status_code == 200
    assert made.count("components/result.html") == 1
    # sizing.html twice at most: once for the blocks, once inside result.html's own context
    assert made.count("components/sizing.html") <= 2


@pytest.mark.parametrize(("path", "fields"), RESULTS)
def test_an_htmx_result_asked_again_is_sent_as_rendered(
        monkeypatch: pytest.MonkeyPatch, client: TestClient, path: str,
        fields: dict[str, str]) -> None:
    """Both modes keep an htmx result (sizing_page.answer): the same form again is sent from
    the fragment cache, the same bytes, without sizing or rendering it again."""
    rendered: list[str] = []
    render_sizing = sizing_page.render_sizing

    def counted(*args: Any, **kwargs: Any) -> Any:
        rendered.append(path)
        return render_sizing(*args, **kwargs)

    monkeypatch.setattr(sizing_page, "render_sizing", counted)
    first = client.post(path, data=fields, headers=HX)
    again = client.post(path, data=fields, headers=HX)
    assert first.status_code == again.status_code == 200
    assert again.text == first.text
    assert ({k: v for k, v in again.headers.items() if k != "x-request-id"}
            == {k: v for k, v in first.headers.items() if k != "x-request-id"})
    assert len(rendered) == 1
