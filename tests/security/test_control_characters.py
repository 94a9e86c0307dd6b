"""Control characters in every text input (issue 24, point 1): one check
(``app/text_input.py``) refuses them with a 422 naming the field, on every route and in every
form field, and a NUL never reaches the database. PostgreSQL refused a NUL with a 500 (and a
traceback in the log) on ``POST /q/abc%00def/accept`` and in five staff forms; SQLite stored
``\\x00``, ``\\x01`` and ``\\x7f`` as they came. SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from sqlalchemy import String, Text, select

from app import text_input
from app.accounts import api_keys
from app.db.base import Base
from app.db.session import SessionFactory
from app.errors import InvalidInput
from tests.cli.runner import sizer
from tests.staff.conftest import (  # noqa: F401 (fixtures)
    ADMIN,
    _fast_hashes,
    request_quote,
    staff_client,
    users,
)
from tests.staff.test_accept_quote import Sent, sent  # noqa: F401 (fixture)
from tests.web.conftest import client, make_client, seeded  # noqa: F401 (fixtures)

StaffClient = Callable[[tuple[str, str]], tuple[TestClient, str]]
CONTROL = ("\x00", "\x01", "\x08", "\x1b", "\x7f", "\x85")
"""NUL, SOH, backspace, escape, DEL, a C1 control: what the probe sent, and two more."""
REFUSED = "Please leave out control characters."


# --- the one check ---------------------------------------------------------------------------


@pytest.mark.parametrize("character", [*CONTROL, "\t", "\n", "\r", "\ud800", "\udfff"])
def test_a_single_line_field_refuses_every_control_character(character: str) -> None:
    assert text_input.control_character(f"ACME{character}GmbH") == character
    with pytest.raises(InvalidInput) as refused:
        text_input.check(f"ACME{character}", "company")
    assert refused.value.field == "company" and refused.value.status_code == 422


@pytest.mark.parametrize("character", ["\t", "\n", "\r"])
def test_a_multi_line_field_keeps_tab_and_line_breaks(character: str) -> None:
    assert text_input.control_character(f"Two{character}please", multiline=True) is None


@pytest.mark.parametrize("character", [*CONTROL, "\ud800"])
def test_a_multi_line_field_refuses_the_rest(character: str) -> None:
    assert text_input.control_character(f"Two{character}", multiline=True) == character


@pytest.mark.parametrize("text", ["Müller & Söhne", "株式会社", "ACME Computе", "“quoted” — €5"])
def test_ordinary_text_in_any_script_passes(text: str) -> None:
    assert text_input.control_character(text) is None


# --- the probe's reproductions -------------------------------------------------------------


def _nul_free(factory: SessionFactory) -> list[str]:
    """Every text cell of every table that holds a control character (``table.column``)."""
    found = []
    with factory() as session:
        for table in Base.metadata.sorted_tables:
            columns = [c for c in table.columns if isinstance(c.type, String | Text)]
            if not columns:
                continue
            for row in session.execute(select(*columns)):
                found += [f"{table.name}.{column.name}" for column, value in zip(columns, row,
                                                                                  strict=True)
                          if isinstance(value, str) and text_input.control_character(
                              value, multiline=True)]
    return found


def test_accepting_with_a_nul_in_the_link_is_a_422_before_any_write(
    client: TestClient, users: SessionFactory  # noqa: F811
) -> None:
    """Was a 500 on PostgreSQL (``psycopg.DataError``) from an UPDATE run before the token
    was checked."""
    for path in ("/q/abc%00def/accept", "/q/abc%01def/accept", "/q/abc%7Fdef/accept"):
        answer = client.post(path, data={"confirm": "1"})
        assert answer.status_code == 422, (path, answer.status_code)
    assert client.post("/q/abc-def/accept", data={"confirm": "1"}).status_code == 404


def test_the_staff_forms_the_probe_named_refuse_a_nul(
    staff_client: StaffClient, users: SessionFactory  # noqa: F811
) -> None:
    """Model import (``hf_id``, ``family``), a card's name, staff notes, a line's description
    and an API key's label: each a 500 on PostgreSQL before, stored on SQLite."""
    desk, csrf = staff_client(ADMIN)
    path = request_quote(desk)
    reference = desk.get("/staff/quotes").text.split('href="/staff/quotes/')[1].split('"')[0]
    quote_page = desk.get(f"/staff/quotes/{reference}").text
    version = re.search(r'name="version" value="(\d+)"', quote_page)
    assert version is not None and path.startswith("/q/")
    gpu_page = desk.get("/staff/catalog/gpus/rtx-pro-6000").text
    gpu_form = next(form for form in _forms(gpu_page) if "name" in form.values)
    cases: list[tuple[str, dict[str, str], str]] = [
        ("/staff/models/import", {"config": _LLAMA, "action": "save", "slug": "probe",
                                  "hf_id": "probe/x\x00", "family": "Llama",
                                  "license": "apache-2.0"}, "hf_id"),
        ("/staff/models/import", {"config": _LLAMA, "action": "save", "slug": "probe",
                                  "hf_id": "probe/x", "family": "Lla\x00ma",
                                  "license": "apache-2.0"}, "family"),
        (gpu_form.action, {**gpu_form.values, "name": "RTX\x00"}, "name"),
        (f"/staff/quotes/{reference}", {"version": version.group(1), "status": "new",
                                        "staff_notes": "call back\x00"}, "staff_notes"),
        (f"/staff/quotes/{reference}/lines", {"version": version.group(1),
                                              "item_slug": "other:", "description": "Card\x00",
                                              "quantity": "1", "unit_price": "100"},
         "description"),
        ("/staff/api-keys", {"partner_id": "new", "new_partner_name": "Probe",
                             "label": "ci\x00"}, "label"),
    ]
    for action, data, name in cases:
        answer = desk.post(action, data={**data, "csrf_token": csrf})
        assert answer.status_code == 422, (action, name, answer.status_code)
        assert REFUSED in answer.text, (action, name)
    assert _nul_free(users) == []


_LLAMA = ('{"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, '
          '"num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, '
          '"vocab_size": 128256, "max_position_embeddings": 131072}')


def test_a_nul_inside_a_config_json_is_refused_where_jsonb_would_fail(
    client: TestClient, users: SessionFactory  # noqa: F811
) -> None:
    """``"\\u0000"`` is valid JSON; PostgreSQL's jsonb refuses it, so the one config reader
    refuses it on every surface (here the calculator's pasted config)."""
    answer = client.post("/", data={"model": "custom", "method": "lora",
                                    "config": _LLAMA[:-1] + ', "note": "a\\u0000b"}'})
    assert answer.status_code == 422
    assert "control characters" in answer.text


# --- every route, every parameter ----------------------------------------------------------


def _routes(routes: list[Any], prefix: str = "") -> Iterator[tuple[str, str, list[str]]]:
    """(method, path template, its parameters) of every route, the partner API's included
    (FastAPI keeps an included router's routes behind ``effective_route_contexts()``)."""
    for route in routes:
        if isinstance(route, APIRoute):
            contexts: list[Any] = [route]
        elif hasattr(route, "effective_route_contexts"):
            contexts = list(route.effective_route_contexts())
        elif getattr(route, "path", "") == "/api/v1":
            yield from _routes(route.routes, prefix + route.path)
            continue
        else:
            continue
        for context in contexts:
            for method in sorted(context.methods):
                yield method, prefix + context.path, list(context.param_convertors)


def test_every_path_parameter_of_every_route_refuses_control_characters(
    staff_client: StaffClient, users: SessionFactory  # noqa: F811
) -> None:
    """A signed-in admin (so the staff routes are reached) and a partner key (the API's)."""
    desk, csrf = staff_client(ADMIN)
    with users.begin() as session:
        partner = api_keys.create_partner(session, name="Walker").id
        _, key = api_keys.issue_key(session, partner_id=partner, label="walk",
                                    rate_limit_per_minute=1_000_000)
    desk.headers["Authorization"] = f"Bearer {key}"
    walked = 0
    for method, template, params in _routes(desk.app.routes):  # type: ignore[attr-defined]
        if not params:
            continue
        for character in ("\x00", "\x1f", "\x7f"):
            path = template
            for name in params:
                path = path.replace("{" + name + "}", f"a{character}b".replace(
                    character, f"%{ord(character):02X}"))
            answer = desk.request(method, path, data={"csrf_token": csrf, "confirm": "1"}
                                  if method == "POST" and not path.startswith("/api") else None)
            assert answer.status_code == 422, (method, path, answer.status_code)
            body = answer.text
            assert any(name in body for name in params), (method, path, body[:300])
        walked += 1
    assert walked >= 20  # /q/, the staff desk's quotes, lines, catalog, keys; the API's
    assert _nul_free(users) == []


# --- every form field ----------------------------------------------------------------------


@dataclass
class Form:
    action: str
    method: str
    values: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)


class _FormParser(HTMLParser):
    """The forms of a page: action, method, and each field's name, kind and value."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append(Form(a.get("action", ""), a.get("method", "get").lower()))
        elif not self.forms or not a.get("name"):
            return
        elif tag == "input":
            kind = a.get("type", "text")
            if kind in ("checkbox", "radio") and "checked" not in a:
                self.forms[-1].kinds.setdefault(a["name"], kind)
                return
            if kind in ("submit", "button", "file"):
                return
            self.forms[-1].values[a["name"]] = a.get("value", "")
            self.forms[-1].kinds[a["name"]] = kind
        elif tag == "textarea":
            self._textarea = a["name"]
            self.forms[-1].values[a["name"]] = ""
            self.forms[-1].kinds[a["name"]] = "textarea"
        elif tag == "select":
            self._select = a["name"]
            self.forms[-1].kinds[a["name"]] = "select"
        if tag == "option" and self._select and (
                "selected" in a or self._select not in self.forms[-1].values):
            self.forms[-1].values[self._select] = a.get("value", "")

    def handle_data(self, data: str) -> None:
        if self._textarea and self.forms:
            self.forms[-1].values[self._textarea] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None


def _forms(html: str) -> list[Form]:
    parser = _FormParser()
    parser.feed(html)
    return parser.forms


TYPED = ("text", "email", "search", "url", "tel", "textarea", "select", "number", "date",
         "password")
"""Fields a person fills in or chooses: each must name itself in the 422."""


def _pages(desk: TestClient, customer_path: str) -> list[str]:
    reference = desk.get("/staff/quotes").text.split('href="/staff/quotes/')[1].split('"')[0]
    return ["/", "/serve", "/quote?item=gpu:rtx-pro-6000&model=llama-3.1-8b&method=lora",
            customer_path, "/staff/quotes", f"/staff/quotes/{reference}",
            "/staff/catalog/gpus/new", "/staff/catalog/gpus/rtx-pro-6000",
            "/staff/catalog/systems/new", "/staff/catalog/models/llama-3.1-8b",
            "/staff/models/import", "/staff/api-keys"]


def _walk(desk: TestClient, page: str) -> Iterator[tuple[Form, str, str]]:
    """(form, field, kind) for every field of every POST form on ``page``."""
    html = desk.get(page).text
    for form in _forms(html):
        if form.method != "post" or form.action.endswith(("/sign-out", "/delete")):
            continue
        for name, kind in form.kinds.items():
            if kind not in ("checkbox", "radio"):
                yield form, name, kind


def test_every_form_field_refuses_control_characters(
    sent: Sent, users: SessionFactory  # noqa: F811
) -> None:
    """Each field of each form of the storefront, the customer's /q/ page and the staff desk,
    sent with a NUL in it and everything else as the page filled it in: a 422 naming the field
    for what a person types or picks (hidden fields: never a 5xx), and no NUL stored."""
    desk = sent.desk
    desk.headers["Accept-Language"] = "en"
    fields = 0
    for page in _pages(desk, sent.path):
        for form, name, kind in list(_walk(desk, page)):
            action = form.action or page
            data = {**form.values, name: form.values.get(name, "") + "x\x00y"}
            answer = desk.post(action, data=data)
            assert answer.status_code < 500, (page, action, name, answer.status_code)
            if kind in TYPED:
                assert answer.status_code == 422, (page, action, name, answer.status_code)
                assert REFUSED in answer.text, (page, action, name)
            fields += 1
    assert fields >= 60
    assert _nul_free(users) == []


# --- the partner API and the CLI -----------------------------------------------------------


def _key(users: SessionFactory) -> dict[str, str]:  # noqa: F811
    with users.begin() as session:
        partner = api_keys.create_partner(session, name="Probe API").id
        _, key = api_keys.issue_key(session, partner_id=partner, label="probe",
                                    rate_limit_per_minute=1_000_000)
    return {"Authorization": f"Bearer {key}"}


API_BODIES: list[tuple[str, dict[str, Any], str]] = [
    ("/estimates", {"model": "llama-3.1-8b\x00", "method": "lora"}, "body.model"),
    ("/estimates", {"model": "llama-3.1-8b", "method": "lora", "gpu": ["rtx\x7f"]}, "body.gpu"),
    ("/serving-estimates", {"model": "llama-3.1-8b\x01"}, "body.model"),
    ("/quote-requests", {
        "item_kind": "gpu", "item_slug": "rtx-pro-6000", "estimate": {
            "model": "llama-3.1-8b", "method": "lora"},
        "contact": {"name": "Ada\x00", "company": "X", "email": "a@example.com",
                    "country": "DE"}}, "body.contact.name"),
    ("/quote-requests", {
        "item_kind": "gpu", "item_slug": "rtx-pro-6000", "estimate": {
            "model": "llama-3.1-8b", "method": "lora"},
        "contact": {"name": "Ada", "company": "X", "email": "a@example.com",
                    "country": "DE", "message": "two\x1b[2J"}}, "body.contact.message"),
    ("/quote-requests", {
        "item_kind": "gpu", "item_slug": "rtx-pro-6000", "estimate": {
            "model": "llama-3.1-8b", "method": "lora"},
        "contact": {"name": "Ada", "company": "X", "email": "a@example.com", "country": "DE"},
        "partner_reference": "PO-1\x1f"}, "body.partner_reference"),
]


@pytest.mark.parametrize(("path", "body", "location"), API_BODIES,
                         ids=[b[2] + "-" + b[0] for b in API_BODIES])
def test_the_api_refuses_control_characters_at_the_field(
    client: TestClient, users: SessionFactory,  # noqa: F811
    path: str, body: dict[str, Any], location: str,
) -> None:
    answer = client.post(f"/api/v1{path}", json=body, headers=_key(users))
    assert answer.status_code == 422, answer.text
    assert {"location": location, "reason": text_input.REASON} in answer.json()["errors"]
    assert _nul_free(users) == []


def test_the_api_keeps_line_breaks_in_a_message(
    client: TestClient, users: SessionFactory  # noqa: F811
) -> None:
    body = {**API_BODIES[4][1], "contact": {**API_BODIES[4][1]["contact"],
                                            "message": "Two,\r\n\tplease."}}
    answer = client.post("/api/v1/quote-requests", json=body, headers=_key(users))
    assert answer.status_code == 201, answer.text


@pytest.mark.parametrize("argv", [
    ("estimate", "--model", "llama\x00", "--method", "lora"),
    ("estimate", "--model=llama\x7f", "--method", "lora"),
    ("estimate", "--model", "llama", "--gpu", "rtx\udc80"),
    ("apikey", "create", "--partner", "ACME\x1b", "--label", "x"),
    ("user", "create", "--email", "a@b.de\x00"),
], ids=["nul", "del-equals", "undecodable-byte", "apikey-partner", "user-email"])
def test_the_cli_refuses_control_characters_naming_the_option(argv: tuple[str, ...]) -> None:
    run = sizer(*argv)
    assert run.code == 2 and run.stdout == ""
    option = next(a for a in argv if text_input.control_character(a)).partition("=")
    named = option[0] if option[1] else argv[argv.index(option[0]) - 1]
    assert run.stderr == f"sizer {argv[0]}: error: {named}: {text_input.REASON}\n"
