"""Form parsing for the staff desk: decimals, dates, versions, and domain errors as field errors.

Messages are English msgids translated where they are shown (``error_text``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from decimal import Decimal, InvalidOperation

from app.errors import DomainError
from app.html.forms import N_, FieldErrors, no_control


def decimal(
    data: Mapping[str, str], name: str, errors: FieldErrors, *, required: bool = False,
    minimum: Decimal = Decimal(0), maximum: Decimal = Decimal("9999999999.99"),
) -> Decimal | None:
    """A non-negative amount with at most two decimals, typed either locale's way: "8.499",
    "8.499,50", "8,499.50", "8499.50" and "8499,5" all read."""
    if not no_control(data, name, errors):
        return None
    raw = data.get(name, "").strip().replace(" ", "").replace("\u00a0", "").replace("€", "")
    if not raw:
        if required:
            errors.add(name, N_("This field is required."))
        return None
    raw = _plain_decimal(raw)
    try:
        value = Decimal(raw)
    except InvalidOperation:
        errors.add(name, N_("Enter a number, e.g. 1234.50."))
        return None
    if not value.is_finite():
        errors.add(name, N_("Enter a number, e.g. 1234.50."))
        return None
    if value < minimum:
        errors.add(name, N_("Must not be negative.") if minimum == 0
                   else N_("Enter a number from %(min)s to %(max)s."),
                   min=str(minimum), max=str(maximum))
        return None
    if value > maximum:
        errors.add(name, N_("Enter a number from %(min)s to %(max)s."),
                   min=str(minimum), max=str(maximum))
        return None
    if value != value.quantize(Decimal("0.01")):
        errors.add(name, N_("At most two decimals."))
        return None
    return value.quantize(Decimal("0.01"))


_GROUPED = re.compile(r"\d{1,3}([.,])\d{3}(\1\d{3})*")
"""Digits grouped by threes with one separator: "8.499", "1,234,567"."""


def _plain_decimal(raw: str) -> str:
    """``raw`` with its grouping removed and a point for the decimal sign. Where both signs
    appear the last one is the decimal sign; one sign that groups digits by threes is a
    thousands separator (a price has at most two decimals, so "8.499" can only be 8,499 EUR);
    a lone comma otherwise is the German decimal sign."""
    if "," in raw and "." in raw:
        decimal_sign = "," if raw.rindex(",") > raw.rindex(".") else "."
        group = "." if decimal_sign == "," else ","
        return raw.replace(group, "").replace(decimal_sign, ".")
    if _GROUPED.fullmatch(raw):
        return raw.replace(".", "").replace(",", "")
    return raw.replace(",", ".")


def day(data: Mapping[str, str], name: str, errors: FieldErrors) -> date | None:
    raw = data.get(name, "").strip()
    if not raw or not no_control(data, name, errors):
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        errors.add(name, N_("Enter a date like 2026-12-31."))
        return None


def version(data: Mapping[str, str]) -> int:
    """The version a form was rendered from (-1 if missing: always stale)."""
    raw = data.get("version", "").strip()
    return int(raw) if raw.isdigit() and len(raw) < 10 else -1


ROW_ID_DIGITS = 10
"""Row ids are 32-bit integers: more digits can't name one (and never reach the database)."""


def row_id(raw: str) -> int | None:
    """A row id as a form, path or cursor carries it: ASCII digits only ('²' and '١' are
    digits to ``str.isdigit`` but no id), at most :data:`ROW_ID_DIGITS`; else None."""
    text = raw.strip()
    if not text or len(text) > ROW_ID_DIGITS or not (text.isascii() and text.isdigit()):
        return None
    return int(text)


def domain_field_error(exc: DomainError, errors: FieldErrors, *, fallback: str) -> None:
    """Put a service's reason beside the field it names (or ``fallback`` when it names none)."""
    errors.add(exc.field or fallback, exc.reason)
