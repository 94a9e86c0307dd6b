"""Form parsing for HTML surfaces: bounded bodies, typed fields, per-field errors.

Errors are collected per field (``{"batch": "must be ..."}``) so a page can print each one
beside its control; messages are English source strings that templates translate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qsl

from fastapi import HTTPException, Request

from app.catalog import inline_config
from app.text_input import control_character

MAX_FORM_BYTES: Final = 3 * inline_config.MAX_POSTED_BYTES + 64 * 1024
"""Largest urlencoded body read: a pasted config.json of
:data:`~app.catalog.inline_config.MAX_POSTED_BYTES` fits whatever its characters (percent-
encoding takes at most 3 bytes a byte; MiniMax-M3-NVFP4's 3,087,083 bytes take 3,936,402), with
room for the form's other fields. Read in chunks and refused the moment it passes the limit."""
FORM_MEDIA_TYPE: Final = "application/x-www-form-urlencoded"


@dataclass
class FormBody:
    """A POSTed form's fields (last value wins), or ``too_large`` when it was cut off."""

    fields: dict[str, str] = field(default_factory=dict)
    too_large: bool = False


async def read_form(request: Request) -> FormBody:
    """Read an urlencoded body, never more than MAX_FORM_BYTES (a FastAPI dependency).

    A body of another declared type (JSON posted to a page, say) is 415: read as a form it
    would be an empty one, and the page would answer a request nobody made."""
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type and media_type != FORM_MEDIA_TYPE:
        raise HTTPException(415, f"send the form as {FORM_MEDIA_TYPE}")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_FORM_BYTES:
        return FormBody(too_large=True)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return FormBody(too_large=True)
        chunks.append(chunk)
    text = b"".join(chunks).decode("utf-8", errors="replace")
    return FormBody(fields=dict(parse_qsl(text, keep_blank_values=True)))


def N_(message: str) -> str:
    """Mark a message for extraction; it is translated where it is shown."""
    return message


@dataclass(frozen=True)
class FieldError:
    """One message (an English msgid) with named numbers or words to put into it."""

    message: str
    params: Mapping[str, int | float | str | FieldError] = field(default_factory=dict)


@dataclass
class FieldErrors:
    """Messages by field name; the first message per field wins."""

    messages: dict[str, FieldError] = field(default_factory=dict)

    def add(self, name: str, message: str, **params: int | str) -> None:
        self.messages.setdefault(name, FieldError(message, params))

    def __bool__(self) -> bool:
        return bool(self.messages)


CONTROL_MESSAGE: Final = N_("Please leave out control characters.")
"""What a form says about a control character (:mod:`app.text_input`)."""


def no_control(
    data: Mapping[str, str], name: str, errors: FieldErrors, *, multiline: bool = False,
) -> bool:
    """Whether field ``name`` is free of control characters (:mod:`app.text_input`, the one
    check every surface uses); an error on ``name`` otherwise."""
    if control_character(data.get(name, ""), multiline=multiline) is None:
        return True
    errors.add(name, CONTROL_MESSAGE)
    return False


def text(
    data: Mapping[str, str], name: str, errors: FieldErrors, *, default: str = "",
    max_length: int = 200, required: bool = False, multiline: bool = False,
) -> str:
    """A text field, stripped; refused with its field's error when it holds a control
    character (tab and line breaks only where ``multiline``), is required and empty, or is
    longer than ``max_length``."""
    if not no_control(data, name, errors, multiline=multiline):
        return ""
    value = data.get(name, default).strip()
    if required and not value:
        errors.add(name, N_("This field is required."))
    elif len(value) > max_length:
        errors.add(name, N_("At most %(max)s characters."), max=max_length)
    return value


def integer(
    data: Mapping[str, str], name: str, errors: FieldErrors, *, default: int,
    minimum: int, maximum: int, blank_is_error: bool = False,
) -> int:
    """The field's whole number, ``default`` when it is absent; a field sent empty is the
    default too unless ``blank_is_error`` (a form whose every field is always sent: an
    emptied field is a mistake to name, not a wish for the default)."""
    raw = data.get(name, "").strip()
    if raw == "" and blank_is_error and name in data:
        errors.add(name, N_("Enter a number from %(min)s to %(max)s."), min=minimum, max=maximum)
        return default
    if raw == "" or not no_control(data, name, errors):
        return default
    try:
        value = int(raw)
    except ValueError:
        errors.add(name, N_("Enter a whole number."))
        return default
    if not minimum <= value <= maximum:
        errors.add(name, N_("Enter a number from %(min)s to %(max)s."), min=minimum, max=maximum)
        return value
    return value


def choice(
    data: Mapping[str, str], name: str, errors: FieldErrors, *, choices: Sequence[str],
    default: str,
) -> str:
    value = data.get(name, "").strip() or default
    if not no_control(data, name, errors):
        return default
    if value not in choices:
        errors.add(name, N_("Choose one of the offered values."))
        return default
    return value


def flag(data: Mapping[str, str], name: str) -> bool:
    return data.get(name, "").strip().lower() in {"1", "on", "true", "yes"}
