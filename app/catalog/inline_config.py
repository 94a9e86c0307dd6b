"""The one reader of a customer's own config.json, and the bounds it is held to everywhere.

A pasted (storefront and its quote form), uploaded (staff model import), posted (partner API)
or named (``sizer estimate --model-config``) config.json is a stranger's document. The engine
reads a few positive integers out of it, but the whole document is parsed and kept (a staff
import stores it), so every surface reads it with :func:`read_config_text` (the API, whose body
FastAPI has parsed already, holds the parsed object to :func:`check_values` and
:func:`check_size`) and refuses the same things before the engine or the database sees it:

* an empty document, one that is not JSON, one that is not a JSON object;
* more than 256 KB of UTF-8 (:data:`MAX_CONFIG_BYTES`) in what is kept: the document after its
  quantisation section is summarised (below), and never more than 8 MB read at all
  (:data:`MAX_DOCUMENT_BYTES`), 4 MB from a page or the API (:data:`MAX_POSTED_BYTES`);
* nesting deeper than 32 levels (:data:`MAX_DEPTH`);
* integers beyond +-2**53 (:data:`MAX_JSON_INT`), what every JSON parser holds exactly and far
  beyond any real model's dimensions; an integer longer than Python converts at all (4,300
  digits, ``sys.get_int_max_str_digits``) is never converted, so it is refused like any other
  too-large integer instead of escaping as a plain ``ValueError``;
* text that is not Unicode: a lone surrogate (``"\\ud800"`` is valid JSON syntax) in a key or
  a string, which no UTF-8 encoder, response or database can take;
* a control character in a key or a string (``"\\u0000"`` is valid JSON too, but PostgreSQL's
  ``jsonb`` refuses it), held to :mod:`app.text_input` as a multi-line
  field is.

Two things real checkpoints publish are read rather than refused:

* ``NaN``, ``Infinity`` and ``-Infinity`` (and a float literal too large for a double, which
  Python reads as infinite): transformers reads config.json with Python's ``json`` module, which
  accepts them, and NVIDIA's Nemotron-H releases carry ``"time_step_limit": [0.0, Infinity]``.
  Each becomes the text :data:`NON_FINITE_TOKENS` spells it with (``"Infinity"``), so the
  document stays storable (PostgreSQL's ``jsonb`` refuses the numbers themselves) and printable
  as standard JSON; the engine reads only integers and flags, so a field it needs that holds one
  is refused by the engine, naming that field, and any other is ignored.
* A large ``quantization_config`` (:data:`SUMMARISED_SECTIONS`): NVIDIA's ModelOpt exports list
  every quantised layer there (MiniMax-M3-NVFP4's config.json is 3,087,083 bytes, 2.41 MB of it
  ``quantization_config.quantized_layers``). The section is summarised by :func:`summarise`:
  its small entries kept, each larger list or object replaced by the number of entries it held
  (``{"entries": 4213}``). The work stays linear in the bytes read, which
  :data:`MAX_DOCUMENT_BYTES` bounds.

A refusal is a :class:`ConfigValueError`: data (which bound, where in the document), which each
surface words its own way (translated on the pages, a problem on the API, one line on the CLI).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from app import text_input

MAX_CONFIG_BYTES: Final = 256 * 1024
"""Largest config.json, in bytes of UTF-8 (a real one is 1-5 KB; 256 KB leaves room for
tokenizer-sized extras some repositories put in it)."""
MAX_DOCUMENT_BYTES: Final = 8 * 1024 * 1024
"""Most bytes of a config.json read at all (the Hub, a file named to the CLI); what is kept
after :func:`summarise` is held to :data:`MAX_CONFIG_BYTES`. The largest real one we know is
NVIDIA's MiniMax-M3-NVFP4 export at 3,087,083 bytes (ai-dynamo/aiconfigurator's copy,
tests/fixtures/hf_configs/SOURCES.md); 8 MB leaves room for a model with more layers."""
MAX_POSTED_BYTES: Final = 4 * 1024 * 1024
"""Most bytes of a config.json the pages take pasted and the API posted (the Hub and the CLI
read up to :data:`MAX_DOCUMENT_BYTES`). The largest real one we know, MiniMax-M3-NVFP4's
3,087,083 bytes, fits with a quarter to spare; the page's form body and the API's body limits
are set from it (``app/html/forms.py``, ``app/api/v1/limits.py``), so a paste within it is
never cut off by them. Reading one stays linear in its bytes: parsed once, its quantisation
section summarised (:func:`summarise`), what is kept held to :data:`MAX_CONFIG_BYTES`."""
SUMMARISED_SECTIONS: Final = ("quantization_config",)
"""Top-level sections summarised before the size is checked: nothing in the engine reads them,
and quantised exports list every layer in them."""
MAX_SUMMARY_ENTRY_BYTES: Final = 1024
"""Largest entry of a summarised section kept as it is (as compact JSON); a larger list or
object is replaced by its number of entries (``quant_method``, ``quant_algo``, ``bits``,
``group_size`` are a few bytes each)."""
NON_FINITE_TOKENS: Final = {"Infinity": "Infinity", "-Infinity": "-Infinity", "NaN": "NaN"}
"""How the non-finite numbers Python's ``json`` reads are kept: as the text it spells them with."""
MAX_DEPTH: Final = 32
"""Deepest nesting of objects and lists inside a config.json (real ones nest 3 deep; 32 stays
far below Python's recursion limit, so no walk of the document can overflow the stack)."""
MAX_JSON_INT: Final = 2**53
"""Largest integer (in absolute value) inside a config.json: the largest every JSON parser
(IEEE doubles, RFC 8259 section 6) holds exactly."""
MAX_INT_DIGITS: Final = len(str(MAX_JSON_INT))
"""Longest integer literal that may be within :data:`MAX_JSON_INT` (16 digits); a longer one
is refused from its length alone, never converted (the conversion is quadratic in the digits,
and Python refuses more than 4,300 of them with a plain ValueError)."""

MAX_PATH_CHARS: Final = 100
"""Longest path (``rope_scaling.factor``) an error shows; a longer one is cut (the keys are the
stranger's and may be any length)."""

Problem = Literal[
    "empty", "size", "document_size", "syntax", "not_object", "depth", "not_finite",
    "too_large", "not_unicode", "control",
]
"""Which bound a config.json broke; the surfaces key their messages on it."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_SIGN_AND_ZEROS = re.compile(r"^-?0*")


class ConfigValueError(ValueError):
    """A config.json outside the bounds. A ValueError, so a Pydantic validator that raises it
    answers 422.

    ``problem`` says which bound (for translation), ``path`` where in the document
    (``rope_scaling.factor``, ``layer_types[3]``; ``""`` for the document as a whole),
    ``reason`` says it in English, ``line``/``column`` place a syntax error and ``limit`` is
    the bound in bytes a document broke (``size`` and ``document_size``)."""

    def __init__(self, problem: Problem, reason: str, *, path: str = "",
                 line: int | None = None, column: int | None = None,
                 limit: int | None = None) -> None:
        path = _printable(path)
        super().__init__(f"{path}: {reason}" if path else reason)
        self.problem: Problem = problem
        self.reason = reason
        self.path = path
        self.line = line
        self.column = column
        self.limit = limit


@dataclass(frozen=True, slots=True)
class _TooManyDigits:
    """Stands in for an integer literal longer than :data:`MAX_INT_DIGITS`, so the walk can
    refuse it with its place in the document."""

    digits: int


def _bounded_int(literal: str) -> int | _TooManyDigits:
    digits = len(_SIGN_AND_ZEROS.sub("", literal))
    if digits > MAX_INT_DIGITS:
        return _TooManyDigits(digits)
    return int(literal)


def _non_finite_token(literal: str) -> str:
    return NON_FINITE_TOKENS[literal]


def _finite_or_token(literal: str) -> float | str:
    """A float literal as a float, or its non-finite text when a double cannot hold it
    (``1e400`` is read as infinite by Python's ``json``, so by transformers too)."""
    value = float(literal)
    if math.isfinite(value):
        return value
    return "-Infinity" if value < 0 else "Infinity"


def loads_bounded(text: str | bytes) -> Any:
    """``json.loads`` that never converts an integer literal longer than
    :data:`MAX_INT_DIGITS` (it stays a placeholder that :func:`check_values` refuses, and
    that fails any integer or number field it is validated against), and that keeps ``NaN``
    and ``Infinity`` as their text (:data:`NON_FINITE_TOKENS`). May raise
    ``json.JSONDecodeError``, ``UnicodeDecodeError`` and ``RecursionError``."""
    return json.loads(text, parse_int=_bounded_int, parse_constant=_non_finite_token,
                      parse_float=_finite_or_token)


def replace_non_finite(value: Any, depth: int = 0) -> Any:
    """``value`` (a document another parser read, such as the API's body) with every NaN or
    infinite float replaced by its text (:data:`NON_FINITE_TOKENS`), as :func:`loads_bounded`
    reads them. Stops below :data:`MAX_DEPTH` (deeper parts are left for
    :func:`check_values` to refuse), so it never recurses deeper than that."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("-Infinity" if value < 0 else "Infinity")
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, dict):
        return {key: replace_non_finite(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [replace_non_finite(item, depth + 1) for item in value]
    return value


def summarise(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with each of :data:`SUMMARISED_SECTIONS` summarised: an entry whose compact
    JSON takes at most :data:`MAX_SUMMARY_ENTRY_BYTES` kept, a larger list or object replaced by
    ``{"entries": n}``, a longer text cut to that many characters. Call it after
    :func:`check_values` (which bounds the depth the serialising meets)."""
    summarised = dict(document)
    for name in SUMMARISED_SECTIONS:
        section = document.get(name)
        if not isinstance(section, dict):
            continue
        kept: dict[str, Any] = {}
        for key, item in section.items():
            if isinstance(item, str):
                kept[key] = item[:MAX_SUMMARY_ENTRY_BYTES]
            elif isinstance(item, dict | list) and _json_bytes(item) > MAX_SUMMARY_ENTRY_BYTES:
                kept[key] = {"entries": len(item)}
            else:
                kept[key] = item
        summarised[name] = kept
    return summarised


def _json_bytes(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"))
               .encode("utf-8", "surrogatepass"))


def read_config_text(text: str, *, limit: int = MAX_DOCUMENT_BYTES) -> dict[str, Any]:
    """The config.json in ``text`` as a dict, or :class:`ConfigValueError` saying why not.

    Every surface that reads a config.json as text reads it with this (the API holds its
    already parsed body to :func:`check_size` and :func:`check_values`). The text may take up
    to ``limit`` bytes (:data:`MAX_DOCUMENT_BYTES`; the pages :data:`MAX_POSTED_BYTES`); the
    document returned, its quantisation section summarised, at most :data:`MAX_CONFIG_BYTES`."""
    if not text.strip():
        raise ConfigValueError("empty", "the config.json is empty")
    # surrogatepass: a lone surrogate is counted here and refused by the walk with its place
    read_bytes = len(text.encode("utf-8", "surrogatepass"))
    if read_bytes > limit:
        raise size_error(limit)
    try:
        document = loads_bounded(text)
    except json.JSONDecodeError as error:
        raise ConfigValueError(
            "syntax", f"not valid JSON ({error.msg}, line {error.lineno} column {error.colno})",
            line=error.lineno, column=error.colno,
        ) from error
    except RecursionError as error:  # deeper than the parser itself can go
        raise _too_deep("") from error
    if not isinstance(document, dict):
        raise ConfigValueError("not_object", "a config.json is a JSON object ({...})")
    check_values(document)
    config: dict[str, Any] = document
    if read_bytes > MAX_CONFIG_BYTES:
        config = summarise(config)
        check_size(config)
    return config


def read_config_bytes(data: bytes) -> dict[str, Any]:
    """:func:`read_config_text` for a file's bytes: UTF-8 (a byte-order mark is allowed).

    The size is checked on the bytes first, so a reader that stops at the limit
    (:data:`MAX_DOCUMENT_BYTES`; it may cut a character in two) still gets the size as the
    reason."""
    if len(data) > MAX_DOCUMENT_BYTES:
        raise size_error(MAX_DOCUMENT_BYTES)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ConfigValueError(
            "not_unicode", f"not UTF-8 text (byte {error.start + 1})"
        ) from error
    return read_config_text(text)


def with_hf_quant_config(config: dict[str, Any], quant: object) -> dict[str, Any]:
    """``config`` with a ModelOpt ``hf_quant_config.json`` (``quant``) as its
    ``quantization_config`` when it has none, as vLLM reads a ModelOpt release ("ModelOpt 0.29.0
    and before saves the quantization config in a separate hf_quant_config.json",
    ``vllm/transformers_utils/config.py``), flattened as ModelOpt 0.31 and later writes it into
    config.json (``quant_method: modelopt`` beside ``quant_algo``; vLLM's
    ``ModelOptFp8Config.from_config`` reads either). ``config`` unchanged otherwise: a file
    from another producer, or one without a ``quantization`` object."""
    text = config.get("text_config")
    has_own = "quantization_config" in config or (
        isinstance(text, Mapping) and "quantization_config" in text)
    if has_own or not isinstance(quant, Mapping):
        return config
    producer, section = quant.get("producer"), quant.get("quantization")
    if not (isinstance(producer, Mapping) and producer.get("name") == "modelopt"
            and isinstance(section, Mapping)):
        return config
    flat = {"quant_method": "modelopt", **section, "producer": dict(producer)}
    return {**config, "quantization_config": flat}


def summarised(config: dict[str, Any]) -> dict[str, Any]:
    """A parsed config.json (the API's body) as :func:`read_config_text` keeps one: its
    quantisation section summarised when the whole takes more than :data:`MAX_CONFIG_BYTES` as
    JSON; :func:`check_size` then holds what is kept to that. Call it after
    :func:`check_values`. Linear in the document's size."""
    if _json_bytes(config) <= MAX_CONFIG_BYTES:
        return config
    return summarise(config)


def check_size(config: Mapping[str, Any]) -> None:
    """Refuse a parsed config.json that takes more than :data:`MAX_CONFIG_BYTES` as JSON
    (``problem == "size"``); for the API, whose body arrives parsed. Call it after
    :func:`check_values`, which bounds what serialising the document could meet (depth,
    integers too long to print)."""
    size = len(json.dumps(config, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size > MAX_CONFIG_BYTES:
        raise size_error()


def size_error(limit: int = MAX_CONFIG_BYTES) -> ConfigValueError:
    """The refusal of a config.json over :data:`MAX_CONFIG_BYTES` (also for a surface that
    stops reading an upload at the limit), or over ``limit`` read at all."""
    if limit >= 1024 * 1024:  # the whole document, before anything is summarised
        return ConfigValueError("document_size", f"larger than {limit // (1024 * 1024)} MB",
                                limit=limit)
    return ConfigValueError("size", f"larger than {limit // 1024} KB", limit=limit)


def check_values(value: object, path: str = "", depth: int = 0) -> None:
    """Raise :class:`ConfigValueError` if ``value`` (a parsed config.json) breaks a bound.

    The walk stops at :data:`MAX_DEPTH`, so it never recurses deeper than that itself."""
    if depth > MAX_DEPTH:
        raise _too_deep(path)
    if isinstance(value, str):
        _check_text(value, path)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigValueError("not_finite", "numbers must be finite (no NaN or Infinity)",
                                   path=path)
    elif isinstance(value, int):
        if abs(value) > MAX_JSON_INT:  # digits by logarithm: str() refuses 4,300 and more
            _too_large(math.floor(math.log10(abs(value))) + 1, path)
    elif isinstance(value, _TooManyDigits):
        _too_large(value.digits, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            name = str(key)
            inner = f"{path}.{name}" if path else name
            _check_text(name, inner)
            check_values(item, inner, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_values(item, f"{path}[{index}]", depth + 1)


def _too_deep(path: str) -> ConfigValueError:
    return ConfigValueError("depth", f"nested more than {MAX_DEPTH} levels deep", path=path)


def _too_large(digits: int, path: str) -> None:
    raise ConfigValueError(
        "too_large", f"integers must be within +-2**53 (got {digits} digits)", path=path
    )


def _check_text(text: str, path: str) -> None:
    if _SURROGATE.search(text):
        raise ConfigValueError("not_unicode", "text must be Unicode (no lone surrogates)",
                               path=path)
    if text_input.control_character(text, multiline=True) is not None:
        raise ConfigValueError("control", f"text {text_input.REASON} (such as NUL)", path=path)


def _printable(path: str) -> str:
    """``path`` as one short line of valid text: the keys are the stranger's (a lone
    surrogate, a newline, 100 KB of key), and the path ends up in a page, a problem, a log."""
    if len(path) > MAX_PATH_CHARS:
        path = path[: MAX_PATH_CHARS - 1] + "…"
    if path.isprintable():
        return path
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in path)
