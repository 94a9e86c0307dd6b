"""The catalog's model search, as the calculator's search box and the partner API's
``GET /api/v1/models?q=`` both run it.

People type what they remember of a model's name, not its slug: ``Llama 70B`` (the search
box's own example), ``3.1``, ``gpt oss``, ``qwen 3.5 moe``, ``Qwen3-8B``, ``70b``. A plain
substring test of the whole text finds none of the two-word ones (``"llama 70b"`` is in no slug)
and misses ``qwen3.5`` against ``Qwen/Qwen3.5-...`` written with a space. So both sides are cut
into words:

* a model's words come from its slug, its Hugging Face id (owner and name) and its family, cut
  at every ``-``, ``_``, ``/`` and space, each word also cut where letters turn into digits
  (``qwen3.5`` gives ``qwen3.5``, ``qwen`` and ``3.5``; ``a3b`` gives ``a`` and ``3b``); a
  mixture-of-experts model also has the word ``moe``;
* the query is cut at spaces into terms; every term must find the model. A term without a
  separator must begin some word of the model (so ``70b`` finds ``70b`` but not ``7b``, and
  ``lla`` already finds Llama while it is typed), or, when it does not, every part it falls into
  where letters turn into digits must (``llama3.1`` finds ``Llama-3.1-8B``). A term with a
  separator is a piece of a name as written (``qwen3-3``, ``meta-llama/llama-3.1``) and must
  stand in the slug or the Hugging Face id as it is.

Case is ignored. The work is bounded: the surfaces cut the query at :data:`MAX_QUERY_CHARS`
and a model's words come from its short names, never from its config.json.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

from app.catalog.schemas import ModelRecord

MAX_QUERY_CHARS: Final = 100
"""Longest search text read (the page's input and the API's ``q`` stop here)."""

MOE_WORD: Final = "moe"
"""The word a mixture-of-experts model answers to besides its names."""

_SEPARATORS = re.compile(r"[\s\-_/,;:+()]+")
_LETTERS_THEN_DIGITS = re.compile(r"(?<=[a-z])(?=\d)")


def words(text: str) -> list[str]:
    """``text`` in lower case, cut at separators (dots stay: ``3.1`` is one word)."""
    return [word.strip(".") for word in _SEPARATORS.split(text.lower()) if word.strip(".")]


def _parts(word: str) -> list[str]:
    """``word`` cut where letters turn into digits: ``qwen3.5`` -> ``qwen``, ``3.5``."""
    return [part for part in _LETTERS_THEN_DIGITS.split(word) if part]


def model_words(model: ModelRecord) -> frozenset[str]:
    """Every word a model answers to (see the module's docstring)."""
    found: set[str] = set()
    for word in words(f"{model.slug} {model.hf_id} {model.family}"):
        found.add(word)
        found.update(_parts(word))
    if model.params_active < model.params_total:
        found.add(MOE_WORD)
    return frozenset(found)


def _begins_one(word: str, vocabulary: Iterable[str]) -> bool:
    return any(known.startswith(word) for known in vocabulary)


def matches(model: ModelRecord, query: str) -> bool:
    """Whether every term of ``query`` finds ``model`` (an empty query finds every model)."""
    vocabulary = model_words(model)
    names = f"{model.slug} {model.hf_id}".lower()
    for term in query[:MAX_QUERY_CHARS].lower().split():
        if _SEPARATORS.search(term):  # a piece of a name as written: qwen3-3, meta-llama/
            if term not in names:
                return False
            continue
        word = term.strip(".")
        if word and not (_begins_one(word, vocabulary)
                         or all(_begins_one(part, vocabulary) for part in _parts(word))):
            return False
    return True


def search(models: Sequence[ModelRecord], query: str) -> list[ModelRecord]:
    """The models ``query`` finds, in the order given."""
    return [model for model in models if matches(model, query)]
