"""JSON request bodies read with bounded integer literals, for the routes that take a body.

Python's ``json`` converts every integer literal, and refuses one of more than 4,300 digits with
a plain ValueError (``sys.get_int_max_str_digits``); FastAPI then answers "error parsing the
body" for the whole document. Read with :func:`app.catalog.inline_config.loads_bounded`
instead, a literal longer than any bound the API allows stays a placeholder, so the body parses
and the problem points at the field that holds it: ``body.batch_size`` ("Input should be a
valid integer"), or ``body.model_config`` with the place inside the config.json and the digits
counted (the config.json checks every surface shares).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from app.catalog import inline_config


class _BoundedJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = inline_config.loads_bounded(await self.body())
        return self._json


class BoundedJsonRoute(APIRoute):
    """An APIRoute whose JSON body is read by :class:`_BoundedJsonRequest` (FastAPI's custom
    request class pattern: ``APIRouter(route_class=BoundedJsonRoute)``)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def bounded(request: Request) -> Response:
            return await handler(_BoundedJsonRequest(request.scope, request.receive))

        return bounded
