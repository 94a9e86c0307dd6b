"""Path and query parameters held to the one control-character check.

A route's path parameters (``/q/{token}``, ``/staff/quotes/{reference}``, the API's
``/models/{slug}``) and the query parameters it declares (``/models?q=``, the API's
``cursor``) are checked here, once for every route, before the route or a query sees them:
a control character is a 422 naming the parameter (:mod:`app.text_input`). Query strings the
HTML forms read whole (the calculator's, the Serve page's, the quote form's) are checked by
the forms, field by field, so their errors stand beside the controls.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError

from app import text_input
from app.errors import InvalidInput

SANITISED_ELSEWHERE: Final = frozenset({"next"})
"""Query parameters another check owns: a ``next`` return path (the language switch, the staff
sign-in) with a control character is not refused but replaced by the home page
(``app/html/return_paths.py``), so a forged link still leads somewhere safe."""


def _offending(request: Request) -> Iterator[tuple[str, str, str]]:
    """(``path`` or ``query``, name, value) of each parameter holding a control character."""
    for name, value in request.path_params.items():
        if text_input.control_character(str(value)) is not None:
            yield "path", name, str(value)
    dependant = getattr(request.scope.get("route"), "dependant", None)
    if isinstance(dependant, Dependant):
        for param in dependant.query_params:
            if param.alias in SANITISED_ELSEWHERE:
                continue
            for value in request.query_params.getlist(param.alias):
                if text_input.control_character(value) is not None:
                    yield "query", param.alias, value


async def refuse_control_characters(request: Request) -> None:
    """A page's dependency: :class:`InvalidInput` (422) on the first such parameter."""
    for _, name, _ in _offending(request):
        raise InvalidInput(text_input.REASON, field=name, key=text_input.KEY)


async def refuse_control_characters_in_api(request: Request) -> None:
    """The partner API's dependency: a validation problem at ``path.<name>`` /
    ``query.<name>`` for each such parameter, as the API words every invalid field."""
    errors = [{"type": text_input.KEY, "loc": (where, name), "msg": text_input.REASON,
               "input": value} for where, name, value in _offending(request)]
    if errors:
        raise RequestValidationError(errors)
