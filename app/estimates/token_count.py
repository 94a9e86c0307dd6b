"""A number of tokens as people write it: ``10M``, ``250k``, ``1.5B``, ``20000000``.

``sizer estimate --dataset-tokens`` and the page's dataset field read the customer's data size
here; the API takes a plain integer (``dataset_tokens``). The bounds are the shop's
(:mod:`app.estimates.job_limits`).
"""

from __future__ import annotations

import re

from app.errors import InvalidInput
from app.estimates.job_limits import MAX_DATASET_TOKENS

_COUNT = re.compile(r"^\s*(\d{1,16}(?:\.\d{1,6})?)\s*([kmbgt])?\s*$", re.IGNORECASE)
_FACTORS = {"k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12, None: 1}


def parse_token_count(text: str, *, field: str = "dataset_tokens") -> int:
    """``10M``, ``250k``, ``1.5B`` (G as B), ``2T`` or a plain whole number as tokens; refuses
    anything else, and anything under 1 or above the shop's bound, naming ``field``."""
    match = _COUNT.match(text)
    if match is None:
        raise InvalidInput("expected a number of tokens such as 10M, 250k or 1.5B", field=field)
    suffix = match.group(2).lower() if match.group(2) else None
    count = round(float(match.group(1)) * _FACTORS[suffix])
    if not 1 <= count <= MAX_DATASET_TOKENS:
        raise InvalidInput(f"expected between 1 and {MAX_DATASET_TOKENS:,} tokens", field=field)
    return count
