"""Partner API keys on the desk (admins only): issued once, listed, revoked, audited; the
partner is picked explicitly, and a new one that reads like an existing one is refused."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.accounts import api_keys
from app.db.session import SessionFactory
from app.db.tables import AuditLog
from tests.conftest import caches_of
from tests.security.catalogue import BAD_PARTNER_NAMES, BadPartnerName
from tests.staff.conftest import ADMIN, SALES

StaffClient = Callable[..., tuple[TestClient, str]]


def test_issue_shows_the_key_once_list_and_revoke(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(ADMIN)
    checked = caches_of(client).key_checks  # the app's: its routes drop them
    response = client.post("/staff/api-keys", data={
        "csrf_token": token, "partner_id": "new", "new_partner_name": "ACME Compute GmbH",
        "label": "prod"})
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    match = re.search(r'id="issued-key">(gsz_[A-Za-z0-9_-]+)<', response.text)
    assert match
    plaintext = match.group(1)
    listing = client.get("/staff/api-keys").text
    assert plaintext not in listing and plaintext[:12] in listing and "ACME Compute GmbH" in listing
    with users() as session:
        assert api_keys.authenticate(session, plaintext=plaintext, checked=checked) is not None
    assert client.post(f"/staff/api-keys/{plaintext[:12]}/revoke",
                       data={"csrf_token": token}).status_code == 303
    with users() as session:
        assert api_keys.authenticate(session, plaintext=plaintext, checked=checked) is None
        actions = session.scalars(select(AuditLog.action).where(AuditLog.entity == "api_key")
                                  ).all()
        assert actions == ["issue", "revoke"]
        created = session.scalars(select(AuditLog).where(AuditLog.entity == "partner")).one()
        assert created.action == "create" and created.entity_key == "acme-compute-gmbh"


def test_bad_input_and_sales_staff(staff_client: StaffClient, users: SessionFactory) -> None:
    client, token = staff_client(ADMIN)
    response = client.post("/staff/api-keys", data={
        "csrf_token": token, "partner_id": "new", "new_partner_name": "",
        "rate_limit_per_minute": "-3"})
    assert response.status_code == 422
    assert 'id="err-new_partner_name" class="field-error">This field is required.' \
        in response.text
    for partner_id, message in (("", "Choose a partner, or a new partner."),
                                ("²", "Choose one of the offered values."),
                                ("99999999999", "Choose one of the offered values."),
                                ("12345", "Choose one of the offered values.")):
        response = client.post("/staff/api-keys", data={
            "csrf_token": token, "partner_id": partner_id})
        assert response.status_code == 422, partner_id
        assert f'id="err-partner_id" class="field-error">{message}' in response.text
    with users() as session:
        assert api_keys.list_keys(session) == []
    sales, sales_token = staff_client(SALES)
    assert sales.get("/staff/api-keys").status_code == 403
    assert sales.post("/staff/api-keys", data={
        "csrf_token": sales_token, "partner_id": "new", "new_partner_name": "X"}
    ).status_code == 403


def test_suspending_a_partner_refuses_all_its_keys_until_reinstated(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(ADMIN)
    checked = caches_of(client).key_checks  # the app's: its routes drop them
    with users.begin() as session:
        acme = api_keys.create_partner(session, name="ACME Compute GmbH").id
        _, first = api_keys.issue_key(session, partner_id=acme)
        _, second = api_keys.issue_key(session, partner_id=acme)
        other_id = api_keys.create_partner(session, name="Other Reseller").id
        _, other = api_keys.issue_key(session, partner_id=other_id)
    listing = client.get("/staff/api-keys").text
    assert re.search(r'id="partner-acme-compute-gmbh".*?<td>2</td>', listing, re.S)

    assert client.post(f"/staff/api-keys/partners/{acme}/suspend",
                       data={"csrf_token": token}).status_code == 303
    with users() as session:
        assert api_keys.authenticate(session, plaintext=first, checked=checked) is None
        assert api_keys.authenticate(session, plaintext=second, checked=checked) is None
        assert api_keys.authenticate(session, plaintext=other, checked=checked) is not None
    assert "suspended" in client.get("/staff/api-keys").text
    refused = client.get("/api/v1/gpus", headers={"Authorization": f"Bearer {first}"})
    assert refused.status_code == 401 and "suspended" in refused.json()["detail"]
    issued = client.post("/staff/api-keys", data={"csrf_token": token, "partner_id": str(acme)})
    assert issued.status_code == 422  # no new key for a suspended partner
    assert "This partner is suspended. Reinstate it first." in issued.text
    assert client.post(f"/staff/api-keys/partners/{acme}/suspend",
                       data={"csrf_token": token}).status_code == 303  # again: no change

    assert client.post(f"/staff/api-keys/partners/{acme}/reinstate",
                       data={"csrf_token": token}).status_code == 303
    with users() as session:
        assert api_keys.authenticate(session, plaintext=first, checked=checked) is not None
        actions = session.scalars(select(AuditLog.action).where(AuditLog.entity == "partner")
                                  .order_by(AuditLog.id)).all()
        assert actions == ["suspend", "reinstate"]


def test_partners_are_for_admins_and_unknown_ones_are_404(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    with users.begin() as session:
        acme = api_keys.create_partner(session, name="ACME Compute GmbH").id
        api_keys.issue_key(session, partner_id=acme)
    sales, sales_token = staff_client(SALES)
    assert sales.post(f"/staff/api-keys/partners/{acme}/suspend",
                      data={"csrf_token": sales_token}).status_code == 403
    client, token = staff_client(ADMIN)
    for nobody in ("acme-compute-gmbh", "999999", "²", "99999999999999999999"):
        assert client.post(f"/staff/api-keys/partners/{nobody}/suspend",
                           data={"csrf_token": token}).status_code == 404, nobody
    with users() as session:
        assert all(p.active for p in api_keys.list_partners(session))
        assert session.scalars(select(AuditLog).where(AuditLog.entity == "partner")).all() == []


def test_a_new_partner_that_reads_like_an_existing_one_is_refused_with_the_reason(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    """Regression (issue 13, point 6): "Müller AG" and "Ä" used to join "Muller AG" and "A"
    by their ASCII slug, and the new key then listed that partner's quote requests."""
    client, token = staff_client(ADMIN)
    with users.begin() as session:
        muller = api_keys.create_partner(session, name="Muller AG").id
        api_keys.issue_key(session, partner_id=muller)
        letter_a = api_keys.create_partner(session, name="A").id
    for name, existing in (("Müller AG", "Muller AG (muller-ag)"), ("MULLER-AG", "Muller AG"),
                           ("Ä", "A (a)")):
        response = client.post("/staff/api-keys", data={
            "csrf_token": token, "partner_id": "new", "new_partner_name": name})
        assert response.status_code == 422, name
        assert re.search(r'id="err-new_partner_name" class="field-error">[^<]*reads like the '
                         rf"existing partner {re.escape(existing)}", response.text), name
        assert 'id="issued-key"' not in response.text
    with users() as session:
        assert sorted(p.name for p in api_keys.list_partners(session)) == ["A", "Muller AG"]
        assert [k.partner_id for k in api_keys.list_keys(session)] == [muller]
        assert session.scalars(select(AuditLog).where(AuditLog.entity == "partner")).all() == []

    # Picking the existing partner explicitly is how a second key for it is issued.
    picked = client.post("/staff/api-keys", data={"csrf_token": token,
                                                  "partner_id": str(letter_a)})
    assert picked.status_code == 200 and 'id="issued-key"' in picked.text
    with users() as session:
        assert sorted(k.partner_id for k in api_keys.list_keys(session)) == sorted(
            [muller, letter_a])


def test_picking_a_partner_and_naming_a_new_one_at_once_is_refused(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(ADMIN)
    with users.begin() as session:
        acme = api_keys.create_partner(session, name="ACME Compute GmbH").id
    response = client.post("/staff/api-keys", data={
        "csrf_token": token, "partner_id": str(acme), "new_partner_name": "Someone Else"})
    assert response.status_code == 422
    assert "Leave this empty, or choose a new partner above." in response.text
    with users() as session:
        assert api_keys.list_keys(session) == []
        assert [p.name for p in api_keys.list_partners(session)] == ["ACME Compute GmbH"]


def test_the_issue_form_in_german_names_the_collision(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(ADMIN)
    client.headers["Accept-Language"] = "de"
    with users.begin() as session:
        api_keys.create_partner(session, name="Muller AG")
    response = client.post("/staff/api-keys", data={
        "csrf_token": token, "partner_id": "new", "new_partner_name": "Müller AG"})
    assert response.status_code == 422
    assert "Müller AG klingt wie der bestehende Partner Muller AG (muller-ag)" in response.text


@pytest.mark.parametrize("entry", BAD_PARTNER_NAMES, ids=lambda e: e.id)
def test_the_desk_refuses_every_bad_partner_name_of_the_catalogue(
    staff_client: StaffClient, users: SessionFactory, entry: BadPartnerName
) -> None:
    client, token = staff_client(ADMIN)
    if entry.existing is not None:
        with users.begin() as session:
            api_keys.create_partner(session, name=entry.existing)
    response = client.post("/staff/api-keys", data={
        "csrf_token": token, "partner_id": "new", "new_partner_name": entry.name})
    assert response.status_code == 422
    assert re.search(r'id="err-new_partner_name" class="field-error">[^<]+<', response.text)
    if entry.existing is not None:
        assert f"existing partner {entry.existing} (" in response.text
    with users() as session:
        assert [p.name for p in api_keys.list_partners(session)] == (
            [entry.existing] if entry.existing else [])
        assert api_keys.list_keys(session) == []
