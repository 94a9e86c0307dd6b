"""Reject oversize bodies before anything parses them: 413 problem+json.

``Content-Length`` over the limit is refused at once; a chunked body is counted as it
arrives and refused as soon as it passes the limit."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.v1.problems import problem
from app.catalog import inline_config

MAX_BODY_BYTES = inline_config.MAX_POSTED_BYTES + 64 * 1024
"""Largest body: a config.json of :data:`~app.catalog.inline_config.MAX_POSTED_BYTES` in
``model_config`` (JSON carries it as it is), with room for the job's fields; larger is 413
before anything is parsed."""


class BodyTooLarge(HTTPException):
    """Raised while reading a chunked body; FastAPI passes HTTPExceptions to the handlers."""

    def __init__(self, detail: str) -> None:
        super().__init__(413, detail)


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        detail = f"The body may be at most {self.max_bytes // 1024} KB."
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    too_large = int(value) > self.max_bytes
                except ValueError:
                    too_large = False
                if too_large:
                    await problem(413, detail)(scope, receive, send)
                    return
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(detail)
            return message

        await self.app(scope, counting_receive, send)
