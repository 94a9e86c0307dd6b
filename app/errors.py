"""Domain errors that carry their HTTP status but import nothing from the web.

Services raise these; each surface (HTML, htmx, partner JSON, CLI) renders them
its own way (docs/architecture.md rule 9), so the status lives with the error and not in
a mapping table that could drift.
"""

from __future__ import annotations


class DomainError(Exception):
    """Base class: a message meant for the user and the status a surface should use."""

    status_code: int = 400
    code: str = "domain_error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


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
