"""Bad-input catalogue, language switch: return paths (``/lang/<code>?next=...``) that must not
take a browser off this site, nor give a 500 (issue 13, point 2).

Browsers drop tab, CR and LF anywhere in a URL, strip leading controls and spaces and read
``\\`` as ``/`` (WHATWG URL standard), so each of these is, or once was, a way to another host.
"""

from __future__ import annotations

from typing import Final

HOSTILE_RETURN_PATHS: Final[tuple[str, ...]] = (
    "/\t/evil.example/x",  # the probe's: Chromium dropped the tab and went to evil.example
    "/\n/evil.example/x",
    "/\r/evil.example/x",
    "\t//evil.example/x",
    " //evil.example/x",
    "/\u2028",  # the probe's 500: not Latin-1, so not a header value
    "/\u2029/evil.example/x",
    "/\u00a0/evil.example/x",  # no-break space
    "/\u3000/evil.example/x",  # ideographic space
    "/\u200b/evil.example/x",  # zero-width space (a format character)
    "/\u202e/evil.example/x",  # right-to-left override
    "/\ufeff/evil.example/x",  # byte-order mark
    "/\x00",
    "/\x7f",
    "/\x85/evil.example/x",  # NEL, a C1 control
    "/\\evil.example/x",
    "/\\t/evil.example/x",  # a backslash and a t, read as "//t/evil.example/x"
    "\\\\evil.example/x",
    "//evil.example/x",
    "///evil.example/x",
    "https://evil.example/x",
    "HTTPS://evil.example/x",
    "https:evil.example",
    "//user@evil.example",
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "evil.example/x",
    "",
    "//[",  # not even a URL (urlsplit raises)
)
"""The decoded ``next`` value: the switch must answer 303 to ``/``."""

RAW_HOSTILE_RETURN_QUERIES: Final[tuple[str, ...]] = (
    "next=/%09/evil.example/x",
    "next=/%0A/evil.example/x",
    "next=/%0D/evil.example/x",
    "next=%09//evil.example/x",
    "next=%20//evil.example/x",
    "next=/%E2%80%A8",
    "next=/%E2%80%A9/evil.example/x",
    "next=/%C2%A0/evil.example/x",
    "next=/%5Cevil.example/x",
    "next=/%5C%09/evil.example/x",
    "next=%2F%2Fevil.example/x",
    "next=/%2F%2Fevil.example/x",
    "next=/%252F%252Fevil.example/x",  # decoded once: a path with escaped slashes, kept
    "next=/%2509/evil.example/x",  # decoded once: a path with an escaped tab, kept
    "next=https%3A%2F%2Fevil.example",
    "next=javascript%3Aalert(1)",
    "next=%6A%61%76%61%73%63%72%69%70%74:alert(1)",
    "next=/%00",
    "next=/%FF%FE",  # not UTF-8
    "next=/%ED%A0%80",  # an encoded lone surrogate
    "next=/&next=//evil.example",
    "next=//evil.example&next=/",
)
"""Query strings sent as they are (the browser's own encoding): the switch must answer 303 to a
path on this site, never a 500."""
