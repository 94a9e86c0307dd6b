"""The vendored reference data is the shop's, unchanged."""

import pytest

from tests.engine.reference import REFERENCE, SHARED_REFERENCE


def test_vendored_reference_equals_shared_reference() -> None:
    if not SHARED_REFERENCE.is_dir():
        pytest.skip(f"{SHARED_REFERENCE} is not beside this checkout; nothing to compare")
    for original in sorted(SHARED_REFERENCE.rglob("*.json")):
        copy = REFERENCE / original.relative_to(SHARED_REFERENCE)
        assert copy.read_bytes() == original.read_bytes(), f"{copy} differs from {original}"
