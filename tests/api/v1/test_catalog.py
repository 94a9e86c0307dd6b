"""Catalog reads: lists, details, 404, model search and cursor pages, ETag and 304."""

from __future__ import annotations

from decimal import Decimal

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.catalog import service as catalog_service
from app.catalog.seed import load_seed_catalog
from app.db.session import SessionFactory
from app.db.tables import GpuSku
from tests.api.v1.conftest import assert_problem
from tests.conftest import caches_of

SEED = load_seed_catalog()


def test_gpus_and_systems_list_the_active_catalog(client: TestClient, auth: dict[str, str]) -> None:
    gpus = client.get("/api/v1/gpus", headers=auth).json()["items"]
    assert {g["slug"] for g in gpus} == {g.slug for g in SEED.active_only().gpus}
    systems = client.get("/api/v1/systems", headers=auth).json()["items"]
    assert {s["slug"] for s in systems} == {s.slug for s in SEED.active_only().systems}
    assert all(s["gpu"] in {g["slug"] for g in gpus} for s in systems)


def test_one_card_with_price_as_a_decimal_string(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    with seeded.begin() as session:
        row = session.scalars(select(GpuSku).where(GpuSku.slug == "rtx-pro-6000")).one()
        row.price_eur_net = Decimal("8990.5")
        catalog_service.record_catalog_write(session, caches_of(client).catalog)
    gpu = client.get("/api/v1/gpus/rtx-pro-6000", headers=auth).json()
    assert gpu["price_eur_net"] == "8990.50"
    assert gpu["stock_status"] in ("in_stock", "on_order", "on_request")


@pytest.mark.parametrize("path", [
    "/api/v1/gpus/no-such-card", "/api/v1/systems/nope", "/api/v1/models/llama-99",
    "/api/v1/models/%C3%BCnic%C3%B6de", "/api/v1/gpus/" + "x" * 300,
])
def test_unknown_slugs_are_404_problems(client: TestClient, auth: dict[str, str],
                                        path: str) -> None:
    assert_problem(client.get(path, headers=auth), 404, "not_found")


def test_a_model_s_detail_has_its_config(client: TestClient, auth: dict[str, str]) -> None:
    model = client.get("/api/v1/models/llama-3.1-8b", headers=auth).json()
    assert model["params"]["total"] == 8030261248
    assert model["config"]["model_type"] == "llama"


def test_cursor_pages_walk_every_model_once_in_slug_order(
    client: TestClient, auth: dict[str, str]
) -> None:
    seen: list[str] = []
    cursor = None
    for _ in range(20):
        params: dict[str, str | int] = {"limit": 7, **({"cursor": cursor} if cursor else {})}
        page = client.get("/api/v1/models", params=params, headers=auth).json()
        assert len(page["items"]) <= 7
        seen += [m["slug"] for m in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(m.slug for m in SEED.models)


def test_search_and_family_filter(client: TestClient, auth: dict[str, str]) -> None:
    found = client.get("/api/v1/models", params={"q": "QWEN3-3", "limit": 100},
                       headers=auth).json()
    assert [m["slug"] for m in found["items"]] == ["qwen3-30b-a3b", "qwen3-32b"]
    family = SEED.model("mixtral-8x7b").family
    by_family = client.get("/api/v1/models", params={"family": family.upper()},
                           headers=auth).json()["items"]
    assert {m["slug"] for m in by_family} == {m.slug for m in SEED.models
                                              if m.family == family}
    empty = client.get("/api/v1/models", params={"q": "no-such"}, headers=auth).json()
    assert empty == {"items": [], "next_cursor": None}


@pytest.mark.parametrize("params", [
    {"limit": 0}, {"limit": 101}, {"limit": "ten"}, {"cursor": "%%%"}, {"q": "x" * 101},
])
def test_bad_page_parameters_are_422_with_the_field(
    client: TestClient, auth: dict[str, str], params: dict[str, str | int]
) -> None:
    body = assert_problem(client.get("/api/v1/models", params=params, headers=auth), 422)
    assert len(body["errors"]) == 1
    assert body["errors"][0]["location"].startswith("query.")


@pytest.mark.parametrize("path", [
    "/api/v1/gpus", "/api/v1/gpus/h200-nvl", "/api/v1/systems", "/api/v1/models?q=llama",
    "/api/v1/models/qwen3-8b",
])
def test_reads_carry_an_etag_and_a_matching_if_none_match_is_304(
    client: TestClient, auth: dict[str, str], path: str
) -> None:
    first = client.get(path, headers=auth)
    etag = first.headers["ETag"]
    assert first.headers["Cache-Control"].startswith("private, max-age=")
    again = client.get(path, headers={**auth, "If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["ETag"] == etag
    weak = client.get(path, headers={**auth, "If-None-Match": f'"other", W/{etag}'})
    assert weak.status_code == 304
    assert client.get(path, headers={**auth, "If-None-Match": '"stale"'}).status_code == 200


def test_a_catalog_write_changes_the_etag(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    etag = client.get("/api/v1/gpus", headers=auth).headers["ETag"]
    with seeded.begin() as session:
        row = session.scalars(select(GpuSku).where(GpuSku.slug == "h200-nvl")).one()
        row.stock_status = "in_stock"
        catalog_service.record_catalog_write(session, caches_of(client).catalog)
    changed = client.get("/api/v1/gpus", headers={**auth, "If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag
