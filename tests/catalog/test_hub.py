"""Hub import by repository id (issue 16, point 3), against a fake Hub on 127.0.0.1: success,
gated, missing, slow and oversized answers, the cache with its commit (SQLite and PostgreSQL),
and the bounds (id, bytes, time, one fetch per repository at a time)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.catalog import hub
from app.catalog.hub import HubAccess, HubFlights, choose_model, hub_model, parse_ref
from app.catalog.inline_config import MAX_CONFIG_BYTES, MAX_DOCUMENT_BYTES
from app.catalog.seed import load_seed_catalog
from app.config import SEED_DIR
from app.db.tables import HubConfig
from app.errors import DomainError, InvalidInput, NotFound, Unavailable
from tests.fake_hub import FakeHub, FakeRepo, running_hub

QWEN3_8B: dict[str, Any] = json.loads((SEED_DIR / "models" / "qwen3-8b.json").read_text())
HF_CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
NEW_MODEL = {**QWEN3_8B, "num_hidden_layers": 40}


@pytest.fixture
def fake_hub() -> Iterator[FakeHub]:
    yield from running_hub()


def _access(fake_hub: FakeHub, **overrides: Any) -> HubAccess:
    values: dict[str, Any] = {"flights": HubFlights(), "endpoint": fake_hub.endpoint,
                              "timeout_s": 5.0, **overrides}
    return HubAccess(**values)


def _refusal(call: Any) -> DomainError:
    with pytest.raises(DomainError) as caught:
        call()
    return caught.value


def test_a_repository_s_config_is_fetched_at_its_commit_and_kept(
    fake_hub: FakeHub, session: Session
) -> None:
    repo = fake_hub.add(FakeRepo("Acme/New-Model-9B", NEW_MODEL))
    access = _access(fake_hub)
    found = hub_model(session, parse_ref("acme/new-model-9b"), access=access)
    assert found.config == NEW_MODEL
    assert found.repo_id == "Acme/New-Model-9B"  # as the Hub spells it
    assert found.commit_sha == repo.revisions["main"]
    assert fake_hub.paths() == [
        "/api/models/acme/new-model-9b",
        f"/acme/new-model-9b/resolve/{repo.revisions['main']}/config.json",
    ]
    row = session.scalars(select(HubConfig)).one()
    assert (row.repo_key, row.revision, row.commit_sha) == (
        "acme/new-model-9b", "main", repo.revisions["main"])
    assert row.config == NEW_MODEL

    again = hub_model(session, parse_ref("ACME/new-model-9B"), access=access)
    assert again.config == NEW_MODEL and again.commit_sha == found.commit_sha
    assert len(fake_hub.paths()) == 2  # the kept copy: no request


def test_a_revision_is_looked_up_by_its_own_model_info(
    fake_hub: FakeHub, session: Session
) -> None:
    repo = fake_hub.add(FakeRepo("acme/m", NEW_MODEL, revisions={"v1.0": "a" * 40}))
    found = hub_model(session, parse_ref("acme/m@v1.0"), access=_access(fake_hub))
    assert found.commit_sha == "a" * 40 and found.revision == "v1.0"
    assert fake_hub.paths() == ["/api/models/acme/m/revision/v1.0",
                                f"/acme/m/resolve/{'a' * 40}/config.json"]
    assert repo.revisions["main"] != found.commit_sha


def test_a_branch_is_fetched_again_after_the_cache_time_and_a_commit_never(
    fake_hub: FakeHub, session: Session
) -> None:
    fake_hub.add(FakeRepo("acme/m", NEW_MODEL, revisions={"pinned": "b" * 40}))
    access = _access(fake_hub, cache_hours=24)
    past = datetime(2026, 1, 1, tzinfo=UTC)
    hub_model(session, parse_ref("acme/m"), access=access, now=lambda: past)
    hub_model(session, parse_ref("acme/m@" + "b" * 40), access=access, now=lambda: past)
    assert len(fake_hub.paths()) == 4
    later = past + timedelta(hours=25)
    hub_model(session, parse_ref("acme/m"), access=access, now=lambda: later)
    hub_model(session, parse_ref("acme/m@" + "b" * 40), access=access, now=lambda: later)
    assert len(fake_hub.paths()) == 6  # the branch again; the commit never
    assert session.scalars(select(HubConfig.fetched_at).where(
        HubConfig.revision == "main")).one() == later


def test_a_gated_repository_needs_the_shop_s_token(fake_hub: FakeHub, session: Session) -> None:
    fake_hub.add(FakeRepo("meta-llama/Gated-1B", NEW_MODEL, gated_token="hf_shop_token"))
    refused = _refusal(lambda: hub_model(session, parse_ref("meta-llama/Gated-1B"),
                                         access=_access(fake_hub)))
    assert isinstance(refused, InvalidInput)
    assert (refused.field, refused.key) == ("model", "hub_gated")
    assert "config.json instead" in refused.reason
    found = hub_model(session, parse_ref("meta-llama/Gated-1B"),
                      access=_access(fake_hub, token="hf_shop_token"))
    assert found.config == NEW_MODEL
    assert fake_hub.requests[-1][1] == "Bearer hf_shop_token"


def test_no_token_is_sent_unless_the_shop_set_one(
    fake_hub: FakeHub, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_someone_elses_login")
    fake_hub.add(FakeRepo("acme/m", NEW_MODEL))
    hub_model(session, parse_ref("acme/m"), access=_access(fake_hub))
    assert [auth for _, auth in fake_hub.requests] == ["", ""]


@pytest.mark.parametrize(("model", "key", "error_type"), [
    ("nobody/nothing", "hub_not_found", NotFound),
    ("acme/m@no-such-branch", "hub_revision_not_found", NotFound),
    ("acme/weights-only", "hub_no_config", InvalidInput),
])
def test_what_the_hub_does_not_have_is_named(
    fake_hub: FakeHub, session: Session, model: str, key: str, error_type: type[DomainError]
) -> None:
    fake_hub.add(FakeRepo("acme/m", NEW_MODEL))
    fake_hub.add(FakeRepo("acme/weights-only", None))
    refused = _refusal(lambda: hub_model(session, parse_ref(model), access=_access(fake_hub)))
    assert isinstance(refused, error_type)
    assert (refused.field, refused.key) == ("model", key)
    assert session.scalars(select(HubConfig)).all() == []


@pytest.mark.parametrize("drip", [False, True], ids=["silent", "dripping"])
def test_a_slow_hub_is_cut_off_at_the_timeout(
    fake_hub: FakeHub, session: Session, drip: bool
) -> None:
    fake_hub.add(FakeRepo("acme/slow", NEW_MODEL, slow_s=0.2 if drip else 30, drip=drip))
    started = time.monotonic()
    refused = _refusal(lambda: hub_model(session, parse_ref("acme/slow"),
                                         access=_access(fake_hub, timeout_s=1.0)))
    assert time.monotonic() - started < 3
    assert isinstance(refused, Unavailable)
    assert (refused.field, refused.key, refused.status_code) == ("model", "hub_timeout", 503)


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "undeclared"])
def test_an_oversized_config_is_refused_without_reading_it_all(
    fake_hub: FakeHub, session: Session, declared: bool
) -> None:
    fake_hub.add(FakeRepo("acme/huge", NEW_MODEL, oversize=MAX_DOCUMENT_BYTES + 1,
                          declare_length=declared))
    refused = _refusal(lambda: hub_model(session, parse_ref("acme/huge"),
                                         access=_access(fake_hub)))
    assert isinstance(refused, InvalidInput)
    assert (refused.field, refused.key) == ("model", "hub_too_large")


def test_a_config_of_exactly_the_limit_is_read(fake_hub: FakeHub, session: Session) -> None:
    fake_hub.add(FakeRepo("acme/big", NEW_MODEL, oversize=MAX_CONFIG_BYTES))
    found = hub_model(session, parse_ref("acme/big"), access=_access(fake_hub))
    assert found.config["num_hidden_layers"] == 40


def test_a_3_mb_quantised_export_is_read_with_its_layer_list_summarised(
    fake_hub: FakeHub, session: Session
) -> None:
    """nvidia/MiniMax-M3-NVFP4 (issue 29): 3,087,083 bytes, nearly all of it the ModelOpt
    layer list; read, summarised, and kept within the 256 KB a kept config may take."""
    release = json.loads((HF_CONFIGS / "minimax-m3-nvfp4.json").read_text())
    fake_hub.add(FakeRepo("nvidia/MiniMax-M3-NVFP4", release))
    found = hub_model(session, parse_ref("nvidia/MiniMax-M3-NVFP4"), access=_access(fake_hub))
    assert found.config["text_config"] == release["text_config"]
    assert found.config["quantization_config"]["quantized_layers"] == {
        "entries": len(release["quantization_config"]["quantized_layers"])}
    assert len(json.dumps(found.config)) <= MAX_CONFIG_BYTES
    kept = session.scalars(select(HubConfig)).one()
    assert kept.config == found.config


def test_an_unreachable_hub_is_a_clear_503_and_a_kept_copy_still_serves(
    fake_hub: FakeHub, session: Session
) -> None:
    fake_hub.add(FakeRepo("acme/m", NEW_MODEL))
    past = datetime(2026, 1, 1, tzinfo=UTC)
    hub_model(session, parse_ref("acme/m"), access=_access(fake_hub), now=lambda: past)
    gone = _access(fake_hub, endpoint="http://127.0.0.1:9")  # nothing listens on port 9
    stale = hub_model(session, parse_ref("acme/m"), access=gone)
    assert stale.config == NEW_MODEL and stale.fetched_at == past
    refused = _refusal(lambda: hub_model(session, parse_ref("acme/other"), access=gone))
    assert isinstance(refused, Unavailable)
    assert refused.key == "hub_unreachable" and "config.json instead" in refused.reason


@pytest.mark.parametrize("model", [
    "a/b/c", "-acme/m", "acme/m-", "acme/--m", "acme/m..x", "acme/" + "m" * 97,
    "ac me/m", "acme/m@", "acme/m@../../etc", "acme/m@" + "r" * 129, "acme/m@a b",
    "acme/ünicode", "/m", "acme/", "acme/m" + "@x" * 5000,
])
def test_an_id_that_is_not_one_is_refused_before_any_request(
    fake_hub: FakeHub, model: str
) -> None:
    refused = _refusal(lambda: choose_model(None, load_seed_catalog(), model,
                                            access=_access(fake_hub)))
    assert isinstance(refused, InvalidInput)
    assert (refused.field, refused.key) == ("model", "hub_repo_invalid")
    assert fake_hub.paths() == []


def test_a_repository_the_catalog_holds_is_the_catalog_s_model(fake_hub: FakeHub) -> None:
    session = None
    catalog = load_seed_catalog()
    assert choose_model(session, catalog, "qwen/QWEN3-8b", access=_access(fake_hub)).slug == (
        "qwen3-8b")
    assert choose_model(session, catalog, "qwen3-8b", access=_access(fake_hub)).slug == (
        "qwen3-8b")
    assert fake_hub.paths() == []
    fake_hub.add(FakeRepo("Qwen/Qwen3-8B", NEW_MODEL, revisions={"v2": "c" * 40}))
    pinned = choose_model(session, catalog, "Qwen/Qwen3-8B@v2", access=_access(fake_hub))
    assert pinned.slug is None and pinned.hub is not None and pinned.config == NEW_MODEL


def test_one_fetch_per_repository_at_a_time(fake_hub: FakeHub) -> None:
    fake_hub.add(FakeRepo("acme/slowish", NEW_MODEL, slow_s=0.5))
    access = _access(fake_hub)
    answers: list[Any] = []

    def ask() -> None:
        answers.append(hub_model(None, parse_ref("acme/slowish"), access=access).commit_sha)

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(answers) == 6 and len(set(answers)) == 1
    assert sum(path.endswith("/config.json") for path in fake_hub.paths()) == 1
    assert access.flights.running() == 0


def test_more_fetches_than_the_limit_are_told_to_try_again(fake_hub: FakeHub) -> None:
    fake_hub.add(FakeRepo("acme/a", NEW_MODEL, slow_s=1.0))
    fake_hub.add(FakeRepo("acme/b", NEW_MODEL))
    access = _access(fake_hub, flights=HubFlights(limit=1))
    first = threading.Thread(target=lambda: hub_model(None, parse_ref("acme/a"), access=access))
    first.start()
    deadline = time.monotonic() + 5
    while access.flights.running() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    refused = _refusal(lambda: hub_model(None, parse_ref("acme/b"), access=access))
    first.join(10)
    assert isinstance(refused, Unavailable) and refused.key == "hub_busy"
    assert hub_model(None, parse_ref("acme/b"), access=access).config == NEW_MODEL


def test_only_model_info_and_config_json_are_ever_asked_for(
    fake_hub: FakeHub, session: Session
) -> None:
    fake_hub.add(FakeRepo("acme/m", NEW_MODEL))
    hub_model(session, parse_ref("acme/m"), access=_access(fake_hub))
    assert all(path.startswith("/api/models/") or path.endswith("/config.json")
               for path in fake_hub.paths())
    assert hub.MAX_REPO_ID_CHARS == 193


def test_a_modelopt_hf_quant_config_becomes_the_quantization_config(
    fake_hub: FakeHub, session: Session
) -> None:
    """As vLLM reads a ModelOpt 0.29 release: the file the model info lists, fetched at the
    same commit, flattened into config.json's quantization_config; its long module list
    summarised as any quantisation section."""
    excluded = [f"model.layers.{n}.mlp.gate" for n in range(20000)]
    quant = {"producer": {"name": "modelopt", "version": "0.29.0"},
             "quantization": {"quant_algo": "NVFP4", "exclude_modules": excluded}}
    repo = fake_hub.add(FakeRepo("acme/m-fp4", NEW_MODEL, hf_quant_config=quant))
    found = hub_model(session, parse_ref("acme/m-fp4"), access=_access(fake_hub))
    assert found.config == {**NEW_MODEL, "quantization_config": {
        "quant_method": "modelopt", "quant_algo": "NVFP4",
        "exclude_modules": {"entries": 20000}, "producer": quant["producer"]}}
    assert fake_hub.paths()[1:] == [
        f"/acme/m-fp4/resolve/{repo.revisions['main']}/config.json",
        f"/acme/m-fp4/resolve/{repo.revisions['main']}/hf_quant_config.json"]
    own = {**NEW_MODEL, "quantization_config": {"quant_method": "fp8"}}
    fake_hub.add(FakeRepo("acme/m-own", own, hf_quant_config=quant))
    assert hub_model(session, parse_ref("acme/m-own"), access=_access(fake_hub)).config == own
