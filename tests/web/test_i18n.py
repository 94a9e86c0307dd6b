"""German and English: negotiation, the switcher's cookie, number and price formats, catalogs."""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable
from decimal import Decimal, localcontext
from pathlib import Path

from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po
from babel.numbers import format_decimal
from fastapi.testclient import TestClient
from markupsafe import escape
from sqlalchemy import text

from app.config import LOCALES_DIR
from app.db.session import SessionFactory
from app.html import i18n, templating

ROOT = Path(__file__).resolve().parents[2]
"""The checkout: babel.cfg's patterns are relative to it."""

PLACEHOLDER = re.compile(r"%\(\w+\)s")


def test_accept_language_picks_german_with_german_numbers(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client()
    body = client.get("/", headers={"Accept-Language": "de-DE,de;q=0.9,en;q=0.5"}).text
    assert '<html lang="de">' in body
    assert "Welche GPU brauche ich fürs Fine-Tuning?" in body
    assert 'id="fig-states">16,7\u00a0GB<' in body
    assert 'id="fig-adapter">0,7\u00a0GB<' in body
    assert "Preis auf Anfrage" in body and "Passt auf 1×" in body


def test_accept_language_picks_english(make_client: Callable[..., TestClient]) -> None:
    body = make_client().get("/", headers={"Accept-Language": "fr;q=1, en;q=0.8"}).text
    assert '<html lang="en">' in body and 'id="fig-states">16.7\u00a0GB<' in body


def test_default_locale_when_the_browser_asks_none(make_client: Callable[..., TestClient]) -> None:
    assert '<html lang="de">' in make_client().get("/").text
    assert '<html lang="en">' in make_client(default_locale="en").get("/").text


def test_switcher_sets_a_cookie_that_wins_over_accept_language(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client()
    response = client.get("/lang/en", params={"next": "/?model=qwen3-8b&batch=2"})
    assert response.status_code == 303
    assert response.headers["location"] == "/?model=qwen3-8b&batch=2"
    assert "lang=en" in response.headers["set-cookie"]
    body = client.get("/?model=qwen3-8b", headers={"Accept-Language": "de"}).text
    assert '<html lang="en">' in body
    assert 'href="/lang/de?next=/%3Fmodel%3Dqwen3-8b"' in body


def test_switcher_never_redirects_off_site(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    for target in ("https://evil.example/", "//evil.example/", "/\\evil.example"):
        response = client.get("/lang/de", params={"next": target})
        assert response.headers["location"] == "/"
    assert "set-cookie" not in client.get("/lang/fr").headers


def test_prices_are_eur_in_the_locale(
    make_client: Callable[..., TestClient], seeded: SessionFactory
) -> None:
    with seeded.begin() as session:
        session.execute(
            text("UPDATE gpu_sku SET price_eur_net = 8999.5 WHERE slug = 'rtx-pro-6000'")
        )
    client = make_client()
    assert "8.999,50\u00a0€" in client.get("/", headers={"Accept-Language": "de"}).text
    assert "€8,999.50" in client.get("/", headers={"Accept-Language": "en"}).text


def test_formatting_filters() -> None:
    assert i18n.format_gb(1_129_000_000_000, "de") == "1.129\u00a0GB"
    assert i18n.format_gb(1_129_000_000_000, "en") == "1,129\u00a0GB"
    assert i18n.format_gb(16_731_611_136, "de") == "16,7\u00a0GB"
    assert i18n.format_number(4096, "de") == "4.096"
    assert i18n.format_number(3.1, "de") == "3,1"
    assert i18n.format_number(1234.5675, "en") == "1,234.568"


def test_decimal_numbers_read_as_babel_writes_them() -> None:
    """The page formats its decimal figures (hours, sizes) without Babel's pattern machinery;
    every float reads as ``babel.numbers.format_decimal`` writes it, in both languages and in
    a locale of another pattern, at the rounding edges and far beyond the page's range."""
    rnd = random.Random(30)
    values = [0.0, -0.0, 0.0005, 0.0015, 0.0025, -0.0004, 999.9995, 0.1 + 0.2, 1e14 + 0.5,
              1e15, 1e20, 1e-9, float("inf"), float("nan")]
    values += [rnd.randint(0, 10**7) / rnd.choice([8, 1000, 2000]) for _ in range(3000)]
    values += [10 ** rnd.uniform(-9, 22) * rnd.choice([1, -1]) for _ in range(3000)]
    for lang in ("de", "en", "de_CH"):
        for value in values:
            with localcontext(prec=60):
                expected = format_decimal(value, locale=lang)
            assert i18n.format_number(value, lang) == expected, (lang, value)


def test_gigabytes_read_as_babel_writes_them() -> None:
    """GB figures (about 50 on a result) likewise: one decimal below 100 GB, none above, as
    Babel's patterns round the float's shortest text, from bytes to beyond 10**15 GB."""
    rnd = random.Random(31)
    sizes = [0, 1, 16_850_000_000, 99_950_000_000, 100_000_000_000, 10**24 + 5 * 10**8,
             10**33, -48_305_799_168]
    sizes += [rnd.randint(0, 2 * 10**12) for _ in range(4000)]
    sizes += [int(10 ** rnd.uniform(0, 30)) for _ in range(2000)]
    for lang in ("de", "en"):
        for size in sizes:
            value = size / i18n.GB
            with localcontext(prec=80):
                expected = format_decimal(Decimal(str(value)), locale=lang,
                                          format="#,##0" if abs(value) >= 100 else "#,##0.0")
            assert i18n.format_gb(size, lang) == f"{expected}\u00a0GB", (lang, size)


def _source_messages() -> set[str]:
    method_map = [("app/web/**.py", "python"), ("app/html/**.py", "python"),
                  ("app/templates/**.html", "jinja2")]
    keywords = {"_": None, "gettext": None, "ngettext": (1, 2), "N_": None}
    found: set[str] = set()
    for _file, _line, message, _comments, _context in extract_from_dir(
        str(ROOT), method_map, keywords=keywords
    ):
        found.add(message if isinstance(message, str) else message[0])
    return found


def test_every_message_has_a_german_translation_with_the_same_placeholders() -> None:
    path = LOCALES_DIR / "de" / "LC_MESSAGES" / "messages.po"
    with path.open("rb") as handle:
        catalog = {m.id: m.string for m in read_po(handle) if m.id}
    messages = _source_messages()
    missing = sorted(m for m in messages if not catalog.get(m))
    assert missing == [], "update the catalogs (docs/development.md) and translate these"
    for msgid in messages:
        assert sorted(PLACEHOLDER.findall(msgid)) == sorted(
            PLACEHOLDER.findall(str(catalog[msgid]))
        ), msgid


def test_the_engine_s_assumptions_and_lever_costs_are_translated(
    make_client: Callable[..., TestClient],
) -> None:
    from app.engine.assumptions import ASSUMPTION_TEXTS
    from app.web.result_view import ASSUMPTION_LABELS, LEVER_LABELS, LEVER_SPEEDS

    assert set(ASSUMPTION_LABELS) == set(ASSUMPTION_TEXTS)
    assert set(LEVER_SPEEDS) == set(LEVER_LABELS)
    body = make_client().get("/", params={"model": "llama-3.1-8b", "method": "full"},
                             headers={"Accept-Language": "de"}).text
    assert "GB = 10^9 Byte; jede Angabe gilt pro GPU" in body
    assert "Modellzustände, wie das ZeRO-Paper sie zählt" in body
    assert "<strong>Auf 8-Bit-AdamW wechseln</strong>" in body
    assert "etwa gleich schnell (8-Bit-Adam von bitsandbytes" in body
    assert "every figure is per GPU" not in body and "about the same speed" not in body


def _code_texts() -> set[str]:
    """Every string literal of the application's Python, every message its templates mark
    (as the catalogs' extraction reads them) and every quoted string in a template (labels a
    macro translates, such as a breakdown table's rows)."""
    literals: set[str] = set()
    for path in (ROOT / "app").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                literals.add(node.value)
    for _file, _line, message, _comments, _context in extract_from_dir(
        str(ROOT), [("app/templates/**.html", "jinja2")],
        keywords={"_": None, "gettext": None, "ngettext": (1, 2)},
    ):
        literals.update([message] if isinstance(message, str) else message)
    for path in (ROOT / "app" / "templates").rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        literals.update(a or b for a, b in re.findall(r'"([^"\\]+)"|\'([^\'\\]+)\'', text))
    return literals


def test_no_catalog_keeps_a_message_the_code_no_longer_has() -> None:
    """tools/catalogs.py never drops an entry (domain messages reach the templates as data
    and are not extractable), so a text that left the code would stay in the .po files for
    ever: each msgid must still be a string in app/ or a template's text."""
    texts = _code_texts()
    for lang in ("de", "en"):
        with (LOCALES_DIR / lang / "LC_MESSAGES" / "messages.po").open("rb") as handle:
            ids = [m.id if isinstance(m.id, str) else m.id[0] for m in read_po(handle) if m.id]
        unused = sorted(i for i in ids if i not in texts)
        assert unused == [], f"{lang}: delete these entries (the code no longer says them)"


def test_the_templates_messages_are_kept_translated_and_the_same() -> None:
    """``_()`` keeps each message's translation (and, without values, its text): what it
    writes is what gettext and %-formatting give, escaped where autoescaping is on, and what it
    keeps is bounded (a message made of data cannot grow it without end)."""
    env = templating.environment()
    source = ('{{ _("Free per card") }}|{{ _("%(short)s short", short="<b>") }}|'
              '{{ _("100 %%") }}|{{ _(label) }}')
    for lang in ("de", "en"):
        catalog = i18n.translations(lang)
        expected = "|".join([
            str(escape(catalog.gettext("Free per card"))),
            str(escape(catalog.gettext("%(short)s short") % {"short": "<b>"})),
            "100 %", str(escape(catalog.gettext("Recommended")))])
        for _ in range(2):  # kept: the same
            written = env.from_string(source).render(lang=lang, label="Recommended")
            assert written == expected
    data = env.from_string("{{ _(m) }}")
    for message in range(templating.TRANSLATIONS_KEPT + 10):
        data.render(lang="de", m=f"data {message}")
    assert templating._translated_alone.cache_info().currsize == templating.TRANSLATIONS_KEPT
