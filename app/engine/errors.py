"""The engine's one error type: what was wrong, and in which input field."""

from __future__ import annotations


class EngineError(ValueError):
    """Bad input to the engine. The message reads ``field: reason``; both are kept apart so that
    every surface can point at the field (422 on the API, an inline message on the page, exit 2
    in the CLI)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        field, sep, reason = message.partition(": ")
        self.field = field if sep else "input"
        self.reason = reason if sep else message
