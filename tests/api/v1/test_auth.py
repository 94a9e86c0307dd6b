"""Keys: Bearer auth, 401 shapes, revocation, last use, hash-only storage, `sizer apikey`."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.accounts import api_keys
from app.caches import Caches
from app.cli import main as sizer
from app.db.base import utcnow
from app.db.session import SessionFactory
from app.db.tables import ApiKey, Partner
from tests.api.v1.conftest import assert_problem
from tests.conftest import caches_of


def test_a_valid_key_reads_the_catalog(client: TestClient, auth: dict[str, str]) -> None:
    assert client.get("/api/v1/gpus", headers=auth).status_code == 200


@pytest.mark.parametrize("header", [
    None, "Bearer", "Bearer gsz_not-a-real-key", "Basic dXNlcjpwYXNz", "Bearer " + "x" * 500,
    "Bearer gsz_\u00fcn\u00efcode".encode(),
])
def test_missing_or_bad_keys_are_401_with_a_bearer_challenge(
    client: TestClient, key: str, header: str | bytes | None
) -> None:
    headers: dict[str, str] | dict[bytes, bytes] = {}
    if isinstance(header, bytes):  # raw bytes reach the server as sent, not re-encoded
        headers = {b"Authorization": header}
    elif header is not None:
        headers = {"Authorization": header}
    response = client.get("/api/v1/gpus", headers=headers)
    assert_problem(response, 401, "unauthorized")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/api/v1/models"), ("GET", "/api/v1/systems/x"), ("POST", "/api/v1/estimates"),
    ("POST", "/api/v1/recommendations"), ("POST", "/api/v1/quote-requests"),
    ("GET", "/api/v1/quote-requests/Q-AAAAAAAA"),
])
def test_every_data_endpoint_needs_a_key(client: TestClient, method: str, path: str) -> None:
    assert_problem(client.request(method, path, json={}), 401)


def test_the_contract_and_docs_are_public(client: TestClient) -> None:
    assert client.get("/api/v1/openapi.json").status_code == 200
    assert client.get("/api/v1/docs").status_code == 200


def test_a_revoked_key_is_401_at_once(
    client: TestClient, key: str, auth: dict[str, str], seeded: SessionFactory
) -> None:
    assert client.get("/api/v1/gpus", headers=auth).status_code == 200
    checked = caches_of(client).key_checks  # revoked in the app's process
    with seeded.begin() as session:
        api_keys.revoke_key(session, prefix=key[: api_keys.PREFIX_LENGTH], checked=checked)
    assert_problem(client.get("/api/v1/gpus", headers=auth), 401)


def test_an_inactive_partner_s_keys_stop_working(
    client: TestClient, auth: dict[str, str], seeded: SessionFactory
) -> None:
    with seeded.begin() as session:
        for partner in session.scalars(select(Partner)):
            partner.active = False
    assert_problem(client.get("/api/v1/gpus", headers=auth), 401)


def test_use_is_recorded_and_only_the_hash_is_stored(
    client: TestClient, key: str, auth: dict[str, str], seeded: SessionFactory
) -> None:
    with seeded() as session:
        row = session.scalars(select(ApiKey)).one()
        assert row.last_used_at is None
        assert row.key_hash == hashlib.sha256(key.encode()).hexdigest()
        assert key not in {row.prefix, row.key_hash, row.label}
        assert key.startswith(row.prefix)
    client.get("/api/v1/gpus", headers=auth)
    with seeded() as session:
        assert session.scalars(select(ApiKey)).one().last_used_at is not None


def test_use_is_written_at_most_once_a_minute(
    api: Callable[..., TestClient], auth: dict[str, str], seeded: SessionFactory
) -> None:
    now = [1000.0]
    client = api(caches=Caches(key_checks=api_keys.KeyCheckCache(clock=lambda: now[0])))
    client.get("/api/v1/gpus", headers=auth)
    with seeded() as session:
        first = session.scalars(select(ApiKey)).one().last_used_at
    client.get("/api/v1/gpus", headers=auth)
    with seeded.begin() as session:
        row = session.scalars(select(ApiKey)).one()
        assert row.last_used_at == first
        assert first is not None
        row.last_used_at = first - api_keys.LAST_USED_RESOLUTION
    now[0] += api_keys.PRINCIPAL_CACHE_S  # the key is looked up again
    client.get("/api/v1/gpus", headers=auth)
    with seeded() as session:
        later = session.scalars(select(ApiKey)).one().last_used_at
        assert later is not None and later > first


def test_a_key_revoked_by_another_process_stops_within_the_cache_interval(
    api: Callable[..., TestClient], key: str, auth: dict[str, str], seeded: SessionFactory
) -> None:
    now = [1000.0]
    client = api(caches=Caches(key_checks=api_keys.KeyCheckCache(clock=lambda: now[0])))
    assert client.get("/api/v1/gpus", headers=auth).status_code == 200
    with seeded.begin() as session:  # `sizer apikey revoke` elsewhere: our cache is untouched
        session.scalars(select(ApiKey)).one().revoked_at = utcnow()
    now[0] += api_keys.PRINCIPAL_CACHE_S / 2
    assert client.get("/api/v1/gpus", headers=auth).status_code == 200
    now[0] += api_keys.PRINCIPAL_CACHE_S / 2
    assert_problem(client.get("/api/v1/gpus", headers=auth), 401)


def test_issue_list_revoke_as_services(seeded: SessionFactory) -> None:
    with seeded.begin() as session:
        acme = api_keys.create_partner(session, name="ACME Compute GmbH").id
        first, plain1 = api_keys.issue_key(session, partner_id=acme, label="a")
        second, plain2 = api_keys.issue_key(session, partner_id=acme)
        assert plain1 != plain2 and first.partner_slug == second.partner_slug
        assert first.partner_slug == "acme-compute-gmbh"
    with seeded.begin() as session:
        assert [k.prefix for k in api_keys.list_keys(session)] == [first.prefix, second.prefix]
        checked = api_keys.KeyCheckCache()
        revoked = api_keys.revoke_key(session, prefix=first.prefix, checked=checked)
        assert revoked.revoked_at is not None and not revoked.active
        assert api_keys.authenticate(session, plaintext=plain1, checked=checked) is None
        principal = api_keys.authenticate(session, plaintext=plain2, checked=checked)
        assert principal is not None and principal.partner_slug == "acme-compute-gmbh"
        assert len(session.scalars(select(Partner)).all()) == 1


def test_sizer_apikey_create_list_revoke(
    database_url: str, seeded: SessionFactory, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], api: Callable[..., TestClient],
) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    assert sizer(["apikey", "create", "--new-partner", "Demo Reseller", "--rate-limit", "5"]) \
        == 0
    out = capsys.readouterr()
    key = next(line.split()[-1] for line in out.out.splitlines() if line.startswith("key:"))
    assert "shown only once" in out.err
    now = [1000.0]
    client = api(caches=Caches(key_checks=api_keys.KeyCheckCache(clock=lambda: now[0])))
    response = client.get("/api/v1/gpus", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200
    assert response.headers["RateLimit-Limit"] == "5"

    assert sizer(["apikey", "list"]) == 0
    listing = capsys.readouterr().out
    assert key[:12] in listing and "demo-reseller" in listing and key not in listing

    assert sizer(["apikey", "revoke", key[:12]]) == 0
    assert "revoked" in capsys.readouterr().out
    # The command runs in a process of its own: the server's checked key lapses in a second.
    now[0] += api_keys.PRINCIPAL_CACHE_S
    assert client.get("/api/v1/gpus", headers={"Authorization": f"Bearer {key}"}).status_code \
        == 401
    assert sizer(["apikey", "revoke", "gsz_nothere"]) == 2
    assert "no key" in capsys.readouterr().err
