"""ASGI middleware for the HTML surfaces: the request's locale and the security headers.

* ``scope["state"]["lang"]``: cookie, Accept-Language, default (see :mod:`app.html.i18n`),
  so routes, templates and error handlers all read ``request.state.lang``.
* A Content-Security-Policy without ``'unsafe-inline'`` (no inline script or style anywhere;
  htmx is served from ``/static``), ``frame-ancestors`` from the settings so the shop can
  embed the calculator, and the usual no-sniff and referrer headers.
* A Permissions-Policy that turns off the browser features no page uses
  (:data:`PERMISSIONS_POLICY`), and, when the service is told it sits behind TLS
  (``SIZER_PUBLIC_BASE_URL`` starts with ``https://``), Strict-Transport-Security
  (:data:`HSTS`). ``sizer serve`` sends no ``server`` header.

:func:`install` puts the middleware around the whole application, outside Starlette's own
``ServerErrorMiddleware``: a response made outside the routes' handlers (the plain 500 for an
exception in a route or in another middleware, an answer a middleware sends by itself) carries
the headers too. ``add_middleware`` could only place it inside that error middleware.
"""

from __future__ import annotations

from http.cookies import SimpleCookie
from typing import Final

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.config import Settings
from app.html.i18n import LOCALE_COOKIE, negotiate

PERMISSIONS_POLICY: Final = ", ".join(f"{feature}=()" for feature in (
    "accelerometer", "camera", "geolocation", "gyroscope", "magnetometer", "microphone",
    "payment", "usb", "browsing-topics",
))
"""Browser features no page of ours uses, refused to the page and anything it embeds."""
HSTS: Final = "max-age=31536000"
"""One year, the value hstspreload.org and Mozilla's guidance name; no ``includeSubDomains``,
as the shop's other hosts are not ours to decide for."""


def content_security_policy(settings: Settings) -> str:
    return "; ".join([
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "object-src 'none'",
        f"frame-ancestors {' '.join(settings.frame_ancestors)}",
    ])


def _cookie(header: str, name: str) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # a malformed cookie header must not break the page
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


def _locale_headers(headers: list[tuple[bytes, bytes]]) -> tuple[str, str | None]:
    """The request's ``Cookie`` (empty when none) and ``Accept-Language`` (None when none),
    the last of each as a dict of the headers would keep it, without decoding the others."""
    cookie, accept_language = "", None
    for key, value in headers:
        name = key.lower()
        if name == b"cookie":
            cookie = value.decode("latin-1")
        elif name == b"accept-language":
            accept_language = value.decode("latin-1")
    return cookie, accept_language


class WebMiddleware:
    """Sets the locale on every request and the security headers on every response."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.csp = content_security_policy(settings)
        self.hsts = HSTS if (settings.public_base_url or "").startswith("https://") else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cookie, accept_language = _locale_headers(scope["headers"])
        scope.setdefault("state", {})["lang"] = negotiate(
            cookie=_cookie(cookie, LOCALE_COOKIE) if cookie else None,
            accept_language=accept_language,
            supported=self.settings.supported_locales,
            default=self.settings.default_locale,
        )

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                response_headers = MutableHeaders(scope=message)
                response_headers.setdefault("Content-Security-Policy", self.csp)
                response_headers.setdefault("X-Content-Type-Options", "nosniff")
                response_headers.setdefault("Referrer-Policy", "same-origin")
                response_headers.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
                if self.hsts is not None:
                    response_headers.setdefault("Strict-Transport-Security", self.hsts)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def install(app: Starlette, settings: Settings) -> None:
    """Wrap ``app``'s whole middleware stack (built on its first request) in
    :class:`WebMiddleware`, so no response leaves the app without the security headers."""
    build = app.build_middleware_stack

    def build_inside_web_middleware() -> ASGIApp:
        return WebMiddleware(build(), settings)

    app.build_middleware_stack = build_inside_web_middleware  # type: ignore[method-assign]
