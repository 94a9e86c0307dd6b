"""Redirects that Starlette builds from the request's Host header point at our public origin.

Starlette answers ``/how-we-calculate/`` with a 307 to ``<scheme>://<Host header><path>``
(``redirect_slashes``), so ``Host: evil.example`` came back as a link to evil.example: with a
shared cache in front, one forged request poisons the answer for everybody. SIZER_PUBLIC_BASE_URL
is the only source of absolute links: this middleware swaps that prefix for
it. The rest of the Location stays behind a fixed origin, so whatever path follows cannot name
another host.
"""

from __future__ import annotations

from starlette.datastructures import URL, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def request_origin(scope: Scope) -> str | None:
    """``scheme://authority`` exactly as Starlette's ``URL(scope=...)`` spells this request's
    own URL (from the Host header, else the listening address); None when it has neither."""
    url = str(URL(scope={"type": "http", "scheme": scope.get("scheme", "http"),
                         "server": scope.get("server"), "headers": scope.get("headers", []),
                         "path": "/", "query_string": b""}))
    return url[:-1] if url != "/" else None


class PublicRedirects:
    """Rewrite a Location that starts with the request's own origin (:func:`request_origin`)
    to start with ``origin`` instead."""

    def __init__(self, app: ASGIApp, origin: str) -> None:
        self.app = app
        self.origin = origin

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        own = request_origin(scope) if scope["type"] == "http" else None
        if own is None:
            await self.app(scope, receive, send)
            return

        async def send_public(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                location = headers.get("location") or ""
                rest = location[len(own):]
                # The whole authority must match: "http://shop.example.org/" is not ours when
                # the Host header says "shop.example".
                if location.startswith(own) and rest[:1] in ("", "/", "?", "#"):
                    headers["location"] = self.origin + rest
            await send(message)

        await self.app(scope, receive, send_public)
