"""The one config.json reader (``app/estimates/inline_config.py``): each refusal is data, the
bound (``problem``) and the place in the document (``path``), never a plain ValueError, a
RecursionError or a UnicodeError escaping to the surface that called it."""

from __future__ import annotations

import json

import pytest

from app.estimates import inline_config
from app.estimates.inline_config import ConfigValueError, read_config_bytes, read_config_text
from tests.security.catalogue import LLAMA, llama, llama_with, nested


@pytest.mark.parametrize(("text", "problem", "path"), [
    ("", "empty", ""),
    (" \n\t", "empty", ""),
    ('{"model_type": "llama",', "syntax", ""),
    ("[1, 2, 3]", "not_object", ""),
    ('"llama"', "not_object", ""),
    (llama_with('"rope_theta": NaN'), "not_finite", "rope_theta"),
    (llama_with('"rope_scaling": {"factor": -Infinity}'), "not_finite", "rope_scaling.factor"),
    (llama_with('"x": [1, 1e400]'), "not_finite", "x[1]"),
    (llama_with('"note": 9007199254740993'), "too_large", "note"),
    (llama_with('"note": -9007199254740993'), "too_large", "note"),
    (llama_with('"note": ' + "9" * 4301), "too_large", "note"),
    (llama_with('"a": {"b": [' + "1" * 200_000 + "]}"), "too_large", "a.b[0]"),
    (llama_with('"note": "\\ud800"'), "not_unicode", "note"),
    (llama_with('"\\udc80": 1'), "not_unicode", "\\udc80"),
    (llama_with('"a": ' + "[" * 33 + "]" * 33), "depth", "a" + "[0]" * 32),
    (nested(100_000), "depth", ""),
])
def test_each_refusal_names_the_bound_and_the_place(text: str, problem: str, path: str) -> None:
    with pytest.raises(ConfigValueError) as refused:
        read_config_text(text)
    assert (refused.value.problem, refused.value.path) == (problem, path)
    assert refused.value.reason
    assert str(refused.value) == (f"{path}: " if path else "") + refused.value.reason


def test_the_bounds_themselves_are_allowed() -> None:
    text = llama_with(f'"big": {2**53}, "small": {-(2**53)}, "nested": ' + "[" * 31 + "]" * 31)
    config = read_config_text(text)
    assert config["big"] == 2**53 and config["small"] == -(2**53)
    assert read_config_text(llama()) == LLAMA


def test_an_overlong_integer_is_counted_not_converted() -> None:
    """200,000 digits: Python would refuse to convert them (over 4,300) with a plain
    ValueError; the reader never tries, and says how many there were."""
    with pytest.raises(ConfigValueError, match=r"got 200000 digits"):
        read_config_text(llama_with('"note": ' + "7" * 200_000))


def test_a_syntax_error_says_where() -> None:
    with pytest.raises(ConfigValueError) as refused:
        read_config_text('{\n  "model_type": "llama",\n  oops\n}')
    assert (refused.value.problem, refused.value.line, refused.value.column) == ("syntax", 3, 3)


def test_a_file_is_utf8_with_or_without_a_byte_order_mark() -> None:
    assert read_config_bytes(b"\xef\xbb\xbf" + llama().encode()) == LLAMA
    with pytest.raises(ConfigValueError) as refused:
        read_config_bytes(b'{"model_type": "\xff"}')
    assert refused.value.problem == "not_unicode"


def test_the_size_is_counted_in_bytes_before_anything_is_decoded() -> None:
    """A reader that stops at the limit may cut a character in two: still the size."""
    too_big = ("{" + '"a": "' + "é" * inline_config.MAX_CONFIG_BYTES + '"}').encode()
    with pytest.raises(ConfigValueError) as refused:
        read_config_bytes(too_big[: inline_config.MAX_CONFIG_BYTES + 1])
    assert refused.value.problem == "size"
    with pytest.raises(ConfigValueError) as refused:
        read_config_text(too_big.decode())
    assert refused.value.problem == "size"


def test_a_parsed_document_is_held_to_the_same_bounds() -> None:
    """The API's body arrives parsed: the same walk, and the size of its JSON."""
    with pytest.raises(ConfigValueError, match=r"^x: numbers must be finite"):
        inline_config.check_values({"x": float("nan")})
    with pytest.raises(ConfigValueError) as refused:
        inline_config.check_values({"x": 10**5000})
    assert refused.value.problem == "too_large"
    with pytest.raises(ConfigValueError) as refused:
        inline_config.check_size({"x": "y" * inline_config.MAX_CONFIG_BYTES})
    assert refused.value.problem == "size"
    inline_config.check_size(json.loads(llama()))


def test_a_shown_path_is_one_short_printable_line() -> None:
    """The keys are the stranger's: a newline or 10 KB of key must not reach a log line."""
    with pytest.raises(ConfigValueError) as refused:
        read_config_text(json.dumps({"a\nb": float("nan")}))
    assert refused.value.path == "a\\nb"
    with pytest.raises(ConfigValueError) as refused:
        read_config_text(json.dumps({"k" * 10_000: float("nan")}))
    assert len(refused.value.path) == inline_config.MAX_PATH_CHARS
