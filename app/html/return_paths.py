"""Where a page may send a browser back to: a path on this site, whatever the browser does to it.

Two pages take a return path from the query: the language switch (``/lang/<code>?next=``) and
the staff sign-in (``/staff/sign-in?next=``). Both send it back in a Location header, so both
use :func:`same_site_path`.

Browsers drop tab, CR and LF anywhere in a URL, strip leading controls and spaces, and read
``\\`` as ``/`` (WHATWG URL standard): ``/<TAB>/evil.example`` arrives as ``//evil.example``,
another host. Rather than mimic that normalisation, any control, format,
separator or space character refuses the whole target; the rest is rebuilt from its parsed
path and query and percent-encoded, so the header is plain ASCII (Starlette encodes headers
as Latin-1: ``U+2028`` would be a 500).
"""

from __future__ import annotations

import unicodedata
from urllib.parse import quote, urljoin, urlsplit

MAX_RETURN_PATH_LENGTH = 2048
"""Longest return path kept. Pages send their own path and query (a calculator URL is a few
hundred characters); 2048 is the classic URL length every browser and proxy accepts. A longer
one is refused rather than echoed into a header."""

_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
"""RFC 3986 ``pchar`` punctuation plus ``/`` and ``%`` (escapes stay as they are): what may stand
unescaped in the path sent back. Anything else (``ü``, ``日本``) is percent-encoded."""
_QUERY_SAFE = _PATH_SAFE + "?"
"""A query may also carry ``?`` unescaped (RFC 3986 ``query``)."""

_PROBE_HOST = "sizer.invalid"
"""A stand-in for our own host (``.invalid`` is reserved, RFC 2606): the finished path must
resolve against it to this very host."""


def _invisible(char: str) -> bool:
    """Control, format, surrogate, private-use, unassigned, separator and space characters
    (Unicode categories C* and Z*)."""
    return unicodedata.category(char)[0] in "CZ"


def same_site_path(target: str) -> str | None:
    """``target`` rebuilt from its parsed path and query, or None if it is not plainly a path
    on this site.

    Refused: anything over MAX_RETURN_PATH_LENGTH, invisible characters (see
    :func:`_invisible`), a backslash, a scheme (``https:``, ``javascript:``), a host
    (``//evil``) or a path that does not start with a single ``/``. The fragment is dropped
    (pages never send one)."""
    if (len(target) > MAX_RETURN_PATH_LENGTH or "\\" in target or any(map(_invisible, target))
            or not target.startswith("/") or target.startswith("//")):
        return None
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        return None
    path = quote(parts.path, safe=_PATH_SAFE)
    if parts.query:
        path += "?" + quote(parts.query, safe=_QUERY_SAFE)
    # Belt and braces: what we send must resolve to a path on our own host.
    if urlsplit(urljoin(f"https://{_PROBE_HOST}/", path)).netloc != _PROBE_HOST:
        return None
    return path
