"""Small customer pages: the language switcher and "How we calculate"."""

from __future__ import annotations

import json
import unicodedata
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.config import ROOT, STATIC_DIR, Settings
from app.engine.documentation import TERMS
from app.engine.estimate import ENGINE_VERSION
from app.html.i18n import LOCALE_COOKIE
from app.html.templating import render

router = APIRouter(include_in_schema=False)

ACCURACY_JSON = ROOT / "docs" / "accuracy.json"
ACCURACY_PNG = STATIC_DIR / "img" / "accuracy.png"
ONE_YEAR_S = 365 * 24 * 3600


HOME = "/"
"""Where the switch goes back to when the requested return path is refused."""

MAX_NEXT_LENGTH = 2048
"""Longest return path kept. The pages send their own path and query (a calculator URL is a few
hundred characters); 2048 is the classic URL length every browser and proxy accepts. A longer
one goes home instead of being echoed into a header."""

_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
"""RFC 3986 ``pchar`` punctuation plus ``/`` and ``%`` (escapes stay as they are): what may stand
unescaped in the path we send back. Anything else (``ü``, ``日本``) is percent-encoded, so the
Location header is plain ASCII (Starlette encodes headers as Latin-1; U+2028 was a 500)."""
_QUERY_SAFE = _PATH_SAFE + "?"
"""A query may also carry ``?`` unescaped (RFC 3986 ``query``)."""

_PROBE_HOST = "sizer.invalid"
"""A stand-in for our own host (``.invalid`` is reserved, RFC 2606): the finished Location must
resolve against it to this very host."""


def _invisible(char: str) -> bool:
    """Control, format, separator and space characters (Unicode categories C* and Z*).

    Browsers drop tab, CR and LF from anywhere in a URL and strip leading controls and spaces
    (WHATWG URL standard), so ``/<TAB>/evil.example`` arrives as ``//evil.example``, another
    host. Rather than mimic that normalisation, any such character refuses the whole target."""
    return unicodedata.category(char)[0] in "CZ"


def safe_next(target: str) -> str:
    """The return path, rebuilt from its parsed path and query, or HOME if it is not plainly a
    path on this site.

    Refused: anything over MAX_NEXT_LENGTH, invisible characters (see :func:`_invisible`), a
    backslash (browsers read it as ``/``), a scheme (``https:``, ``javascript:``), a host
    (``//evil``) or a path that does not start with a single ``/``. The fragment is dropped (the
    pages never send one)."""
    if (len(target) > MAX_NEXT_LENGTH or "\\" in target or any(map(_invisible, target))
            or not target.startswith("/") or target.startswith("//")):
        return HOME
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        return HOME
    location = quote(parts.path, safe=_PATH_SAFE)
    if parts.query:
        location += "?" + quote(parts.query, safe=_QUERY_SAFE)
    # Belt and braces: what we send must resolve to a path on our own host.
    if urlsplit(urljoin(f"https://{_PROBE_HOST}/", location)).netloc != _PROBE_HOST:
        return HOME
    return location


@router.get("/lang/{code}")
def switch_language(request: Request, code: str, next: str = "/") -> Response:
    """The visible switcher: remember the choice in a cookie and go back where we were."""
    settings: Settings = request.app.state.settings
    response = Response(status_code=303, headers={"Location": safe_next(next)})
    if code in settings.supported_locales:
        response.set_cookie(
            LOCALE_COOKIE, code, max_age=ONE_YEAR_S, httponly=True, samesite="lax",
            secure=request.url.scheme == "https",
        )
    return response


def _accuracy() -> dict[str, Any] | None:
    if not ACCURACY_JSON.is_file():
        return None
    try:
        data = json.loads(ACCURACY_JSON.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else {"rows": data}


@router.get("/how-we-calculate", response_class=HTMLResponse)
def how_we_calculate(request: Request) -> HTMLResponse:
    """Every term with its formula and source, straight from the engine's documentation."""
    return render(
        request, "web/how_we_calculate.html",
        {"terms": TERMS, "engine_version": ENGINE_VERSION, "accuracy": _accuracy(),
         "accuracy_plot": ACCURACY_PNG.is_file()},
    )
