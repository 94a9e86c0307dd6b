"""A Hugging Face repository id on every surface (issue 16, point 3): the page's model field,
the API's ``"model": "Qwen/Qwen3-8B"`` and ``sizer estimate --model Qwen/Qwen3-8B`` go through
one service (``app/catalog/hub.py``) against a fake Hub on 127.0.0.1, give the same numbers as
the config.json itself, keep it with its commit, and refuse what the Hub cannot give with the
field named (and, on the page, in the customer's language)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.config import SEED_DIR
from app.db.session import SessionFactory
from app.db.tables import HubConfig, QuoteRequest
from tests.api.v1.conftest import assert_problem
from tests.cli.runner import sizer
from tests.fake_hub import FakeHub, FakeRepo, running_hub

NEW_MODEL: dict[str, Any] = {
    **json.loads((SEED_DIR / "models" / "qwen3-8b.json").read_text()), "num_hidden_layers": 40}
JOB = {"method": "lora", "batch_size": 2, "seq_len": 1024}
REPO = "Acme/New-Model-9B"
LLAMA_70B: dict[str, Any] = json.loads((SEED_DIR / "models" / "llama-3.1-70b.json").read_text())
LLAMA_COPY = "acme/llama-70b-copy"


@pytest.fixture
def fake_hub() -> Iterator[FakeHub]:
    for hub in running_hub():
        hub.add(FakeRepo(REPO, NEW_MODEL))
        hub.add(FakeRepo(LLAMA_COPY, LLAMA_70B))
        hub.add(FakeRepo("acme/gated", NEW_MODEL, gated_token="hf_shop"))
        hub.add(FakeRepo("acme/slow", NEW_MODEL, slow_s=30))
        hub.add(FakeRepo("acme/huge", NEW_MODEL, oversize=300 * 1024))
        yield hub


@pytest.fixture
def client(api: Callable[..., TestClient], fake_hub: FakeHub) -> TestClient:
    return api(hub_endpoint=fake_hub.endpoint, hub_timeout_s=0.5)


def test_the_api_sizes_a_repository_as_its_config_json(
    client: TestClient, auth: dict[str, str], fake_hub: FakeHub, seeded: SessionFactory
) -> None:
    by_id = client.post("/api/v1/estimates", headers=auth, json={**JOB, "model": REPO})
    assert by_id.status_code == 200, by_id.text
    by_config = client.post("/api/v1/estimates", headers=auth,
                            json={**JOB, "model_config": NEW_MODEL})
    assert by_id.json() == by_config.json()
    with seeded() as session:
        row = session.scalars(select(HubConfig)).one()
    assert (row.repo_id, row.commit_sha) == (REPO, fake_hub.repos[REPO.lower()].revisions["main"])
    asked = len(fake_hub.paths())
    again = client.post("/api/v1/recommendations", headers=auth, json={**JOB, "model": REPO})
    assert again.status_code == 200
    assert len(fake_hub.paths()) == asked  # kept: the Hub is not asked again


@pytest.mark.parametrize("method", ["qlora", "lora"])
def test_catalog_pasted_and_hub_llama_70b_checkpoint_alike(
    client: TestClient, auth: dict[str, str], method: str
) -> None:
    """Issue 27, point 1: one automatic checkpointing rule, the parameters counted from the
    config, so the catalog's Llama 70B, its config.json pasted and the same config from the Hub
    give the same figures (the pasted one was 179 GB against the catalog's 61.7 GB)."""
    job = {"method": method, "batch_size": 1, "seq_len": 2048}
    answers = [client.post("/api/v1/estimates", headers=auth, json={**job, **model}).json()
               for model in ({"model": "llama-3.1-70b"}, {"model_config": LLAMA_70B},
                             {"model": LLAMA_COPY})]
    assert answers[0]["per_gpu_bytes"] == answers[1]["per_gpu_bytes"] == answers[2][
        "per_gpu_bytes"]
    assert all(a["checkpointing"] == {"setting": "auto", "enabled": True,
                                      "reason": "qlora" if method == "qlora" else "large_model"}
               for a in answers)
    if method == "qlora":
        assert answers[0]["per_gpu_bytes"]["total"] < 70e9


def test_a_repository_in_the_catalog_is_the_catalog_model_without_asking_the_hub(
    client: TestClient, auth: dict[str, str], fake_hub: FakeHub
) -> None:
    by_id = client.post("/api/v1/estimates", headers=auth, json={**JOB, "model": "Qwen/Qwen3-8B"})
    by_slug = client.post("/api/v1/estimates", headers=auth, json={**JOB, "model": "qwen3-8b"})
    assert by_id.status_code == 200 and by_id.json() == by_slug.json()
    assert fake_hub.paths() == []


@pytest.mark.parametrize(("model", "status", "reason"), [
    ("acme/gated", 422, "gated"),
    ("nobody/nothing", 404, "no public model nobody/nothing"),
    ("acme/slow", 503, "did not answer within 0.5 s"),
    ("acme/huge", 422, "larger than 256 KB"),
    ("acme/bad@..", 422, "not a Hugging Face repository id"),
])
def test_the_api_names_the_model_field_when_the_hub_cannot_give_it(
    client: TestClient, auth: dict[str, str], model: str, status: int, reason: str
) -> None:
    body = assert_problem(client.post("/api/v1/estimates", headers=auth,
                                      json={**JOB, "model": model}), status)
    assert body["detail"].startswith("model: ") and reason in body["detail"]
    assert "config.json instead" in body["detail"] or status == 422
    if status == 422:
        assert body["errors"] == [{"location": "body.model", "reason": body["detail"][7:]}]


def test_the_shop_s_token_opens_a_gated_repository(
    api: Callable[..., TestClient], auth: dict[str, str], fake_hub: FakeHub
) -> None:
    client = api(hub_endpoint=fake_hub.endpoint, hub_token="hf_shop")
    response = client.post("/api/v1/estimates", headers=auth, json={**JOB, "model": "acme/gated"})
    assert response.status_code == 200, response.text


def test_the_cli_takes_a_repository_id_and_keeps_its_config(
    client: TestClient, auth: dict[str, str], fake_hub: FakeHub, database_url: str,
    seeded: SessionFactory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    monkeypatch.setenv("SIZER_HUB_ENDPOINT", fake_hub.endpoint)
    argv = ["estimate", "--model", REPO, "--method", "lora", "--batch-size", "2",
            "--seq-len", "1024"]
    run = sizer(*argv, "--format", "json")
    assert run.code == 0, run.stderr
    api = client.post("/api/v1/estimates", headers=auth, json={**JOB, "model": REPO}).json()
    assert json.loads(run.stdout) == api
    assert len(fake_hub.paths()) == 2  # the CLI fetched and kept it; the API read it kept
    table = sizer(*argv)
    assert table.stdout.startswith(f"{REPO}: config.json at commit ")

    missing = sizer("estimate", "--model", "nobody/nothing", "--method", "lora")
    assert missing.code == 2 and missing.stdout == ""
    assert missing.stderr.startswith("sizer estimate: error: model: the Hugging Face Hub has no "
                                     "public model nobody/nothing")


def test_the_cli_without_a_database_still_fetches(
    fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", f"sqlite:///{tmp_path / 'none.db'}")
    monkeypatch.setenv("HF_ENDPOINT", fake_hub.endpoint)  # huggingface_hub's own variable
    run = sizer("estimate", "--offline", "--model", REPO, "--method", "lora", "--format", "json")
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["params"]["total"] > 0
    assert not (tmp_path / "none.db").exists()


def _result(client: TestClient, model: str, language: str = "en") -> tuple[int, str]:
    response = client.get("/", params={"model": model, "method": "lora", "batch": "2",
                                       "seq": "1024"},
                          headers={"Accept-Language": language, "HX-Request": "true"})
    return response.status_code, response.text


def test_the_page_sizes_a_repository_and_says_which_commit(
    client: TestClient, auth: dict[str, str], fake_hub: FakeHub
) -> None:
    status, page = _result(client, REPO)
    assert status == 200
    sha = fake_hub.repos[REPO.lower()].revisions["main"]
    assert f"config.json of {REPO} at commit {sha[:12]}" in page
    api = client.post("/api/v1/estimates", headers=auth, json={**JOB, "model": REPO}).json()
    total = f"{api['per_gpu_bytes']['total'] / 1e9:.1f}\u00a0GB"
    assert f'id="fig-total">{total}<' in page

    full = client.get("/", params={"model": REPO, "method": "lora"}).text
    assert f'<option value="{REPO}" selected>{REPO} (Hugging Face)</option>' in full


def test_the_search_box_offers_a_repository_id(client: TestClient) -> None:
    response = client.get("/models", params={"q": REPO}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert f'<option value="{REPO}" selected>' in response.text
    assert response.headers["HX-Trigger-After-Settle"] == "models-filtered"


@pytest.mark.parametrize(("model", "status", "english", "german"), [
    ("nobody/nothing", 404, "Hugging Face has no public model nobody/nothing",
     "Hugging Face hat kein öffentliches Modell nobody/nothing"),
    ("acme/gated", 422, "acme/gated is gated on Hugging Face",
     "acme/gated ist auf Hugging Face zugangsbeschränkt"),
    ("acme/slow", 503, "Hugging Face did not answer within 0.5 s",
     "Hugging Face hat nicht innerhalb von 0.5 s geantwortet"),
])
def test_the_page_says_why_beside_the_model_and_how_to_go_on(
    client: TestClient, model: str, status: int, english: str, german: str
) -> None:
    for language, words in (("en", english), ("de", german)):
        got, page = _result(client, model, language)
        assert got == status, language
        error = re.search(r'<span id="err-model" class="field-error"[^>]*>([^<]+)</span>', page)
        assert error is not None, language
        assert error.group(1).startswith(words), error.group(1)
        assert ("My own model" if language == "en" else "Eigenes Modell") in error.group(1)


def test_a_quote_for_a_repository_is_sized_from_its_config(
    client: TestClient, seeded: SessionFactory
) -> None:
    form = client.get("/quote", params={"item": "gpu:rtx-pro-6000", "model": REPO,
                                        "method": "lora", "batch": "2", "seq": "1024"})
    assert form.status_code == 200, form.text[:500]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.text))
    assert fields["model"] == REPO
    contact = {"name": "Ada Lovelace", "company": "Analytical Engines GmbH",
               "email": "ada@example.com", "country": "DE", "quantity": "1"}
    stored = client.post("/quote", data={**fields, **contact})
    assert stored.status_code == 303, stored.text[:500]
    with seeded() as session:
        row = session.scalars(select(QuoteRequest)).one()
    assert row.sizing["calculator"]["model"] == REPO
    assert row.sizing["result"]["params"]["total"] > 0
