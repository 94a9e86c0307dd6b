"""Low-precision training formats a card supports, from its compute capability.

Source: NVIDIA Transformer Engine (README and support matrix, September 2026; the shop's
article): "FP8 features require compute capability 8.9+"; MXFP8 and NVFP4 are Blackwell-only,
and Transformer Engine's own support check refuses MXFP8 on 12.0 and above ("not supported on
12.0+ architectures yet"). So the RTX PRO Blackwell cards (12.0) and DGX Spark (12.1) get FP8
and NVFP4 but not MXFP8; H200 (9.0) gets FP8 only. Our estimates credit no memory saving to
these formats: they change throughput, not the accounting above.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from app.engine.errors import EngineError

FP8_MIN_CC = (8, 9)
BLACKWELL_MIN_CC = (10, 0)
MXFP8_REFUSED_FROM_CC = (12, 0)


class CapabilityError(EngineError):
    """A compute capability that is not of the form 'major.minor'."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    compute_capability: str
    fp8: bool
    mxfp8: bool
    nvfp4: bool

    @property
    def formats(self) -> tuple[str, ...]:
        return tuple(
            name for name, ok in (("FP8", self.fp8), ("MXFP8", self.mxfp8), ("NVFP4", self.nvfp4))
            if ok
        )


def parse_compute_capability(value: str) -> tuple[int, int]:
    major, sep, minor = value.strip().partition(".")
    if not sep or not major.isdigit() or not minor.isdigit():
        raise CapabilityError("compute_capability", "compute_capability_format",
                              value=repr(value))
    return int(major), int(minor)


@lru_cache(maxsize=64)
def capabilities(compute_capability: str) -> Capabilities:
    """The card's formats, kept per compute capability (a sizing asks for every card it
    holds a job against; a catalog has a handful of capabilities)."""
    cc = parse_compute_capability(compute_capability)
    blackwell = cc >= BLACKWELL_MIN_CC
    return Capabilities(
        compute_capability=compute_capability,
        fp8=cc >= FP8_MIN_CC,
        mxfp8=blackwell and cc < MXFP8_REFUSED_FROM_CC,
        nvfp4=blackwell,
    )
