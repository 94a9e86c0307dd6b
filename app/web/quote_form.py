"""The quote request form: contact fields, the chosen item, and the sizing it came from."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Final, cast

from babel import Locale

from app.html import forms
from app.html.forms import N_, FieldErrors
from app.quotes.schemas import Contact, ItemKind

COUNTRIES: Final = (
    "AT", "BE", "BG", "HR", "CY", "CZ", "DK", "EE", "FI", "FR", "DE", "GR", "HU", "IE", "IT",
    "LV", "LT", "LU", "MT", "NL", "PL", "PT", "RO", "SK", "SI", "ES", "SE",
    "CH", "GB", "IS", "LI", "NO",
)
EMAIL = re.compile(r"^[^@\s<>\"]+@[^@\s<>\"]+\.[^@\s<>\"]+$")
VAT_ID = re.compile(r"^[A-Z]{2}[0-9A-Z+*.]{2,14}$")
VAT_ID_SHAPES: Final = {
    "AT": r"U\d{8}", "BE": r"[01]\d{9}", "BG": r"\d{9,10}", "CY": r"\d{8}[A-Z]",
    "CZ": r"\d{8,10}", "DE": r"\d{9}", "DK": r"\d{8}", "EE": r"\d{9}", "EL": r"\d{9}",
    "GR": r"\d{9}", "ES": r"[A-Z0-9]\d{7}[A-Z0-9]", "FI": r"\d{8}",
    "FR": r"[A-HJ-NP-Z0-9]{2}\d{9}", "HR": r"\d{11}", "HU": r"\d{8}",
    "IE": r"\d{7}[A-W][A-I]?|\d[A-Z+*]\d{5}[A-W]", "IT": r"\d{11}", "LT": r"\d{9}|\d{12}",
    "LU": r"\d{8}", "LV": r"\d{11}", "MT": r"\d{8}", "NL": r"\d{9}B\d{2}", "PL": r"\d{10}",
    "PT": r"\d{9}", "RO": r"\d{2,10}", "SE": r"\d{10}01", "SI": r"\d{8}", "SK": r"\d{10}",
    "CH": r"E\d{9}(MWST|TVA|IVA)?", "GB": r"\d{9}|\d{12}|GD\d{3}|HA\d{3}", "NO": r"\d{9}(MVA)?",
}
"""The part after the country prefix of each VAT ID we take, as the EU's VIES service describes
its formats (Greece's prefix is EL; Swiss UIDs CHE..., Norway's org. numbers with MVA); Iceland
and Liechtenstein keep the general shape (a German "DE123" is refused)."""
MARKUP = re.compile(r"[<>]")
ITEM = re.compile(r"^(gpu|system):([a-z0-9][a-z0-9.-]{0,63})$")


def _collation_key(name: str) -> str:
    """A name as a dictionary sorts it: accents and case aside ("Österreich" beside "Ost")."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def countries(lang: str) -> list[tuple[str, str]]:
    """Country codes with their names in the page's language, sorted by name as that
    language's readers look for it."""
    names = Locale.parse(lang).territories
    return sorted(((code, str(names.get(code, code))) for code in COUNTRIES),
                  key=lambda pair: _collation_key(pair[1]))


def vat_id_shape_ok(vat_id: str) -> bool:
    """Whether ``vat_id`` (upper case, no spaces) has its country's shape."""
    if not VAT_ID.match(vat_id):
        return False
    shape = VAT_ID_SHAPES.get(vat_id[:2])
    return shape is None or re.fullmatch(shape, vat_id[2:]) is not None


def parse_item(raw: str) -> tuple[ItemKind, str] | None:
    match = ITEM.match(raw.strip())
    if match is None:
        return None
    return cast(ItemKind, match.group(1)), match.group(2)


def _no_markup(value: str, name: str, errors: FieldErrors) -> None:
    if MARKUP.search(value):
        errors.add(name, N_("Please leave out < and >."))


def parse_contact(data: Mapping[str, str]) -> tuple[Contact, FieldErrors]:
    errors = FieldErrors()
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
    elif vat_id and not vat_id_shape_ok(vat_id):
        errors.add("vat_id", N_("This is not the shape of a %(country)s VAT ID; please check "
                                "it (e.g. DE123456789, ATU12345678)."), country=vat_id[:2])
    message = forms.text(data, "message", errors, max_length=2000, multiline=True)
    quantity = forms.integer(data, "quantity", errors, default=1, minimum=1, maximum=1000)
    contact = Contact(
        name=name, company=company, email=email, country=country, vat_id=vat_id or None,
        message=message or None, quantity=quantity,
    )
    return contact, errors
