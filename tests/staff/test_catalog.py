"""Catalog editing: edits with optimistic locking, audit rows, archive, create, model import."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from decimal import Decimal

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.config import SEED_DIR
from app.db.session import SessionFactory
from app.db.tables import AuditLog, CatalogRevision, GpuSku, ModelCard, System
from tests.staff.conftest import ADMIN, SALES, hidden

StaffClient = Callable[..., tuple[TestClient, str]]


def _form_values(html: str) -> dict[str, str]:
    """What a browser would send back from the catalog form."""
    form = html[html.index('id="catalog-form"'):html.index("</form>", html.index(
        'id="catalog-form"'))]
    values = {name: value for tag, name, value in re.findall(
        r'(<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"[^>]*>)', form)
        if 'type="checkbox"' not in tag or " checked" in tag}  # as a browser: ticked boxes
    for name, body in re.findall(r'<textarea[^>]*name="([^"]+)"[^>]*>([^<]*)</textarea>', form):
        values[name] = body
    for name, options in re.findall(r'<select[^>]*name="([^"]+)"[^>]*>(.*?)</select>', form,
                                    re.S):
        chosen = re.search(r'value="([^"]*)" selected', options) or re.search(
            r'value="([^"]*)"', options)
        values[name] = chosen.group(1) if chosen else ""
    return {k: v.replace("&amp;", "&").replace("&#39;", "'").replace("&#34;", '"')
            for k, v in values.items()}


def _count(factory: SessionFactory, table: type) -> int:
    with factory() as session:
        return int(session.scalar(select(func.count()).select_from(table)) or 0)


def _price(factory: SessionFactory, slug: str) -> Decimal | None:
    with factory() as session:
        return session.scalars(select(GpuSku.price_eur_net).where(GpuSku.slug == slug)).one()


def test_edit_price_writes_audit_and_bumps_the_revision(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, _ = staff_client(SALES)
    before = _count(users, AuditLog)
    with users() as session:
        revision = session.scalars(select(CatalogRevision.revision)).one()
    form = _form_values(client.get("/staff/catalog/gpus/rtx-pro-6000").text)
    response = client.post("/staff/catalog/gpus/rtx-pro-6000",
                           data={**form, "price_eur_net": "8.499,00"})
    assert response.status_code == 303, response.text
    assert _price(users, "rtx-pro-6000") == Decimal("8499.00")
    with users() as session:
        entry = session.scalars(select(AuditLog).order_by(AuditLog.id.desc())).first()
        assert entry is not None and entry.actor == SALES[0] and entry.action == "update"
        # the seed's indicative list price, now the price staff set (issue 27, point 4)
        assert entry.before is not None and entry.before["price_eur_net"] == "7379.17"
        assert entry.before["price_indicative"] is True
        assert entry.after is not None and entry.after["price_eur_net"] == "8499.00"
        assert entry.after["price_indicative"] is False and entry.after["price_source"] == "staff"
        assert session.scalars(select(CatalogRevision.revision)).one() == revision + 1
    assert _count(users, AuditLog) == before + 1
    # the storefront sees the new price at once: the save dropped the app's catalog snapshot
    assert "€8,499.00" in client.get("/?model=llama-3.1-8b").text


def test_second_save_of_a_stale_form_is_a_conflict_and_overwrites_nothing(
    staff_client: StaffClient, users: SessionFactory, htmx: bool
) -> None:
    alice, _ = staff_client(SALES)
    bob, _ = staff_client(ADMIN)
    form_a = _form_values(alice.get("/staff/catalog/gpus/rtx-pro-6000").text)
    form_b = _form_values(bob.get("/staff/catalog/gpus/rtx-pro-6000").text)
    assert alice.post("/staff/catalog/gpus/rtx-pro-6000",
                      data={**form_a, "price_eur_net": "8000"}).status_code == 303
    headers = {"HX-Request": "true"} if htmx else {}
    response = bob.post("/staff/catalog/gpus/rtx-pro-6000",
                        data={**form_b, "price_eur_net": "7000"}, headers=headers)
    assert response.status_code == 409
    assert "Someone else saved this entry since you opened it." in response.text
    assert ('value="8,000.00"' in response.text)  # the current version is shown
    assert ("<html" in response.text) is not htmx
    assert _price(users, "rtx-pro-6000") == Decimal("8000.00")


def test_bad_input_is_422_beside_the_field_and_writes_nothing(
    staff_client: StaffClient, users: SessionFactory, htmx: bool
) -> None:
    client, _ = staff_client(SALES)
    form = _form_values(client.get("/staff/catalog/gpus/rtx-pro-6000").text)
    audit_before = _count(users, AuditLog)
    headers = {"HX-Request": "true"} if htmx else {}
    cases = [
        ({"price_eur_net": "-1"}, "price_eur_net", "Must not be negative."),
        ({"name": ""}, "name", "This field is required."),
        ({"memory_bandwidth_gbps": "fast"}, "memory_bandwidth_gbps", "Enter a number"),
        ({"usable_bytes": "0"}, "usable_bytes", "must be greater than 0"),
        ({"product_url": "javascript:alert(1)"}, "product_url", "must start with https://"),
    ]
    for change, field, message in cases:
        response = client.post("/staff/catalog/gpus/rtx-pro-6000", data={**form, **change},
                               headers=headers)
        assert response.status_code == 422, (change, response.status_code)
        assert re.search(rf'id="err-{field}" class="field-error">[^<]*{re.escape(message)}',
                         response.text), (field, response.text[:2000])
    assert _price(users, "rtx-pro-6000") == Decimal("7379.17")  # the seed's, untouched
    assert _count(users, AuditLog) == audit_before


def test_create_gpu_and_system_and_duplicate_slug(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, _ = staff_client(SALES)
    form = _form_values(client.get("/staff/catalog/gpus/rtx-pro-6000").text)
    form.pop("version")
    response = client.post("/staff/catalog/gpus/new", data={**form, "slug": "rtx-pro-6000"})
    assert response.status_code == 422 and "already taken" in response.text
    response = client.post("/staff/catalog/gpus/new",
                           data={**form, "slug": "rtx-pro-6000-max", "name": "Max-Q"})
    assert response.status_code == 303
    assert client.get("/staff/catalog/gpus/rtx-pro-6000-max").status_code == 200
    system = {"slug": "ws-2x-maxq", "name": "WS 2x Max-Q", "kind": "workstation",
              "gpu_slug": "rtx-pro-6000-max", "gpu_count": "2", "gpu_interconnect": "PCIe",
              "stock_status": "on_request", "price_eur_net": "20000"}
    csrf = hidden(client.get("/staff/catalog/systems/new").text, "csrf_token")
    assert client.post("/staff/catalog/systems/new",
                       data={**system, "csrf_token": csrf}).status_code == 303
    bad = client.post("/staff/catalog/systems/new",
                      data={**system, "csrf_token": csrf, "slug": "x2", "gpu_count": "0"})
    assert bad.status_code == 422 and 'id="err-gpu_count"' in bad.text
    with users() as session:
        row = session.scalars(select(System).where(System.slug == "ws-2x-maxq")).one()
        assert row.gpu_count == 2 and row.price_eur_net == Decimal("20000.00")
        actions = session.scalars(select(AuditLog.action)).all()
        assert actions.count("create") == 2


def test_archive_hides_from_customers_and_restore_brings_back(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(SALES)
    page = client.get("/staff/catalog/gpus/rtx-pro-4500").text
    version = hidden(page, "version")
    assert client.post("/staff/catalog/gpus/rtx-pro-4500/archive",
                       data={"csrf_token": token, "version": version}).status_code == 303
    with users() as session:
        assert session.scalars(select(GpuSku.active).where(GpuSku.slug == "rtx-pro-4500")
                               ).one() is False
    assert "RTX PRO 4500" not in client.get("/?model=llama-3.1-8b").text
    stale = client.post("/staff/catalog/gpus/rtx-pro-4500/restore",
                        data={"csrf_token": token, "version": version})
    assert stale.status_code == 409
    version = hidden(client.get("/staff/catalog/gpus/rtx-pro-4500").text, "version")
    assert client.post("/staff/catalog/gpus/rtx-pro-4500/restore",
                       data={"csrf_token": token, "version": version}).status_code == 303
    assert "RTX PRO 4500" in client.get("/?model=llama-3.1-8b").text


def test_model_import_previews_then_saves_and_rejects_bad_configs(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(SALES)
    seeded_models = _count(users, ModelCard)
    config = json.loads((SEED_DIR / "models" / "llama-3.1-8b.json").read_text())
    base = {"csrf_token": token, "slug": "my-llama", "hf_id": "me/my-llama",
            "family": "Llama", "license": "llama3.1"}
    preview = client.post("/staff/models/import",
                          data={**base, "config": json.dumps(config), "action": "preview"})
    assert preview.status_code == 200
    assert 'id="p-total">8,030,261,248<' in preview.text
    assert 'id="p-embedding">525,336,576<' in preview.text
    assert _count(users, ModelCard) == seeded_models  # nothing saved by a preview
    for bad, message in (("{not json", "Not valid JSON"),
                         ('{"model_type": "bert"}', "is not supported"),
                         ("[1, 2]", "is a JSON object"),
                         ('{"model_type": "llama"}', "config")):
        response = client.post("/staff/models/import",
                               data={**base, "config": bad, "action": "save"})
        assert response.status_code == 422, bad
        assert re.search(r'id="err-config" class="field-error">[^<]*' + re.escape(message),
                         response.text), bad
    dup = client.post("/staff/models/import",
                      data={**base, "slug": "llama-3.1-8b", "config": json.dumps(config),
                            "action": "save"})
    assert dup.status_code == 422 and "already taken" in dup.text
    empty = client.post("/staff/models/import",
                        data={**base, "hf_id": "", "config": json.dumps(config),
                              "action": "save"})
    assert empty.status_code == 422 and 'id="err-hf_id"' in empty.text
    assert _count(users, ModelCard) == seeded_models
    # upload as a file
    saved = client.post("/staff/models/import", data={**base, "action": "save"},
                        files={"config_file": ("config.json", json.dumps(config),
                                               "application/json")})
    assert saved.status_code == 303, saved.text
    assert saved.headers["location"] == "/staff/catalog/models/my-llama?saved=1"
    with users() as session:
        card = session.scalars(select(ModelCard).where(ModelCard.slug == "my-llama")).one()
        assert card.params_total == 8_030_261_248 and card.hf_id == "me/my-llama"
        assert session.scalars(select(AuditLog.action)).all()[-1] == "import"
    assert "my-llama" in client.get("/").text


def test_system_and_model_edit_forms_reject_bad_input(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, _ = staff_client(SALES)
    form = _form_values(client.get("/staff/catalog/systems/ws-1x-rtx-pro-6000").text)
    assert form["gpu_slug"] == "rtx-pro-6000"
    for change, field in (({"price_eur_net": "-10"}, "price_eur_net"),
                          ({"name": "  "}, "name"), ({"gpu_count": "-1"}, "gpu_count"),
                          ({"gpu_slug": "no-such-card"}, "gpu_slug")):
        response = client.post("/staff/catalog/systems/ws-1x-rtx-pro-6000",
                               data={**form, **change})
        assert response.status_code == 422, change
        assert re.search(rf'id="err-{field}" class="field-error">[^<]+<', response.text), change
    model = _form_values(client.get("/staff/catalog/models/llama-3.1-8b").text)
    response = client.post("/staff/catalog/models/llama-3.1-8b", data={**model, "hf_id": ""})
    assert response.status_code == 422 and 'id="err-hf_id"' in response.text
    assert _count(users, AuditLog) == 0
    ok = client.post("/staff/catalog/models/llama-3.1-8b", data={**model, "license": "other"})
    assert ok.status_code == 303
    with users() as session:
        assert session.scalars(select(ModelCard.license).where(
            ModelCard.slug == "llama-3.1-8b")).one() == "other"


def test_a_seed_price_is_marked_indicative_until_staff_confirm_it(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    """Issue 27, point 4: the list and the form mark the seed's public list price; ticking
    "confirm" (the price unchanged) makes it staff's, audited, and the storefront no longer
    calls it indicative."""
    client, _ = staff_client(SALES)
    listing = client.get("/staff/catalog/gpus").text
    assert re.search(r"€7,379\.17 \(indicative\)", listing)
    page = client.get("/staff/catalog/gpus/rtx-pro-6000").text
    assert 'id="price-indicative"' in page and "USD 8,565" in page
    assert 'name="price_confirm" type="checkbox"' in page
    assert 'name="price_confirm"' not in client.get("/staff/catalog/gpus/rtx-pro-4500").text
    shop = client.get("/?model=llama-3.1-8b&gpu=rtx-pro-6000").text
    assert re.search(r'id="card-rtx-pro-6000".*?indicative</small>', shop, re.S)
    form = _form_values(page)
    assert "price_confirm" not in form  # an unticked box is not sent
    kept = client.post("/staff/catalog/gpus/rtx-pro-6000", data={**form, "stock_status":
                                                                  "in_stock"})
    assert kept.status_code == 303
    with users() as session:
        row = session.scalars(select(GpuSku).where(GpuSku.slug == "rtx-pro-6000")).one()
        assert row.price_indicative and row.stock_status == "in_stock"
    form = _form_values(client.get("/staff/catalog/gpus/rtx-pro-6000").text)
    confirmed = client.post("/staff/catalog/gpus/rtx-pro-6000",
                            data={**form, "price_confirm": "1"})
    assert confirmed.status_code == 303
    with users() as session:
        row = session.scalars(select(GpuSku).where(GpuSku.slug == "rtx-pro-6000")).one()
        assert (row.price_eur_net, row.price_indicative, row.price_source) == (
            Decimal("7379.17"), False, "staff")
        entry = session.scalars(select(AuditLog).order_by(AuditLog.id.desc())).first()
        assert entry is not None and entry.after is not None and entry.before is not None
        assert (entry.before["price_indicative"], entry.after["price_indicative"]) == (True,
                                                                                     False)
    assert 'id="price-indicative"' not in client.get("/staff/catalog/gpus/rtx-pro-6000").text
    shop = client.get("/?model=llama-3.1-8b&gpu=rtx-pro-6000").text
    row_html = re.search(r'<tr id="card-rtx-pro-6000".*?</tr>', shop, re.S)
    assert row_html and "indicative" not in row_html.group(0)
