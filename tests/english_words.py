"""English that must not appear on a German page: common English words, checked against the
text a reader sees (markup, scripts, code and product names left out). Shared by the customer
and staff desk tests (issue 18, point 8)."""

from __future__ import annotations

import html
import re

ENGLISH = re.compile(
    r"\b(the|and|with|of|for|is|are|your|this|not|fits|free|usable|request|quote|price|stock"
    r"|valid|until|none|data parallel|states|weights|memory|card|cards|total|sent|accepted"
    r"|expired|created|updated|changed|edit|save|sign|search|all|any|from|to|by|on|at|or|yes"
    r"|no|draft|new|open|closed|actions?|entity|actor|when|who|what|before|after|field)\b",
    re.I,
)
ALLOWED = re.compile(
    r"(Workstation|Server|Max-Q) Edition|meta-llama/\S+|GB10 Grace Blackwell Superchip"
    r"|\ball-linear\b|https?://\S+",
    re.I,
)
"""Product names, a library's own option value (PEFT's ``all-linear``) and web addresses (a
quote's link carries a random token such as ``at-AZoH...``, whose ``at`` is no English)."""


def visible(body: str) -> str:
    """The text a reader sees: no tags, scripts, styles, SVG, code or titles."""
    body = re.sub(r"<(script|style|svg|code|pre|title)\b.*?</\1>", " ", body, flags=re.S)
    body = re.sub(r"<[^>]+>", " ", body)
    return ALLOWED.sub(" ", html.unescape(body))


def english(body: str) -> list[str]:
    """Each English word found, with the text around it."""
    text = visible(body)
    return [text[max(0, m.start() - 40):m.end() + 40].replace("\n", " ")
            for m in ENGLISH.finditer(text)]
