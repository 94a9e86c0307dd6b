"""Locales for the customer pages: which one a request gets, its messages, and formatting.

* The message catalogs are the ``.po`` files under ``app/locales/<lang>/LC_MESSAGES/``; they
  are compiled in memory the first time a locale is used (no ``.mo`` file to forget to
  rebuild), so what is committed is exactly what is served.
* A request's locale: an explicit ``lang`` cookie (set by the visible switcher), else the
  browser's ``Accept-Language``, else the settings' default.
* Formatting is presentation (docs/architecture.md rule 11): bytes -> "16,7 GB" and prices ->
  EUR are Jinja filters bound to the request's locale, built on ``babel.numbers``.
"""

from __future__ import annotations

import gettext
import io
import math
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import date, datetime
from decimal import Context, Decimal, getcontext, localcontext
from functools import lru_cache

from babel import Locale, UnknownLocaleError
from babel.dates import format_date as babel_format_date
from babel.dates import format_time as babel_format_time
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import (
    format_currency,
    format_decimal,
    get_decimal_symbol,
    get_group_symbol,
)

from app.config import LOCALES_DIR

LOCALE_COOKIE = "lang"
GB = 10**9

LANGUAGE_NAMES: dict[str, str] = {"de": "Deutsch", "en": "English"}


@lru_cache(maxsize=16)
def translations(lang: str) -> gettext.NullTranslations:
    """The compiled messages for ``lang`` (English source strings when there is no catalog)."""
    path = LOCALES_DIR / lang / "LC_MESSAGES" / "messages.po"
    if not path.is_file():
        return gettext.NullTranslations()
    with path.open("rb") as handle:
        catalog = read_po(handle, locale=lang)
    buffer = io.BytesIO()
    write_mo(buffer, catalog)
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)


def _parse_accept_language(header: str) -> list[str]:
    """Language tags from an Accept-Language header, best first (q=0 dropped)."""
    weighted: list[tuple[float, int, str]] = []
    for index, part in enumerate(header.split(",")):
        pieces = part.strip().split(";")
        tag = pieces[0].strip()
        if not tag or tag == "*":
            continue
        quality = 1.0
        for param in pieces[1:]:
            name, _, value = param.strip().partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0:
            weighted.append((-quality, index, tag))
    return [tag for _, _, tag in sorted(weighted)]


def negotiate(
    *, cookie: str | None, accept_language: str | None, supported: Sequence[str], default: str
) -> str:
    """The locale for a request: cookie, then Accept-Language (language part), then default."""
    if cookie is not None and cookie in supported:
        return cookie
    for tag in _parse_accept_language(accept_language or ""):
        language = tag.split("-")[0].split("_")[0].lower()
        if language in supported:
            return language
    return default


@lru_cache(maxsize=16)
def _locale(lang: str) -> Locale:
    try:
        return Locale.parse(lang)
    except (UnknownLocaleError, ValueError):
        return Locale.parse("en")


def _digits(value: Decimal | int | float) -> AbstractContextManager[Context]:
    """A decimal context with enough digits to format ``value`` to the unit.

    Babel rounds in the current decimal context, whose 28 digits a job with absurd (but
    accepted) dimensions exceeds: 2**52 layers of width 2**52 are ~10**47 parameters."""
    exponent = Decimal(value).adjusted() if math.isfinite(value) else 0
    return localcontext(prec=max(getcontext().prec, exponent + 8))


@lru_cache(maxsize=16)
def _separators(lang: str) -> dict[int, str]:
    """Python's grouping comma and decimal point mapped onto the locale's signs."""
    locale = _locale(lang)
    return {ord(","): get_group_symbol(locale=locale), ord("."): get_decimal_symbol(locale=locale)}


def _grouped(value: Decimal | int, places: int, lang: str) -> str:
    """``value`` with the locale's grouping and ``places`` decimals, rounded half to even as
    Babel's patterns round: what ``format_decimal(value, "#,##0.0")`` writes, without its
    pattern machinery (a result fragment formats about 120 numbers; Babel took 40-400 µs
    each, most of the fragment's time)."""
    text = f"{value:,}" if isinstance(value, int) else f"{value:,.{places}f}"
    return text.translate(_separators(lang))


def format_gb(value_bytes: int | float, lang: str) -> str:
    """Bytes as decimal gigabytes: one decimal below 100 GB, none above ("1.129 GB" in de)."""
    value = float(value_bytes) / GB
    if not math.isfinite(value):
        return f"{format_decimal(value, locale=_locale(lang))}\u00a0GB"
    # as Babel reads a float: its shortest text, so 16.85 rounds to 16.8 as written; below
    # 10**15 GB the default 28 digits of precision hold it, so no wider context is needed
    places = 0 if abs(value) >= 100 else 1
    if abs(value) < 1e15:
        return f"{_grouped(Decimal(repr(value)), places, lang)}\u00a0GB"
    with _digits(value):
        formatted = _grouped(Decimal(str(value)), places, lang)
    return f"{formatted}\u00a0GB"


THOUSANDTHS = Decimal("0.001")
"""Babel's decimal pattern for English and German ("#,##0.###"): at most three decimals."""


def format_number(value: int | float, lang: str) -> str:
    """A whole or decimal number with the locale's grouping and decimal sign."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _grouped(value, 0, lang)
    if type(value) is float and lang in LANGUAGE_NAMES and abs(value) < 1e15:
        # What Babel's pattern writes, without its machinery (a result fragment formats its
        # training hours this way): the float's shortest text rounded half to even to three
        # decimals, trailing zeros and a bare decimal sign dropped; within the default 28
        # digits of precision, so no wider context is needed.
        text = _grouped(Decimal(repr(value)).quantize(THOUSANDTHS), 3, lang)
        return text.rstrip("0").rstrip(_separators(lang)[ord(".")])
    with _digits(value):
        return format_decimal(value, locale=_locale(lang))


@lru_cache(maxsize=1024)
def format_eur(value: Decimal | int | float, lang: str) -> str:
    """A EUR amount the locale's way ("9.999,00 €" in de, "€9,999.00" in en); remembered,
    as a page shows the same catalog prices again and again."""
    return format_currency(value, "EUR", locale=_locale(lang))


def format_amount(value: Decimal | int | float | str, lang: str) -> str:
    """An amount for a form field, two decimals the locale's way ("8.499,00" in de); a string
    (what the user typed, shown again with its error) stays as it is. The staff forms read
    both ways back (``app.staff.forms.decimal``)."""
    if isinstance(value, str):
        return value
    return format_decimal(value, format="#,##0.00", locale=_locale(lang))


def format_day(value: date, lang: str) -> str:
    """A date the locale's way: "15.01.2027" in de, "Jan 15, 2027" in en."""
    return babel_format_date(value, format="medium", locale=_locale(lang))


def format_moment(value: datetime, lang: str) -> str:
    """A date and time (UTC, as stored) the locale's way: "15.01.2027, 14:30" in de."""
    locale = _locale(lang)
    return (f"{babel_format_date(value, format='medium', locale=locale)}, "
            f"{babel_format_time(value, format='HH:mm', locale=locale)}")
