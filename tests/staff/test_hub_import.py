"""Staff import a model by its Hugging Face repository id (issue 16, point 3): the config.json
is fetched from the (fake) Hub as the calculator fetches it, previewed, then saved."""

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
from app.db.tables import ModelCard
from tests.fake_hub import FakeHub, FakeRepo, running_hub
from tests.staff.conftest import SALES, sign_in

NEW_MODEL: dict[str, Any] = {
    **json.loads((SEED_DIR / "models" / "qwen3-8b.json").read_text()), "num_hidden_layers": 40}


@pytest.fixture
def fake_hub() -> Iterator[FakeHub]:
    for hub in running_hub():
        hub.add(FakeRepo("Acme/New-Model-9B", NEW_MODEL))
        yield hub


@pytest.fixture
def staff(make_client: Callable[..., TestClient], users: SessionFactory,
          fake_hub: FakeHub) -> tuple[TestClient, str]:
    client = make_client(hub_endpoint=fake_hub.endpoint)
    client.headers["Accept-Language"] = "en"
    return client, sign_in(client, SALES)


def test_a_repository_id_fills_the_config_and_the_id_then_saves(
    staff: tuple[TestClient, str], users: SessionFactory, fake_hub: FakeHub
) -> None:
    client, token = staff
    preview = client.post("/staff/models/import", data={
        "csrf_token": token, "hub_id": "acme/new-model-9b", "action": "preview"})
    assert preview.status_code == 200, preview.text[:500]
    assert 'id="p-total">' in preview.text
    assert 'value="Acme/New-Model-9B"' in preview.text  # the Hub's spelling, for hf_id
    textarea = re.search(r'<textarea id="f-config"[^>]*>([^<]*)</textarea>', preview.text)
    assert textarea is not None
    config = json.loads(textarea.group(1).replace("&#34;", '"').replace("&quot;", '"'))
    assert config == NEW_MODEL
    saved = client.post("/staff/models/import", data={
        "csrf_token": token, "config": json.dumps(config), "slug": "new-model-9b",
        "hf_id": "Acme/New-Model-9B", "family": "Acme", "license": "apache-2.0",
        "action": "save"})
    assert saved.status_code == 303, saved.text[:500]
    with users() as session:
        card = session.scalars(select(ModelCard).where(ModelCard.slug == "new-model-9b")).one()
    assert card.config == NEW_MODEL and card.hf_id == "Acme/New-Model-9B"


def test_a_repository_the_hub_does_not_have_is_named_beside_the_field(
    staff: tuple[TestClient, str],
) -> None:
    client, token = staff
    response = client.post("/staff/models/import", data={
        "csrf_token": token, "hub_id": "nobody/nothing", "action": "preview"})
    assert response.status_code == 422
    error = re.search(r'id="err-hub_id" class="field-error"[^>]*>([^<]+)<', response.text)
    assert error is not None
    assert error.group(1).startswith("Hugging Face has no public model nobody/nothing")
