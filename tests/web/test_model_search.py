"""The model search finds models by the words people type (issue 16, point 4), on the page and
in the partner API, on SQLite and PostgreSQL (the catalog is read from the database)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from app.accounts import api_keys
from app.catalog import search
from app.config import SEED_DIR
from app.db.session import SessionFactory
from app.db.tables import ModelCard
from tests.web.conftest import HX

LLAMA_8B_CONFIG = json.loads((SEED_DIR / "models" / "llama-3.1-8b.json").read_text())

EXTRA_MODELS: tuple[tuple[str, str, str, bool], ...] = (
    # slug, Hugging Face id, family, mixture of experts
)  # Qwen3.5-27B (dense), -35B-A3B, -122B-A10B, -397B-A17B, gpt-oss-20b and -120b are in the seed


@pytest.fixture
def client(make_client: Callable[..., TestClient], seeded: SessionFactory,
           make_model: Callable[..., ModelCard]) -> Iterator[TestClient]:
    """The seed catalog plus a few current models, in the database the app reads."""
    with seeded.begin() as session:
        for slug, hf_id, family, moe in EXTRA_MODELS:
            make_model(session, slug=slug, hf_id=hf_id, family=family,
                       config=LLAMA_8B_CONFIG, params_total=10_000,
                       params_active=1_000 if moe else 10_000)
    client = make_client()
    client.headers["Accept-Language"] = "en"
    yield client


def _found(client: TestClient, query: str) -> list[str]:
    response = client.get("/models", params={"q": query}, headers=HX)
    assert response.status_code == 200, response.text
    return re.findall(r'<option value="([^"]+)"', response.text.replace('value="custom"', ""))


@pytest.mark.parametrize(("query", "expected"), [
    ("Llama 70B", {"llama-3.3-70b", "llama-3.1-70b", "deepseek-r1-distill-llama-70b"}),
    ("70b", {"llama-3.3-70b", "llama-3.1-70b", "deepseek-r1-distill-llama-70b"}),
    ("3.1", {"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
             "mistral-small-3.1-24b-instruct-2503", "deepseek-v3.1"}),
    ("llama3.1 8b", {"llama-3.1-8b"}),
    ("gpt oss", {"gpt-oss-20b", "gpt-oss-120b"}),
    ("qwen 3.5 moe", {"qwen3.5-35b-a3b", "qwen3.5-122b-a10b", "qwen3.5-397b-a17b"}),
    ("Qwen3.5", {"qwen3.5-35b-a3b", "qwen3.5-122b-a10b", "qwen3.5-397b-a17b", "qwen3.5-27b"}),
    ("qwen3.5 35b", {"qwen3.5-35b-a3b"}),
    ("meta-llama/Llama-3.1-8B", {"llama-3.1-8b"}),
    ("MIXTRAL 8x7b", {"mixtral-8x7b"}),
])
def test_the_search_box_finds_models_by_the_words_people_type(
    client: TestClient, query: str, expected: set[str]
) -> None:
    assert set(_found(client, query)) == expected


def test_a_number_finds_its_own_size_and_not_a_larger_one(client: TestClient) -> None:
    assert _found(client, "qwen3 8b") == ["qwen3-8b"]
    assert _found(client, "qwen3 30b") == ["qwen3-30b-a3b"]


def test_a_search_that_finds_nothing_keeps_the_list_and_the_result(client: TestClient) -> None:
    response = client.get("/models", params={"q": "no such model", "model": "qwen3-8b"},
                          headers=HX)
    assert response.status_code == 200
    assert '<option value="qwen3-8b" selected>' in response.text
    assert response.text.count("<option") > 30  # the whole catalog stays in the list
    # no recalculation is asked for: the result on screen stays as it was
    assert "HX-Trigger-After-Settle" not in response.headers


def test_the_partner_api_searches_the_same_way(
    client: TestClient, seeded: SessionFactory
) -> None:
    with seeded.begin() as session:
        partner = api_keys.create_partner(session, name="Search Partner")
        _, key = api_keys.issue_key(session, partner_id=partner.id, label="search",
                                    rate_limit_per_minute=None)
    response = client.get("/api/v1/models", params={"q": "Llama 70B"},
                          headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200
    slugs = {item["slug"] for item in response.json()["items"]}
    assert slugs == {"llama-3.3-70b", "llama-3.1-70b", "deepseek-r1-distill-llama-70b"}


def test_words_keep_version_numbers_whole_and_split_names_from_numbers() -> None:
    assert search.words("Qwen/Qwen3.5-35B-A3B") == ["qwen", "qwen3.5", "35b", "a3b"]
    assert search.words(" gpt  oss ") == ["gpt", "oss"]


def _chosen(response_text: str) -> str:
    match = re.search(r'<option value="([^"]+)" selected>', response_text)
    assert match, "a model is chosen"
    return match.group(1)


@pytest.mark.parametrize(("query", "meant"), [
    ("llama 70b", "llama-3.3-70b"),  # was DeepSeek-R1-Distill-Llama-70B (issue 30, point 1)
    ("llama 8b", "llama-3.1-8b"),  # was the DeepSeek 8B distill
    ("deepseek r1", "deepseek-r1"),  # was Distill-Qwen-1.5B
    ("Llama 3.1 8B Instruct", "llama-3.1-8b"),  # found nothing
    ("qwen2.5 7b instruct", "qwen2.5-7b"),
    ("gptoss", "gpt-oss-20b"),
    ("lama 70b", "llama-3.3-70b"),
])
def test_the_search_chooses_the_model_people_mean(
    client: TestClient, query: str, meant: str
) -> None:
    response = client.get("/models", params={"q": query, "model": "qwen3-8b"}, headers=HX)
    assert response.status_code == 200
    assert _chosen(response.text) == meant
    assert response.headers["HX-Trigger-After-Settle"] == "models-filtered"
    assert 'id="search-status"' in response.text
    assert "No model matches" not in response.text


@pytest.mark.parametrize(("lang", "words"), [
    ("en", "No model matches “no such model”"),
    ("de", "Kein Modell passt zu „no such model“"),
])
def test_a_search_that_finds_nothing_says_so_and_leaves_the_result(
    client: TestClient, lang: str, words: str
) -> None:
    for headers in (HX, {}):  # htmx swaps the message in out of band; without it, the page
        response = client.get("/models", params={"q": "no such model", "model": "qwen3-8b"},
                              headers={**headers, "Accept-Language": lang})
        assert response.status_code == 200
        assert words in response.text
        assert _chosen(response.text) == "qwen3-8b"
        assert "HX-Trigger-After-Settle" not in response.headers


@pytest.mark.parametrize(("lang", "label"), [
    ("en", "derived from another model (a distill or fine-tune)"),
    ("de", "von einem anderen Modell abgeleitet (destilliert oder weitertrainiert)"),
])
def test_derivatives_are_labelled_in_the_list(client: TestClient, lang: str, label: str) -> None:
    response = client.get("/models", params={"q": "llama 70b"},
                          headers={**HX, "Accept-Language": lang})
    options = dict(re.findall(r'<option value="([^"]+)"[^>]*>([^<]*)</option>', response.text))
    assert label in options["deepseek-r1-distill-llama-70b"]
    assert label not in options["llama-3.3-70b"]


HUB_ID = "mistralai/Mistral-Small-24B-Instruct-2501"


@pytest.mark.parametrize("path", ["/models", "/serve/models"])
@pytest.mark.parametrize("headers", [HX, {}], ids=["htmx", "page"])
def test_a_search_after_a_hub_id_chooses_the_model_it_finds(
    client: TestClient, path: str, headers: dict[str, str]
) -> None:
    """A fresh walk: once a Hub repository id stood in the model field (typed into the search
    while the Hub was out of reach), every later search kept it: "llama 70b" listed Llama 3.3
    70B first and left the repository chosen, with or without JavaScript."""
    response = client.get(path, params={"q": "llama 70b", "model": HUB_ID}, headers=headers)
    assert response.status_code == 200
    assert _chosen(response.text) == "llama-3.3-70b"
    if headers:
        assert response.headers["HX-Trigger-After-Settle"] == "models-filtered"
    nothing = client.get(path, params={"q": "no such model", "model": HUB_ID}, headers=headers)
    assert _chosen(nothing.text) == HUB_ID  # a search that finds nothing changes nothing
    assert "No model matches" in nothing.text


@pytest.mark.parametrize(("path", "sized"), [("/models", "/?model="), ("/serve/models",
                                                                        "/serve?model=")])
def test_without_javascript_a_hub_id_searched_goes_to_its_sizing(
    client: TestClient, path: str, sized: str
) -> None:
    """Without JavaScript a Hub repository id typed into the search answered "We could not
    size this job" and no reason: nothing sized it (htmx's form does, after the list). Now the
    search sends the browser to the page that sizes it, which says why when the Hub is out of
    reach."""
    response = client.get(path, params={"q": HUB_ID, "model": "qwen3-8b", "users": "4"}
                          if path == "/serve/models" else {"q": HUB_ID, "model": "qwen3-8b"})
    assert response.status_code == 303
    location = response.headers["location"]
    assert location.startswith(sized + "mistralai%2FMistral-Small-24B-Instruct-2501")
    if path == "/serve/models":
        assert "users=4" in location
    htmx_answer = client.get(path, params={"q": HUB_ID, "model": "qwen3-8b"}, headers=HX)
    assert htmx_answer.status_code == 200
    assert _chosen(htmx_answer.text) == HUB_ID
