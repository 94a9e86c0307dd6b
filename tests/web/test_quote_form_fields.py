"""The quote form says which field is wrong, knows each country's VAT ID and sorts countries
as their readers look for them (issue 18, point 9)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from app.web.quote_form import countries, vat_id_shape_ok
from tests.web.test_quotes import CONTACT, QUOTE, _form_fields


def summary(body: str) -> list[str]:
    block = body[body.index('id="quote-errors"'):]
    block = block[:block.index("</ul>")]
    return re.findall(r'<li><a href="#f-\w+">([^<]+)</a></li>', block)


def test_the_error_summary_names_each_field(client: TestClient) -> None:
    fields = _form_fields(client.get(QUOTE).text)
    body = client.post("/quote", data=fields).text
    items = summary(body)
    assert items[:4] == ["Your name: This field is required.",
                         "Company: This field is required.",
                         "E-mail: This field is required.",
                         "Country: This field is required."]
    assert 'data-focus' in body


@pytest.mark.parametrize("vat_id", ["DE123", "DE12345678", "ATU1234567", "FR1234", "NL123456789"])
def test_a_vat_id_of_the_wrong_shape_is_refused(client: TestClient, vat_id: str) -> None:
    fields = _form_fields(client.get(QUOTE).text)
    response = client.post("/quote", data={**fields, **CONTACT, "vat_id": vat_id})
    assert response.status_code == 422
    assert re.search(r'<span id="err-vat_id" class="field-error">[^<]*VAT ID', response.text)


@pytest.mark.parametrize("vat_id", ["DE123456789", "ATU12345678", "FR12345678901",
                                    "NL123456789B01", "EL123456789", "CHE123456789MWST",
                                    "GB123456789", "IE1234567T", "SE123456789001"])
def test_real_shapes_pass(vat_id: str) -> None:
    assert vat_id_shape_ok(vat_id)


def test_countries_sort_by_their_german_names_accents_aside() -> None:
    names = [name for _, name in countries("de")]
    assert names.index("Norwegen") < names.index("Österreich") < names.index("Polen")
    assert names.index("Dänemark") < names.index("Deutschland")  # ä as a, as in a dictionary
    assert names[-1] == "Zypern"


def test_the_german_form_lists_austria_before_cyprus(
    make_client: Callable[..., TestClient],
) -> None:
    body = make_client().get(QUOTE, headers={"Accept-Language": "de"}).text
    assert body.index(">Österreich<") < body.index(">Zypern<")
