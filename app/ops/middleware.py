"""One ASGI middleware for every request: a request id, timing, one log line, metrics.

The id comes from the client's or proxy's ``X-Request-ID`` when it looks like an id (so a
load balancer's id follows the request through), otherwise a new UUID; it is echoed in the
response's ``X-Request-ID`` header and in every log line written while the request runs.
"""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.ops import logs, metrics

log = logging.getLogger("sizer.request")

# What we accept as an incoming request id: short, and nothing that could forge a log line.
_ID = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")


UNMATCHED = "unmatched"
"""The route label of a request no route took (a 404 for any path anyone cares to send)."""

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
"""The methods that keep their own metrics label: RFC 9110's, less CONNECT and TRACE, which no
route of ours answers. Anything else a client invents (``curl -X M$RANDOM``) is OTHER_METHOD,
so /metrics cannot grow with what clients send."""
OTHER_METHOD = "other"

STATUS_CLASSES = frozenset(f"{digit}xx" for digit in range(1, 6))
"""HTTP's five status classes (RFC 9110 section 15); a status outside them is OTHER_STATUS."""
OTHER_STATUS = "other"


def route_label(scope: Scope) -> str:
    """The route template ("/api/v1/models/{slug}"), never the raw path: bounded labels.

    The router records the route it chose in the scope (which it shares with us), so the label
    is one of the app's own route templates, "/static" or UNMATCHED. A mounted app's routes
    (the partner API's "/models") carry the mount's path, which the router leaves in
    ``root_path`` ("/api/v1"): both are fixed by the code, never by the request."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str) and path:
        return str(scope.get("root_path", "")) + path
    if scope.get("path", "").startswith("/static/"):
        return "/static"
    return UNMATCHED


def metric_labels(scope: Scope, status: int) -> tuple[str, str, str]:
    """Route, method and status class of a request, each from a fixed set."""
    method = str(scope.get("method", ""))
    status_class = f"{status // 100}xx"
    return (
        route_label(scope),
        method if method in METHODS else OTHER_METHOD,
        status_class if status_class in STATUS_CLASSES else OTHER_STATUS,
    )


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = ""
        for key, value in scope.get("headers", []):
            if key == b"x-request-id":
                incoming = value.decode("latin-1")
                break
        request_id = incoming if _ID.match(incoming) else uuid.uuid4().hex
        token = logs.request_id.set(request_id)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                MutableHeaders(scope=message)["X-Request-ID"] = request_id
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - started
            route, method_label, status_class = metric_labels(scope, status)
            metrics.REQUEST_SECONDS.labels(route, method_label, status_class).observe(seconds)
            log.info(
                "request",
                extra={
                    # The log line keeps the method as sent (it is one line, not a series).
                    # The route template, never the path: a /q/<token> link is a customer's
                    # key to a binding order and must not sit in the log.
                    "method": str(scope.get("method", "")), "route": route,
                    "status": status, "ms": round(seconds * 1000, 2),
                },
            )
            logs.request_id.reset(token)
