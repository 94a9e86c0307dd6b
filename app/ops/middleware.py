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


def _route(scope: Scope) -> str:
    """The route template ("/api/v1/models/{slug}"), never the raw path: bounded labels.

    The router records the route it chose in the scope (which it shares with us)."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str) and path:
        return path
    if scope.get("path", "").startswith("/static/"):
        return "/static"
    return "unmatched"


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
            route = _route(scope)
            method = str(scope.get("method", ""))
            metrics.REQUEST_SECONDS.labels(route, method, f"{status // 100}xx").observe(seconds)
            log.info(
                "request",
                extra={
                    "method": method, "path": scope.get("path", ""), "route": route,
                    "status": status, "ms": round(seconds * 1000, 2),
                },
            )
            logs.request_id.reset(token)
