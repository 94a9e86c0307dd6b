"""Partner API keys on the desk (admins only): issued once, listed, revoked, audited."""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import select

from app.accounts import api_keys
from app.db.session import SessionFactory
from app.db.tables import AuditLog
from tests.staff.conftest import ADMIN, SALES

StaffClient = Callable[..., tuple[TestClient, str]]


def test_issue_shows_the_key_once_list_and_revoke(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(ADMIN)
    response = client.post("/staff/api-keys", data={
        "csrf_token": token, "partner_name": "ACME Compute GmbH", "label": "prod"})
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    match = re.search(r'id="issued-key">(gsz_[A-Za-z0-9_-]+)<', response.text)
    assert match
    plaintext = match.group(1)
    listing = client.get("/staff/api-keys").text
    assert plaintext not in listing and plaintext[:12] in listing and "ACME Compute GmbH" in listing
    with users() as session:
        assert api_keys.authenticate(session, plaintext=plaintext) is not None
    assert client.post(f"/staff/api-keys/{plaintext[:12]}/revoke",
                       data={"csrf_token": token}).status_code == 303
    with users() as session:
        assert api_keys.authenticate(session, plaintext=plaintext) is None
        actions = session.scalars(select(AuditLog.action).where(AuditLog.entity == "api_key")
                                  ).all()
        assert actions == ["issue", "revoke"]


def test_bad_input_and_sales_staff(staff_client: StaffClient, users: SessionFactory) -> None:
    client, token = staff_client(ADMIN)
    response = client.post("/staff/api-keys", data={
        "csrf_token": token, "partner_name": "", "rate_limit_per_minute": "-3"})
    assert response.status_code == 422
    assert 'id="err-partner_name" class="field-error">This field is required.' in response.text
    with users() as session:
        assert api_keys.list_keys(session) == []
    sales, sales_token = staff_client(SALES)
    assert sales.get("/staff/api-keys").status_code == 403
    assert sales.post("/staff/api-keys", data={
        "csrf_token": sales_token, "partner_name": "X"}).status_code == 403


def test_suspending_a_partner_refuses_all_its_keys_until_reinstated(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(ADMIN)
    with users.begin() as session:
        _, first = api_keys.issue_key(session, partner_name="ACME Compute GmbH")
        _, second = api_keys.issue_key(session, partner_name="ACME Compute GmbH")
        _, other = api_keys.issue_key(session, partner_name="Other Reseller")
    listing = client.get("/staff/api-keys").text
    assert re.search(r'id="partner-acme-compute-gmbh".*?<td>2</td>', listing, re.S)

    assert client.post("/staff/api-keys/partners/acme-compute-gmbh/suspend",
                       data={"csrf_token": token}).status_code == 303
    with users() as session:
        assert api_keys.authenticate(session, plaintext=first) is None
        assert api_keys.authenticate(session, plaintext=second) is None
        assert api_keys.authenticate(session, plaintext=other) is not None
    assert "suspended" in client.get("/staff/api-keys").text
    refused = client.get("/api/v1/gpus", headers={"Authorization": f"Bearer {first}"})
    assert refused.status_code == 401 and "suspended" in refused.json()["detail"]
    assert client.post("/staff/api-keys/partners/acme-compute-gmbh/suspend",
                       data={"csrf_token": token}).status_code == 303  # again: no change

    assert client.post("/staff/api-keys/partners/acme-compute-gmbh/reinstate",
                       data={"csrf_token": token}).status_code == 303
    with users() as session:
        assert api_keys.authenticate(session, plaintext=first) is not None
        actions = session.scalars(select(AuditLog.action).where(AuditLog.entity == "partner")
                                  .order_by(AuditLog.id)).all()
        assert actions == ["suspend", "reinstate"]


def test_partners_are_for_admins_and_unknown_ones_are_404(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    with users.begin() as session:
        api_keys.issue_key(session, partner_name="ACME Compute GmbH")
    sales, sales_token = staff_client(SALES)
    assert sales.post("/staff/api-keys/partners/acme-compute-gmbh/suspend",
                      data={"csrf_token": sales_token}).status_code == 403
    client, token = staff_client(ADMIN)
    assert client.post("/staff/api-keys/partners/nobody/suspend",
                       data={"csrf_token": token}).status_code == 404
    with users() as session:
        assert all(p.active for p in api_keys.list_partners(session))
        assert session.scalars(select(AuditLog).where(AuditLog.entity == "partner")).all() == []
