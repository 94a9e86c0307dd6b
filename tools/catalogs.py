"""Refresh the translation catalogs from the code without losing a translation.

``pybabel extract`` with ``app/locales/babel.cfg`` finds every message the web, HTML and staff
code and the templates mark; this writes them, sorted, to ``messages.pot`` and adds each new
one to every ``messages.po`` with an empty translation, listing what is left to translate.

It differs from ``pybabel update`` on purpose:

* an entry the extraction no longer finds stays in the ``.po``: domain messages (a quote's
  status, a desk error raised in ``app/quotes``) reach the templates as data through ``_()``
  and are not extractable, and ``update`` would make them obsolete (``#~``), which the page
  then shows in English; delete an entry by hand when its text has left the code;
* nothing is matched fuzzily, so no guessed translation is ever served;
* the ``.po`` keeps its text: new entries are appended, so two helpers adding messages
  conflict only at its end, and nothing already there is rewrapped.

Run from the repository root after adding or changing a message::

    .venv/bin/python -m tools.catalogs
"""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
LOCALES = ROOT / "app" / "locales"
KEYWORDS = {"_": None, "gettext": None, "ngettext": (1, 2), "N_": None}
WIDTH = 76


def extracted() -> Catalog:
    """Every message the code and templates mark, as babel.cfg maps the files."""
    with (LOCALES / "babel.cfg").open(encoding="utf-8") as handle:
        method_map, options_map = parse_mapping_cfg(handle)  # type: ignore[no-untyped-call]
    template = Catalog(project="gpu-sizer", fuzzy=False)
    for _file, _line, message, comments, context in extract_from_dir(
        str(ROOT), method_map, options_map, keywords=KEYWORDS,
    ):
        template.add(message, None, auto_comments=comments, context=context)
    return template


def _read(path: Path, locale: str | None = None) -> Catalog:
    with path.open("rb") as handle:
        return read_po(handle, locale=locale)


def _entries(catalog: Catalog, **options: bool) -> bytes:
    buffer = io.BytesIO()
    write_po(buffer, catalog, width=WIDTH, no_location=True, **options)
    return buffer.getvalue()


def _undated(pot: bytes) -> bytes:
    return re.sub(rb'"POT-Creation-Date: [^"]*"', b"", pot)


def refresh() -> list[tuple[str, str]]:
    """Write the template and append its new messages to each language; returns the
    (language, message) pairs that still need a translation."""
    template = extracted()
    pot, text = LOCALES / "messages.pot", _entries(template, sort_output=True)
    if not pot.is_file() or _undated(pot.read_bytes()) != _undated(text):
        pot.write_bytes(text)  # only when a message changed, not for a new creation date
    untranslated = []
    for po in sorted(LOCALES.glob("*/LC_MESSAGES/messages.po")):
        lang = po.parent.parent.name
        known = _read(po, lang)
        new = Catalog(locale=lang, fuzzy=False)
        for message in template:
            if message.id and message.id not in known:
                new.add(message.id, "" if isinstance(message.id, str)
                        else ("",) * len(message.id), flags=message.flags)
        if len(new):
            text = po.read_bytes().rstrip(b"\n") + b"\n\n"
            po.write_bytes(text + _entries(new, omit_header=True).lstrip(b"\n"))
        if lang != "en":  # English is the source language: its msgstrs may stay empty
            untranslated += [(lang, str(m.id)) for m in _read(po, lang)
                             if m.id and not m.string]
    return untranslated


def main() -> int:
    missing = refresh()
    for lang, message in missing:
        print(f"{lang}: translate {message!r}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
