"""The one config.json reader (``app/catalog/inline_config.py``): each refusal is data, the
bound (``problem``) and the place in the document (``path``), never a plain ValueError, a
RecursionError or a UnicodeError escaping to the surface that called it."""

from __future__ import annotations

import json

import pytest

from app.catalog import inline_config
from app.catalog.inline_config import ConfigValueError, read_config_bytes, read_config_text
from tests.security.catalogue import LLAMA, llama, llama_with, nested


@pytest.mark.parametrize(("text", "problem", "path"), [
    ("", "empty", ""),
    (" \n\t", "empty", ""),
    ('{"model_type": "llama",', "syntax", ""),
    ("[1, 2, 3]", "not_object", ""),
    ('"llama"', "not_object", ""),
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
    too_big = ("{" + '"a": "' + "é" * inline_config.MAX_DOCUMENT_BYTES + '"}').encode()
    with pytest.raises(ConfigValueError) as refused:
        read_config_bytes(too_big[: inline_config.MAX_DOCUMENT_BYTES + 1])
    assert refused.value.problem == "document_size"
    with pytest.raises(ConfigValueError) as refused:
        read_config_text(too_big.decode())
    assert (refused.value.problem, refused.value.limit) == ("document_size",
                                                            inline_config.MAX_DOCUMENT_BYTES)


def test_a_parsed_document_is_held_to_the_same_bounds() -> None:
    """The API's body arrives parsed: the same walk, and the size of its JSON (its NaN and
    Infinity replaced by their text first, as the text reader keeps them)."""
    with pytest.raises(ConfigValueError, match=r"^x: numbers must be finite"):
        inline_config.check_values({"x": float("nan")})
    kept = inline_config.replace_non_finite({"x": [float("nan"), -float("inf")]})
    assert kept == {"x": ["NaN", "-Infinity"]}
    inline_config.check_values(kept)
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
        read_config_text(json.dumps({"a\nb": 10**20}))
    assert refused.value.path == "a\\nb"
    with pytest.raises(ConfigValueError) as refused:
        read_config_text(json.dumps({"k" * 10_000: 10**20}))
    assert len(refused.value.path) == inline_config.MAX_PATH_CHARS


def test_nan_and_infinity_are_read_as_transformers_reads_them_and_kept_as_text() -> None:
    """Python's json (transformers' reader) accepts them; kept as text, the document stays
    storable (PostgreSQL's jsonb) and prints as standard JSON."""
    config = read_config_text(llama_with(
        '"time_step_limit": [0.0, Infinity], "rope_scaling": {"factor": -Infinity}, '
        '"x": [NaN, 1e400, -1e400]'))
    assert config["time_step_limit"] == [0.0, "Infinity"]
    assert config["rope_scaling"] == {"factor": "-Infinity"}
    assert config["x"] == ["NaN", "Infinity", "-Infinity"]
    json.dumps(config, allow_nan=False)


def test_a_quantisation_section_is_summarised_before_the_size_is_checked() -> None:
    layers = {f"model.layers.{i}.mlp.down_proj": {"quant_algo": "NVFP4"} for i in range(20_000)}
    config = {**LLAMA, "quantization_config": {
        "quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "group_size": 16,
        "quantized_layers": layers, "exclude_modules": ["lm_head"]}}
    text = json.dumps(config)
    assert inline_config.MAX_CONFIG_BYTES < len(text) < inline_config.MAX_DOCUMENT_BYTES

    read = read_config_text(text)

    assert read["quantization_config"] == {
        "quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "group_size": 16,
        "quantized_layers": {"entries": 20_000}, "exclude_modules": ["lm_head"]}
    assert {k: v for k, v in read.items() if k != "quantization_config"} == LLAMA


def test_a_large_document_is_still_refused_outside_the_quantisation_section() -> None:
    text = llama_with('"notes": "' + "x" * inline_config.MAX_CONFIG_BYTES + '"')
    with pytest.raises(ConfigValueError) as refused:
        read_config_text(text)
    assert refused.value.problem == "size"
    with pytest.raises(ConfigValueError, match="larger than 8 MB"):
        read_config_text(llama_with('"notes": "' + "x" * inline_config.MAX_DOCUMENT_BYTES + '"'))
