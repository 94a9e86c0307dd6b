"""Every message the staff desk's Python code marks (N_) has a German translation."""

from __future__ import annotations

from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from app.config import APP_DIR, LOCALES_DIR


def test_staff_messages_are_translated() -> None:
    path = LOCALES_DIR / "de" / "LC_MESSAGES" / "messages.po"
    with path.open("rb") as handle:
        catalog = {m.id: m.string for m in read_po(handle) if m.id}
    found = {
        message if isinstance(message, str) else message[0]
        for _f, _l, message, _c, _x in extract_from_dir(
            str(APP_DIR / "staff"), [("**.py", "python")],
            keywords={"_": None, "N_": None},
        )
    }
    assert len(found) > 40
    assert sorted(m for m in found if not catalog.get(m)) == []
