"""The quote request form: contact fields, the chosen item, and the sizing it came from."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, cast

from babel import Locale

from app.html import forms
from app.html.forms import N_, FieldErrors
from app.quotes.schemas import Contact, ItemKind
from app.quotes.service import CONTROL_CHARACTERS

COUNTRIES: Final = (
    "AT", "BE", "BG", "HR", "CY", "CZ", "DK", "EE", "FI", "FR", "DE", "GR", "HU", "IE", "IT",
    "LV", "LT", "LU", "MT", "NL", "PL", "PT", "RO", "SK", "SI", "ES", "SE",
    "CH", "GB", "IS", "LI", "NO",
)
EMAIL = re.compile(r"^[^@\s<>\"]+@[^@\s<>\"]+\.[^@\s<>\"]+$")
VAT_ID = re.compile(r"^[A-Z]{2}[0-9A-Z+*.]{2,12}$")
MARKUP = re.compile(r"[<>]")
ITEM = re.compile(r"^(gpu|system):([a-z0-9][a-z0-9.-]{0,63})$")


def countries(lang: str) -> list[tuple[str, str]]:
    """Country codes with their names in the page's language, sorted by name."""
    names = Locale.parse(lang).territories
    return sorted(((code, str(names.get(code, code))) for code in COUNTRIES),
                  key=lambda pair: pair[1])


def parse_item(raw: str) -> tuple[ItemKind, str] | None:
    match = ITEM.match(raw.strip())
    if match is None:
        return None
    return cast(ItemKind, match.group(1)), match.group(2)


def _no_markup(value: str, name: str, errors: FieldErrors) -> None:
    if MARKUP.search(value):
        errors.add(name, N_("Please leave out < and >."))


def _no_control(data: Mapping[str, str], errors: FieldErrors) -> None:
    """Control characters (but tab and line breaks) can't be typed and can't be stored."""
    for name in ("name", "company", "email", "country", "vat_id", "message"):
        if CONTROL_CHARACTERS.search(data.get(name, "")):
            errors.add(name, N_("Please leave out control characters."))


def parse_contact(data: Mapping[str, str]) -> tuple[Contact, FieldErrors]:
    errors = FieldErrors()
    _no_control(data, errors)
    name = forms.text(data, "name", errors, required=True, max_length=200)
    _no_markup(name, "name", errors)
    company = forms.text(data, "company", errors, required=True, max_length=200)
    _no_markup(company, "company", errors)
    email = forms.text(data, "email", errors, required=True, max_length=254)
    if email and "email" not in errors.messages and not EMAIL.match(email):
        errors.add("email", N_("Enter an e-mail address like name@example.com."))
    country = forms.text(data, "country", errors, required=True, max_length=2).upper()
    if country and "country" not in errors.messages and country not in COUNTRIES:
        errors.add("country", N_("Choose one of the offered values."))
    vat_id = re.sub(r"[\s-]", "", forms.text(data, "vat_id", errors, max_length=40)).upper()
    if vat_id and not VAT_ID.match(vat_id):
        errors.add("vat_id", N_("A VAT ID starts with the country code, e.g. DE123456789."))
    message = forms.text(data, "message", errors, max_length=2000)
    quantity = forms.integer(data, "quantity", errors, default=1, minimum=1, maximum=1000)
    contact = Contact(
        name=name, company=company, email=email, country=country, vat_id=vat_id or None,
        message=message or None, quantity=quantity,
    )
    return contact, errors
