"""A card's memory as people write it: ``24GiB``, ``80GB``, ``96`` (GB).

``sizer estimate --gpu-memory`` and ``sizer serving --gpu-memory`` hold a job against an ad-hoc
card of that driver-reported total (gpu "custom"); both read the size here.
"""

from __future__ import annotations

import re

from app.errors import InvalidInput

MIN_GPU_MEMORY = 1 << 30
MAX_GPU_MEMORY = 1 << 44
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(gib|gb|mib|mb|tib|tb)?\s*$", re.IGNORECASE)
_UNITS = {"gib": 1 << 30, "gb": 10**9, "mib": 1 << 20, "mb": 10**6, "tib": 1 << 40,
          "tb": 10**12, None: 10**9}


def parse_memory_size(text: str) -> int:
    """``24GiB``, ``80GB``, ``96`` (GB) as bytes; refuses anything else naming ``gpu_memory``."""
    match = _SIZE.match(text)
    if match is None:
        raise InvalidInput("expected a size such as 24GiB or 80GB", field="gpu_memory")
    unit = match.group(2).lower() if match.group(2) else None
    size = int(float(match.group(1)) * _UNITS[unit])
    if not MIN_GPU_MEMORY <= size <= MAX_GPU_MEMORY:
        raise InvalidInput("expected between 1 GiB and 16 TiB", field="gpu_memory")
    return size
