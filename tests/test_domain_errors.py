"""Domain errors are data: each surface reads the field and the reason the raiser gave, and a
reason that happens to hold a colon is never split into a made-up field."""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from app.api.v1.problems import on_domain
from app.errors import InvalidInput, NotFound
from app.html.forms import FieldErrors
from app.staff.forms import domain_field_error

COLON_REASON = "the partner 'Acme: Labs' is suspended; reinstate it first"


def _problem(error: Exception) -> tuple[int, Any]:
    """The API's answer to ``error``. The handler awaits nothing, so one step runs it; no event
    loop is started (the browser tests may leave one running in this thread)."""
    handler = on_domain(None, error)  # type: ignore[arg-type]
    try:
        handler.send(None)
    except StopIteration as done:
        response: Response = done.value
        return response.status_code, json.loads(bytes(response.body))
    raise AssertionError("the handler awaited something")


def test_the_error_keeps_what_the_raiser_gave() -> None:
    error = InvalidInput("must be from 1 to 100", field="quantity")
    assert (error.field, error.reason, error.key, dict(error.params)) == (
        "quantity", "must be from 1 to 100", "", {})
    assert error.detail == str(error) == "quantity: must be from 1 to 100"
    assert NotFound("quote request not found").detail == "quote request not found"


def test_the_staff_desk_puts_a_field_less_reason_beside_its_fallback() -> None:
    errors = FieldErrors()
    domain_field_error(InvalidInput(COLON_REASON), errors, fallback="partner_id")
    assert list(errors.messages) == ["partner_id"]
    assert errors.messages["partner_id"].message == COLON_REASON


def test_the_api_points_a_field_less_reason_at_the_body() -> None:
    status, body = _problem(InvalidInput(COLON_REASON))
    assert status == 422
    assert body["errors"] == [{"location": "body", "reason": COLON_REASON}]


def test_the_api_names_the_field_the_raiser_gave() -> None:
    error = InvalidInput("at most 1,024 is supported, got 5,000",
                         field="model_config.num_hidden_layers")
    _, body = _problem(error)
    assert body["errors"] == [{"location": "body.model_config.num_hidden_layers",
                               "reason": "at most 1,024 is supported, got 5,000"}]
