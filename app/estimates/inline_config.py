"""The bounds a customer's own config.json is held to, the same on every surface.

A pasted (storefront), posted (partner API) or named (``sizer estimate --model-config``)
config.json is a stranger's document. The engine reads a few positive integers out of it, but
the whole document is parsed and kept, so page, API and CLI refuse the same things before the
engine sees it:

* more than 256 KB of UTF-8 (:data:`MAX_CONFIG_BYTES`);
* nesting deeper than 32 levels (:data:`MAX_DEPTH`);
* ``NaN`` and ``Infinity``, which Python's ``json`` module accepts although JSON has neither;
* integers beyond +-2**53 (:data:`MAX_JSON_INT`), what every JSON parser holds exactly and far
  beyond any real model's dimensions;
* text that is not Unicode: a lone surrogate (``"\\ud800"`` is valid JSON syntax) in a key or
  a string, which no UTF-8 encoder, response or database can take.
"""

from __future__ import annotations

import math
import re
from typing import Final, Literal

MAX_CONFIG_BYTES: Final = 256 * 1024
"""Largest config.json, in bytes of UTF-8."""
MAX_DEPTH: Final = 32
"""Deepest nesting of objects and lists inside a config.json."""
MAX_JSON_INT: Final = 2**53
"""Largest integer (in absolute value) inside a config.json."""

Problem = Literal["depth", "not_finite", "too_large", "not_unicode"]

_SURROGATE = re.compile("[\ud800-\udfff]")


class ConfigValueError(ValueError):
    """A config.json value outside the bounds; ``problem`` says which bound, for translation."""

    def __init__(self, problem: Problem, reason: str) -> None:
        super().__init__(reason)
        self.problem: Problem = problem
        self.reason = reason


def check_values(value: object, depth: int = 0) -> None:
    """Raise :class:`ConfigValueError` if ``value`` (a parsed config.json) breaks a bound.

    The walk stops at :data:`MAX_DEPTH`, so it never recurses deeper than that itself."""
    if depth > MAX_DEPTH:
        raise ConfigValueError("depth", f"nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, str):
        _check_text(value)
        return
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigValueError("not_finite", "numbers must be finite (no NaN or Infinity)")
    elif isinstance(value, int):
        if abs(value) > MAX_JSON_INT:
            digits = math.floor(math.log10(abs(value))) + 1
            raise ConfigValueError(
                "too_large", f"integers must be within +-2**53 (got {digits} digits)"
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(str(key))
            check_values(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            check_values(item, depth + 1)


def _check_text(text: str) -> None:
    if _SURROGATE.search(text):
        raise ConfigValueError("not_unicode", "text must be Unicode (no lone surrogates)")
