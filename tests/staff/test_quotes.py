"""The quote desk: list, open, price with lines, conflicts, send, the customer's priced page."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, text

from app.accounts import api_keys
from app.catalog import revision
from app.db.session import SessionFactory
from app.db.tables import AuditLog, QuoteLine, QuoteRequest
from app.quotes import desk, validity
from tests.staff.conftest import SALES, hidden, request_quote

StaffClient = Callable[..., tuple[TestClient, str]]


def _reference(factory: SessionFactory) -> str:
    with factory() as session:
        return str(session.scalars(select(QuoteRequest.reference)).one())


def _price(factory: SessionFactory, slug: str, price: str) -> None:
    with factory.begin() as session:  # as a catalog writer in another process would
        session.execute(text("UPDATE gpu_sku SET price_eur_net = :p WHERE slug = :s"),
                        {"p": price, "s": slug})
        revision.bump(session)


def _lines(factory: SessionFactory) -> list[tuple[str, int, Decimal, Decimal]]:
    with factory() as session:
        rows = session.scalars(select(QuoteLine).order_by(QuoteLine.position)).all()
        return [(r.description, r.quantity, r.unit_price_eur_net, r.discount_percent)
                for r in rows]


def _open(client: TestClient, reference: str) -> tuple[str, str]:
    page = client.get(f"/staff/quotes/{reference}")
    assert page.status_code == 200
    return page.text, hidden(page.text, "version")


def add_card_line(client: TestClient, token: str, reference: str) -> None:
    """One free-text line, 1 x 100 EUR, added through the desk's form."""
    _, version = _open(client, reference)
    client.post(f"/staff/quotes/{reference}/lines", data={
        "csrf_token": token, "version": version, "item_slug": "other:",
        "description": "Card", "quantity": "1", "unit_price": "100"})


def test_list_shows_storefront_requests_and_filters_by_status(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, _ = staff_client(SALES)
    request_quote(client, company="Babbage & Co")
    reference = _reference(users)
    page = client.get("/staff/quotes")
    assert reference in page.text and "Babbage &amp; Co" in page.text and "Storefront" in page.text
    assert reference in client.get("/staff/quotes?status=new").text
    empty = client.get("/staff/quotes?status=sent", headers={"HX-Request": "true"})
    assert reference not in empty.text and "No quote requests." in empty.text
    assert "<html" not in empty.text  # the htmx answer is the table block only


def test_quote_page_shows_the_sizing_snapshot_and_prefills_the_catalog_price(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    _price(users, "rtx-pro-6000", "8999.00")
    client, _ = staff_client(SALES)
    request_quote(client)
    text_, _ = _open(client, _reference(users))
    assert "Sizing snapshot" in text_ and "llama-3.1-8b" in text_
    assert "36.1\u00a0GB" in text_  # total per GPU from the stored sizing (engine 1.16.0)
    assert 'value="gpu:rtx-pro-6000" selected' in text_
    assert 'id="f-unit_price" name="unit_price" inputmode="decimal" value="8,999.00"' in text_


def test_lines_totals_send_and_the_customers_priced_page(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    _price(users, "rtx-pro-6000", "8999.00")
    client, token = staff_client(SALES)
    q_path = request_quote(client)
    reference = _reference(users)
    _, version = _open(client, reference)
    # catalog price when the field is empty
    response = client.post(f"/staff/quotes/{reference}/lines", data={
        "csrf_token": token, "version": version, "item_slug": "gpu:rtx-pro-6000",
        "quantity": "2", "unit_price": "", "discount_percent": "10"})
    assert response.status_code == 303, response.text
    page, version = _open(client, reference)
    response = client.post(f"/staff/quotes/{reference}/lines", data={
        "csrf_token": token, "version": version, "item_slug": "other:",
        "description": "Installation", "quantity": "1", "unit_price": "1.234,50",
        "discount_percent": "0"})
    assert response.status_code == 303
    (card, installation) = _lines(users)
    assert card[0].startswith("NVIDIA RTX PRO 6000")  # the catalog name
    assert card[1:] == (2, Decimal("8999.00"), Decimal("10.00"))
    assert installation == ("Installation", 1, Decimal("1234.50"), Decimal("0.00"))
    page, version = _open(client, reference)
    # 2 x 8999 x 0.9 = 16198.20; + 1234.50 = 17432.70; VAT 19 % (DE) = 3312.21
    assert 'id="total-net">€17,432.70<' in page
    assert 'id="total-vat">€3,312.21<' in page and 'id="total-gross">€20,744.91<' in page
    assert "in_progress" in page
    response = client.post(f"/staff/quotes/{reference}", data={
        "csrf_token": token, "version": version, "status": "in_progress",
        "staff_notes": "Delivery in two weeks.", "valid_until": "2099-01-31"})
    assert response.status_code == 303
    _, version = _open(client, reference)
    assert client.post(f"/staff/quotes/{reference}/send",
                       data={"csrf_token": token, "version": version,
                             "confirm": "1"}).status_code == 303
    # the catalog price changes afterwards; the sent quote does not
    _price(users, "rtx-pro-6000", "1.00")
    customer = client.get(q_path).text
    assert 'id="priced-quote"' in customer and "Delivery in two weeks." in customer
    assert "€20,744.91" in customer and "Jan 31, 2099" in customer
    assert "Our general terms and conditions apply." in customer
    printable = client.get(f"/staff/quotes/{reference}/print").text
    assert "€20,744.91" in printable and "Sizing breakdown" in printable
    assert "Terms" in printable
    with users() as session:
        row = session.scalars(select(QuoteRequest)).one()
        assert row.status == "sent" and row.sent_at is not None
        assert row.vat_rate_percent == Decimal("19.00")
        actions = session.scalars(select(AuditLog.action).order_by(AuditLog.id)).all()
        assert actions == ["add_line", "add_line", "update", "send"]
    # frozen: no more lines
    page, version = _open(client, reference)
    assert 'id="add-line"' not in page and "Prices are frozen" in page
    response = client.post(f"/staff/quotes/{reference}/lines", data={
        "csrf_token": token, "version": version, "item_slug": "other:",
        "description": "More", "quantity": "1", "unit_price": "5"})
    assert response.status_code == 409 and len(_lines(users)) == 2


def test_bad_line_input_is_422_beside_the_field_and_writes_nothing(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(SALES)
    request_quote(client)
    reference = _reference(users)
    _, version = _open(client, reference)
    cases = [
        ({"unit_price": "-5", "item_slug": "other:", "description": "x"}, "unit_price",
         "Must not be negative."),
        ({"unit_price": "5", "item_slug": "other:", "description": ""}, "description",
         "required"),
        ({"unit_price": "", "item_slug": "gpu:rtx-pro-5000-48gb"}, "unit_price",
         "no catalog price; enter one"),
        ({"unit_price": "5", "item_slug": "other:", "description": "x", "quantity": "0"},
         "quantity", "Enter a number from 1 to"),
        ({"unit_price": "5", "item_slug": "other:", "description": "x",
          "discount_percent": "120"}, "discount_percent", "Enter a number from 0 to 100"),
    ]
    for fields, field, message in cases:
        response = client.post(f"/staff/quotes/{reference}/lines",
                               data={"csrf_token": token, "version": version, "quantity": "1",
                                     **fields})
        assert response.status_code == 422, (fields, response.status_code)
        assert re.search(rf'id="err-{field}" class="field-error">[^<]*{re.escape(message)}',
                         response.text), (field, message)
    assert _lines(users) == []
    with users() as session:
        assert session.scalar(select(func.count()).select_from(AuditLog)) == 0


def test_a_comparison_card_is_refused_beside_the_field_in_german(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    """A comparison card (not sold by the shop) never becomes a quote line; the desk says so
    beside the item field, in the staff member's language."""
    client, token = staff_client(SALES)
    request_quote(client)
    reference = _reference(users)
    _, version = _open(client, reference)
    for lang, message in (("en", "a comparison card, not sold by the shop"),
                          ("de", "eine Vergleichskarte, nicht bei uns erhältlich")):
        client.headers["Accept-Language"] = lang
        response = client.post(f"/staff/quotes/{reference}/lines",
                               data={"csrf_token": token, "version": version, "quantity": "1",
                                     "item_slug": "gpu:h200-sxm", "unit_price": "5"})
        assert response.status_code == 422, (lang, response.status_code)
        assert re.search(rf'id="err-item_slug" class="field-error">[^<]*{re.escape(message)}',
                         response.text), (lang, message)
    assert _lines(users) == []


def test_stale_version_is_a_conflict_and_nothing_is_overwritten(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(SALES)
    request_quote(client)
    reference = _reference(users)
    _, version = _open(client, reference)
    first = client.post(f"/staff/quotes/{reference}", data={
        "csrf_token": token, "version": version, "status": "in_progress",
        "staff_notes": "mine"})
    assert first.status_code == 303
    second = client.post(f"/staff/quotes/{reference}", data={
        "csrf_token": token, "version": version, "status": "in_progress",
        "staff_notes": "theirs"})
    assert second.status_code == 409
    assert "Someone else changed this quote" in second.text
    with users() as session:
        assert session.scalars(select(QuoteRequest.staff_notes)).one() == "mine"


def test_reverse_charge_for_an_eu_business_with_a_vat_id(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(SALES)
    request_quote(client, country="AT", vat_id="ATU12345678")
    reference = _reference(users)
    add_card_line(client, token, reference)
    page, _ = _open(client, reference)
    assert "reverse charge" in page and 'id="total-gross">€100.00<' in page


def test_sending_needs_a_line(staff_client: StaffClient, users: SessionFactory) -> None:
    client, token = staff_client(SALES)
    request_quote(client)
    reference = _reference(users)
    _, version = _open(client, reference)
    response = client.post(f"/staff/quotes/{reference}/send",
                           data={"csrf_token": token, "version": version, "confirm": "1"})
    assert response.status_code == 422 and "add at least one line" in response.text


def test_partner_requests_are_listed_with_their_partner(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, _ = staff_client(SALES)
    request_quote(client)
    with users.begin() as session:
        partner = api_keys.create_partner(session, name="ACME Compute")
        session.execute(text("UPDATE quote_request SET partner_id = :p"), {"p": partner.id})
    assert "Partner: ACME Compute" in client.get("/staff/quotes").text
    page, _ = _open(client, _reference(users))
    assert "ACME Compute" in page


def test_details_form_rejects_a_bad_date_and_a_sent_quote_can_be_accepted(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(SALES)
    q_path = request_quote(client)
    reference = _reference(users)
    _, version = _open(client, reference)
    bad = client.post(f"/staff/quotes/{reference}", data={
        "csrf_token": token, "version": version, "status": "in_progress",
        "valid_until": "31.12.2099"})
    assert bad.status_code == 422
    assert 'id="err-valid_until" class="field-error">Enter a date like 2026-12-31.' in bad.text
    past = client.post(f"/staff/quotes/{reference}", data={
        "csrf_token": token, "version": version, "status": "sent"})
    assert past.status_code == 422 and "send the quote first" in past.text
    client.post(f"/staff/quotes/{reference}/lines", data={
        "csrf_token": token, "version": version, "item_slug": "other:",
        "description": "Card", "quantity": "1", "unit_price": "100"})
    _, version = _open(client, reference)
    assert client.post(f"/staff/quotes/{reference}/send",
                       data={"csrf_token": token, "version": version,
                             "confirm": "1"}).status_code == 303
    _, version = _open(client, reference)
    assert client.post(f"/staff/quotes/{reference}", data={
        "csrf_token": token, "version": version, "status": "accepted"}).status_code == 303
    assert "recorded on the desk" in client.get(q_path).text
    with users() as session:
        row = session.scalars(select(QuoteRequest)).one()
        assert row.status == "accepted" and row.valid_until is not None  # 30 days by default
        assert row.accepted_via == "desk" and row.accepted_at is not None


def _lapse(users: SessionFactory) -> str:
    """The one request becomes a quote sent with a validity that ended yesterday."""
    with users.begin() as session:
        row = session.scalars(select(QuoteRequest)).one()
        row.status = "sent"
        row.sent_at = row.created_at
        row.valid_until = validity.today() - timedelta(days=1)
        return row.reference


def test_a_sent_quote_past_its_validity_is_expired_for_the_customer_and_the_desk(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, _ = staff_client(SALES)
    q_path = request_quote(client)
    reference = _lapse(users)
    assert "This offer has expired." in client.get(q_path).text
    assert reference in client.get("/staff/quotes?status=expired").text
    assert reference not in client.get("/staff/quotes?status=sent").text
    with users() as session:  # nothing was written: it is read so
        assert session.scalars(select(QuoteRequest.status)).one() == "sent"


def _references(factory: SessionFactory) -> list[str]:
    """Every stored reference, oldest first."""
    with factory() as session:
        return list(session.scalars(select(QuoteRequest.reference).order_by(QuoteRequest.id)))


def test_the_list_comes_a_page_at_a_time_and_reaches_the_oldest_request(
    staff_client: StaffClient, users: SessionFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression (issue 13, point 5): the desk showed the newest 500 and no more."""
    monkeypatch.setattr(desk, "PAGE_SIZE", 2)
    client, _ = staff_client(SALES)
    for i in range(3):
        request_quote(client, company=f"Customer {i}")
    oldest, middle, newest = _references(users)
    first = client.get("/staff/quotes").text
    assert newest in first and middle in first and oldest not in first
    older = re.search(r'id="older-page" rel="next" href="([^"]+)"', first)
    assert older is not None and 'id="newest-page"' not in first
    second = client.get(older.group(1).replace("&amp;", "&")).text
    assert oldest in second and newest not in second
    assert 'id="older-page"' not in second and 'id="newest-page"' in second
    filtered = client.get("/staff/quotes?status=new").text
    assert 'href="/staff/quotes?status=new&amp;before=' in filtered


@pytest.mark.parametrize("cursor", ["²", "abc", "0", "99999999999", "-1", "1e3"])
def test_a_bad_page_cursor_is_refused_beside_the_pager_and_the_newest_shown(
    staff_client: StaffClient, users: SessionFactory, cursor: str
) -> None:
    client, _ = staff_client(SALES)
    request_quote(client)
    response = client.get("/staff/quotes", params={"before": cursor})
    assert response.status_code == 422
    assert 'id="err-before" class="field-error">This link to older requests is not valid.' \
        in response.text
    assert _reference(users) in response.text


def test_staff_mark_a_request_as_spam_from_the_list_and_take_it_back(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(SALES)
    request_quote(client, company="Real Customer GmbH")
    request_quote(client, company="Cheap Pills Ltd")
    real, spam = _references(users)
    listing = client.get("/staff/quotes").text
    assert f'id="quote-{spam}"' in listing and 'name="spam" value="1"' in listing
    assert client.post(f"/staff/quotes/{spam}/spam", data={}).status_code == 403  # CSRF
    marked = client.post(f"/staff/quotes/{spam}/spam",
                         data={"csrf_token": token, "spam": "1", "back": "list"})
    assert marked.status_code == 303 and marked.headers["location"] == "/staff/quotes"
    listing = client.get("/staff/quotes").text
    assert real in listing and spam not in listing
    assert spam not in client.get("/staff/quotes?status=new").text
    spam_list = client.get("/staff/quotes?status=spam").text
    assert spam in spam_list and real not in spam_list and "Not spam" in spam_list
    detail = client.get(f"/staff/quotes/{spam}").text
    assert 'id="marked-spam"' in detail
    with users() as session:  # kept in the database, audited with who did it
        assert session.scalars(select(QuoteRequest.spam).where(
            QuoteRequest.reference == spam)).one() is True
        entry = session.scalars(select(AuditLog).where(AuditLog.action == "mark_spam")).one()
        assert entry.entity_key == spam and entry.actor == SALES[0]
    back = client.post(f"/staff/quotes/{spam}/spam", data={"csrf_token": token, "spam": "0"})
    assert back.status_code == 303 and back.headers["location"] == f"/staff/quotes/{spam}"
    assert spam in client.get("/staff/quotes").text


def test_a_sent_quote_cannot_be_marked_as_spam_on_the_desk(
    staff_client: StaffClient, users: SessionFactory
) -> None:
    client, token = staff_client(SALES)
    request_quote(client)
    reference = _reference(users)
    with users.begin() as session:
        session.execute(text("UPDATE quote_request SET sent_at = CURRENT_TIMESTAMP, "
                             "status = 'sent'"))
    assert 'id="spam-form"' not in client.get(f"/staff/quotes/{reference}").text
    response = client.post(f"/staff/quotes/{reference}/spam",
                           data={"csrf_token": token, "spam": "1"})
    assert response.status_code == 422
    assert 'id="spam-error"' in response.text and "can&#39;t be marked as spam" in response.text
    with users() as session:
        assert session.scalars(select(QuoteRequest.spam)).one() is False


def test_sending_needs_the_confirmation_box(
    staff_client: Callable[..., tuple[TestClient, str]], users: SessionFactory,
) -> None:
    """Issue 18, point 10: "Send quote" freezes prices, so the form asks to confirm first."""
    client, token = staff_client(SALES)
    request_quote(client)
    reference = _reference(users)
    page, _ = _open(client, reference)
    assert 'id="f-confirm" name="confirm" type="checkbox" value="1" required' in page
    add_card_line(client, token, reference)
    _, version = _open(client, reference)
    refused = client.post(f"/staff/quotes/{reference}/send",
                          data={"csrf_token": token, "version": version})
    assert refused.status_code == 422 and "Tick the box to confirm" in refused.text
    assert 'id="sent-note"' not in client.get(f"/staff/quotes/{reference}").text


def test_the_quote_page_shows_the_setup_the_customer_s_sizing_assumed(
    staff_client: StaffClient, users: SessionFactory, make_client: Callable[..., TestClient],
) -> None:
    """Issue 27, point 5: LoRA Llama 3.1 8B, batch 4 at 2,048 tokens does not fit the RTX PRO
    5000 48GB as set; the request keeps the setup it fits with, and the desk shows it."""
    shop = make_client()
    shop.headers["Accept-Language"] = "en"
    quote = "/quote?item=gpu:rtx-pro-5000-48gb&model=llama-3.1-8b&method=lora&batch=4&seq=2048"
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">',
                             shop.get(quote).text))
    from tests.staff.conftest import CONTACT

    assert shop.post("/quote", data={**fields, **CONTACT}).status_code == 303
    client, _ = staff_client(SALES)
    page, _ = _open(client, _reference(users))
    assert "Fits with a standard setting" in page
    setup = re.search(r'<dd id="assumed-setup">([^<]*)</dd>', page)
    assert setup and setup.group(1).startswith("gradient checkpointing: "), page[:3000]
    assert re.search(r"per GPU, [\d.]+ h$", setup.group(1))


@pytest.mark.parametrize(("language", "word"), [("en", "indicative"), ("de", "Richtpreis")])
def test_the_desk_says_the_customer_asked_at_an_indicative_price(
    staff_client: StaffClient, users: SessionFactory, language: str, word: str,
) -> None:
    """The RTX PRO 6000's seed list price was shown "indicative" on the result the customer
    asked from; the desk's sizing snapshot says so beside the price."""
    client, _ = staff_client(SALES)
    request_quote(client)
    page = client.get(f"/staff/quotes/{_reference(users)}",
                      headers={"Accept-Language": language}).text
    asked = re.search(r'<span id="asked-price">([^<]*)</span>', page)
    assert asked is not None and asked.group(1).endswith(f", {word})")
