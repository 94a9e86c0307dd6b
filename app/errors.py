"""Domain errors that carry their HTTP status but import nothing from the web.

Services raise these; each surface (HTML, htmx, partner JSON, CLI) renders them
its own way (docs/architecture.md rule 9), so the status lives with the error and not in
a mapping table that could drift.
"""

from __future__ import annotations

from collections.abc import Mapping

ErrorParam = str | int
"""A value a translated wording takes (see :attr:`DomainError.params`)."""


class DomainError(Exception):
    """Base class: what went wrong, as data, and the status a surface should use.

    The raiser gives the ``field`` the error is about (``""`` when it is about no one field) and
    the ``reason`` in English; surfaces put the reason beside the field (the API's problem+json
    ``errors[].location``, the page's inline message, the CLI's stderr) and never take a
    message apart to find it. ``key`` and ``params`` name a wording a page can translate (the
    engine's error keys, :data:`app.engine.errors.ERROR_TEXTS`); ``""`` when there is none."""

    status_code: int = 400
    code: str = "domain_error"

    def __init__(self, reason: str, *, field: str = "", key: str = "",
                 params: Mapping[str, ErrorParam] | None = None) -> None:
        self.field = field
        self.reason = reason
        self.key = key
        self.params: Mapping[str, ErrorParam] = dict(params or {})
        super().__init__(self.detail)

    @property
    def detail(self) -> str:
        """The one-line English message: ``field: reason`` (for titles and the CLI)."""
        return f"{self.field}: {self.reason}" if self.field else self.reason


class NotFound(DomainError):
    """The thing asked for does not exist (or is not active)."""

    status_code = 404
    code = "not_found"


class Conflict(DomainError):
    """The write lost a race (optimistic locking) or breaks a uniqueness rule."""

    status_code = 409
    code = "conflict"


class InvalidInput(DomainError):
    """The request is well-formed but its values cannot be used."""

    status_code = 422
    code = "invalid_input"


class Unavailable(DomainError):
    """Something the request needs from elsewhere cannot be had right now (the Hugging Face
    Hub is unreachable or slow); the same request may succeed later."""

    status_code = 503
    code = "unavailable"


class TooManyRequests(DomainError):
    """A client asked for more than its share of something costly (anonymous Hugging Face
    look-ups); ``retry_after_s`` says when it may ask again (the ``Retry-After`` header)."""

    status_code = 429
    code = "too_many_requests"

    def __init__(self, reason: str, *, field: str = "", key: str = "",
                 params: Mapping[str, ErrorParam] | None = None,
                 retry_after_s: int = 60) -> None:
        super().__init__(reason, field=field, key=key, params=params)
        self.retry_after_s = retry_after_s
