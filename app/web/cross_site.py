"""Cross-site posts refused: the storefront's two anonymous POSTs that
store something, ``POST /quote`` (a quote request) and ``POST /q/<token>/accept`` (a binding
order), come only from the shop's own pages.

* :func:`same_origin`, their dependency: a request whose ``Origin`` (or, without one, whose
  ``Referer``) names another origin than the shop's is refused with 403 before its body is
  read. The shop's origin is ``SIZER_PUBLIC_BASE_URL`` or, where that is not set (a
  development server on loopback), the origin the request was sent to. A request with
  neither header (a script, a very old browser) is let through: the per-address limit and,
  for accepting, the page's token still hold it.
* :func:`accept_token` / :func:`accept_token_ok`: the /q/ page's accept form carries a token
  of that page (an HMAC of the quote's token and the time the page was rendered, keyed with
  ``SIZER_SECRET_KEY``), good for :data:`ACCEPT_TOKEN_HOURS`. A third-party page cannot read
  it, so it cannot make a visitor's browser accept a quote even where a browser sends neither
  header.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Final
from urllib.parse import urlsplit

from fastapi import HTTPException, Request

from app.config import Settings

ACCEPT_TOKEN_HOURS: Final = 24
"""How long an accept form stays good after its page was rendered (a customer who leaves
the page open overnight reloads it)."""
_MAC_CHARS: Final = 32


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}" if parts.scheme else ""


def shop_origins(request: Request) -> set[str]:
    """The origins a form of this shop is posted from."""
    settings: Settings = request.app.state.settings
    if settings.public_base_url:
        return {_origin(settings.public_base_url)}
    return {_origin(str(request.base_url))}


async def same_origin(request: Request) -> None:
    """403 for a post from another site (``Origin``, else ``Referer``, names another
    origin, or ``Origin: null``)."""
    sent = request.headers.get("origin")
    if sent is None:
        referer = request.headers.get("referer")
        if referer is None:
            return
        sent = _origin(referer)
    if sent.lower() not in shop_origins(request):
        raise HTTPException(403, "this form is posted only from the shop's own pages")


def _mac(settings: Settings, quote_token: str, issued: int) -> str:
    key = settings.secret_key.get_secret_value().encode()
    message = f"accept|{quote_token}|{issued}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:_MAC_CHARS]


def accept_token(settings: Settings, quote_token: str, *, now: float | None = None) -> str:
    """The accept form's token for the page of ``quote_token``, rendered ``now``."""
    issued = int(time.time() if now is None else now)
    return f"{issued}.{_mac(settings, quote_token, issued)}"


def accept_token_ok(settings: Settings, quote_token: str, sent: str, *,
                    now: float | None = None) -> bool:
    """Whether ``sent`` is a token this shop put on the page of ``quote_token`` within the
    last :data:`ACCEPT_TOKEN_HOURS`."""
    issued_text, _, mac = sent.partition(".")
    if not (issued_text.isascii() and issued_text.isdigit() and len(issued_text) <= 12):
        return False
    issued = int(issued_text)
    age = (time.time() if now is None else now) - issued
    if not 0 <= age <= ACCEPT_TOKEN_HOURS * 3600:
        return False
    return hmac.compare_digest(mac.encode(), _mac(settings, quote_token, issued).encode())
