"""What an HTML form says when a config.json is refused: one table for every page that reads one.

The storefront's calculator (and its quote form) and the staff model import read a config.json
with the same reader (:func:`app.catalog.inline_config.read_config_text`), so they word its
refusals the same way, beside the field the document was pasted into.
"""

from __future__ import annotations

from typing import Any, Final

from app.catalog import inline_config
from app.html.forms import N_, FieldErrors

MESSAGES: Final[dict[inline_config.Problem, str]] = {
    "empty": N_("Paste the model's config.json."),
    "size": N_("A config.json may be at most %(max)s KB."),
    "document_size": N_("A config.json may be at most %(max)s MB (a quantised checkpoint's "
                        "list of layers included)."),
    "syntax": N_("Not valid JSON (line %(line)s, column %(column)s)."),
    "not_object": N_("A config.json is a JSON object ({...})."),
    "depth": N_("A config.json may be nested at most %(max)s levels deep."),
    "not_finite": N_("A config.json may not contain NaN or Infinity."),
    "too_large": N_("A number in this config.json is too large (at most 2^53)."),
    "not_unicode": N_("A config.json may only contain valid Unicode text."),
    "control": N_("A config.json may not contain control characters such as NUL."),
}
"""The message for each bound of :mod:`app.catalog.inline_config` (English msgids)."""


def add(errors: FieldErrors, field: str, error: inline_config.ConfigValueError) -> None:
    """Put the message for ``error`` beside ``field``, with the numbers it names."""
    params: dict[str, int | str] = {}
    if error.problem == "size":
        params["max"] = inline_config.MAX_CONFIG_BYTES // 1024
    elif error.problem == "document_size":
        params["max"] = (error.limit or inline_config.MAX_POSTED_BYTES) // (1024 * 1024)
    elif error.problem == "depth":
        params["max"] = inline_config.MAX_DEPTH
    elif error.problem == "syntax":
        params.update(line=error.line or 1, column=error.column or 1)
    errors.add(field, MESSAGES[error.problem], **params)


def read(text: str, errors: FieldErrors, field: str = "config") -> dict[str, Any] | None:
    """The config.json pasted in ``text`` (at most :data:`~app.catalog.inline_config.
    MAX_POSTED_BYTES`), or None with the reason added beside ``field``."""
    try:
        return inline_config.read_config_text(text, limit=inline_config.MAX_POSTED_BYTES)
    except inline_config.ConfigValueError as error:
        add(errors, field, error)
        return None
