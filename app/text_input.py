"""The one check for control characters in text a user sends.

Every text input the service takes (the storefront's and the quote form's fields, the /q/
pages, the staff forms, the partner API's bodies, the CLI's options) is held to
:func:`control_character` before anything else looks at it, so a NUL never reaches a database
(PostgreSQL refuses it in text with a ``DataError``: a 500 without this check) and no log line,
page or CSV export carries a terminal escape or a backspace.

Refused: the C0 controls U+0000-U+001F (a multi-line field, such as a message or staff notes,
keeps tab, line feed and carriage return), DEL U+007F, the C1 controls U+0080-U+009F (Unicode
category Cc, like C0: nobody types them, and terminals obey some of them) and lone surrogates
U+D800-U+DFFF (valid in JSON's ``\\ud800`` and in a command line's undecodable bytes, but no
UTF-8 encoder, response or database takes them).

Standard library and :mod:`app.errors` only: the forms (``app/html/forms.py``), the API's
schemas, the CLI and the domains all import it.
"""

from __future__ import annotations

import re
from typing import Final

from app.errors import InvalidInput

_SINGLE_LINE: Final = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_MULTI_LINE: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")

REASON: Final = "must not contain control characters"
"""The English reason every surface gives (the pages translate :data:`FORM_MESSAGE`)."""
KEY: Final = "control_characters"
"""The error key a :class:`~app.errors.InvalidInput` for it carries."""


def control_character(value: str, *, multiline: bool = False) -> str | None:
    """The first refused character in ``value`` (None when there is none). ``multiline``
    allows tab, line feed and carriage return."""
    match = (_MULTI_LINE if multiline else _SINGLE_LINE).search(value)
    return match.group() if match else None


def check(value: str, field: str, *, multiline: bool = False) -> str:
    """``value`` unchanged, or :class:`InvalidInput` (422) on ``field`` when it holds a
    control character."""
    if control_character(value, multiline=multiline) is not None:
        raise InvalidInput(REASON, field=field, key=KEY)
    return value


def check_optional(value: str | None, field: str, *, multiline: bool = False) -> str | None:
    """:func:`check` for a value that may be absent."""
    return None if value is None else check(value, field, multiline=multiline)
