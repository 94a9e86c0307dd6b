"""The catalog's model search, as the calculator's search box and the partner API's
``GET /api/v1/models?q=`` both run it.

People type what they remember of a model's name, not its slug: ``Llama 70B`` (the search
box's own example), ``3.1``, ``gpt oss``, ``gptoss``, ``qwen 3.5 moe``, ``Qwen3-8B``, ``70b``,
``Llama 3.1 8B Instruct``, ``lama 70b``. A plain substring test of the whole text finds none of
the two-word ones (``"llama 70b"`` is in no slug) and misses ``qwen3.5`` against
``Qwen/Qwen3.5-...`` written with a space. So both sides are cut into words:

* a model's words come from its slug, its Hugging Face id (owner and name) and its family, cut
  at every ``-``, ``_``, ``/`` and space, each word also cut where letters turn into digits
  (``qwen3.5`` gives ``qwen3.5``, ``qwen`` and ``3.5``; ``a3b`` gives ``a`` and ``3b``); a
  mixture-of-experts model also has the word ``moe``;
* the query is cut at spaces into terms; every term must find the model. A term without a
  separator must begin some word of the model (so ``70b`` finds ``70b`` but not ``7b``, and
  ``lla`` already finds Llama while it is typed), or, when it does not, every part it falls into
  where letters turn into digits must (``llama3.1`` finds ``Llama-3.1-8B``), or it must begin
  the name written without its separators from one of its words on (``gptoss`` finds
  ``gpt-oss-20b``; without its dots too when the term has none: ``qwen25`` finds Qwen2.5).
  A term with a separator is a piece of a name as written (``qwen3-3``,
  ``meta-llama/llama-3.1``) and must stand in the slug or the Hugging Face id as it is;
* a term that only names a checkpoint's flavour (:data:`FLAVOUR_WORDS`: Instruct, Chat, Base,
  ``it``) finds a model that has it and is left out for one that does not: the catalog keeps
  one checkpoint per size, and ``Llama 3.1 8B Instruct`` means the 8B we have;
* when nothing matches so, a run of at least :data:`TYPO_MIN_CHARS` letters in a term may be
  :data:`TYPO_EDITS` edit away from a word or a word's beginning (``lama`` finds Llama,
  ``qwne3`` Qwen3); digits never change (``70b`` never turns into ``7b``).

What was found is ranked (:func:`search`) by what people mean: a derivative (a distill or a
fine-tune of another family's model, :func:`is_derivative`) after the originals unless the
query asks for one; a model of the family the query names first (``Llama 70B`` is Meta's
Llama 3.x 70B before DeepSeek's distill of it); then whole words over beginnings of words
(``deepseek r1`` is DeepSeek-R1 before ``r1-distill``), then the shorter name, then the smaller
model, then the later slug (Llama 3.3 before Llama 3.1).

Case is ignored. The work is bounded: the surfaces cut the query at :data:`MAX_QUERY_CHARS`, a
query has at most :data:`MAX_TERMS` terms, and a model's words come from its short names, never
from its config.json.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from app.catalog.schemas import ModelRecord

MAX_QUERY_CHARS: Final = 100
"""Longest search text read (the page's input and the API's ``q`` stop here)."""

MAX_TERMS: Final = 12
"""Most terms of a query read (a model name has at most ten words; the rest is noise)."""

MOE_WORD: Final = "moe"
"""The word a mixture-of-experts model answers to besides its names."""

FLAVOUR_WORDS: Final = frozenset({"instruct", "chat", "base", "it", "hf"})
"""Words that name a checkpoint's flavour, not a model: Hugging Face ids end in ``-Instruct``,
``-chat-hf``, ``-Base`` or ``-it`` (Gemma) for the tuned or the raw weights of one model, whose
memory is the same; the catalog keeps one of them per size."""

DERIVATIVE_WORDS: Final = frozenset({"distill", "distilled", "finetune", "finetuned", "merge",
                                     "abliterated"})
"""Words in a name that make the model a derivative of another model: DeepSeek's
``R1-Distill-Llama-70B`` is Llama 3.3 70B fine-tuned on R1's answers."""

TYPO_MIN_CHARS: Final = 4
"""Shortest term read with a typo allowed (``phi`` or ``glm`` one letter off is another word)."""

TYPO_EDITS: Final = 1
"""Edits (a letter added, dropped, changed or two swapped) a typed word may be off by."""

_SEPARATORS = re.compile(r"[\s\-_/,;:+()]+")
_LETTERS_THEN_DIGITS = re.compile(r"(?<=[a-z])(?=\d)")

_WHOLE, _BEGINNING, _TYPO = 3, 2, 1
"""How well a term found a model: a whole word, a word's beginning, a word off by a typo."""


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


def _squashed(model: ModelRecord) -> list[str]:
    """The model's names without separators, from each word on: ``gpt-oss-20b`` gives
    ``gptoss20b``, ``oss20b`` and ``20b``."""
    tails: list[str] = []
    for name in (model.slug, model.hf_id.rpartition("/")[2], model.family):
        parts = words(name)
        tails.extend("".join(parts[start:]) for start in range(len(parts)))
    return tails


def is_derivative(model: ModelRecord) -> bool:
    """Whether the model is a distill or fine-tune of another model (its name says so)."""
    return _named_derivative(model.slug, model.hf_id, model.family)


@lru_cache(maxsize=4096)
def _named_derivative(slug: str, hf_id: str, family: str) -> bool:
    """:func:`is_derivative` by the names alone, remembered (every page render asks; a few
    thousand names are more than the catalog will hold)."""
    return not DERIVATIVE_WORDS.isdisjoint(words(f"{slug} {hf_id} {family}"))


def _edits(a: str, b: str) -> int:
    """The optimal string alignment distance of ``a`` and ``b`` (both short words)."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        row = [i] + [0] * len(b)
        for j, char_b in enumerate(b, start=1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1,
                         previous[j - 1] + (char_a != char_b))
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                row[j] = min(row[j], previous2[j - 2] + 1)
        previous2, previous = previous, row
    return previous[-1]


def _near(term: str, vocabulary: Iterable[str]) -> bool:
    """Whether ``term`` is a typo of a word or of a word's beginning."""
    size = len(term)
    for known in vocabulary:
        for cut in (size - 1, size, size + 1):
            if cut >= TYPO_MIN_CHARS - 1 and cut <= len(known) \
                    and _edits(term, known[:cut]) <= TYPO_EDITS:
                return True
    return False


@dataclass(frozen=True)
class _Model:
    """What a model is searched by, worked out once per search."""

    record: ModelRecord
    vocabulary: frozenset[str]
    names: str
    squashed: tuple[str, ...]


def _found(model: _Model, term: str, *, typos: bool) -> int:
    """How well ``term`` finds ``model`` (0: not at all)."""
    if _SEPARATORS.search(term):  # a piece of a name as written: qwen3-3, meta-llama/
        return _WHOLE if term in model.names else 0
    word = term.strip(".")
    if not word or word in model.vocabulary:
        return _WHOLE
    if any(known.startswith(word) for known in model.vocabulary):
        return _BEGINNING
    parts = _parts(word)
    if len(parts) > 1 and all(any(known.startswith(part) for known in model.vocabulary)
                              for part in parts):
        return _BEGINNING
    if any((tail if "." in word else tail.replace(".", "")).startswith(word)
           for tail in model.squashed):
        return _BEGINNING
    if typos and any(part.isalpha() and len(part) >= TYPO_MIN_CHARS for part in parts) \
            and all(_near(part, model.vocabulary) if part.isalpha()
                    and len(part) >= TYPO_MIN_CHARS
                    else any(known.startswith(part) for known in model.vocabulary)
                    for part in parts):
        return _TYPO
    return 0


def _score(model: _Model, terms: Sequence[str], *, typos: bool) -> int | None:
    """The sum of how well each term found the model, or None when one did not find it."""
    total = 0
    for term in terms:
        found = _found(model, term, typos=typos)
        if not found and term not in FLAVOUR_WORDS:
            return None
        total += found
    return total


def terms(query: str) -> list[str]:
    """The query's terms, bounded (:data:`MAX_QUERY_CHARS`, :data:`MAX_TERMS`)."""
    return query[:MAX_QUERY_CHARS].lower().split()[:MAX_TERMS]


def _prepared(model: ModelRecord) -> _Model:
    return _Model(model, model_words(model), f"{model.slug} {model.hf_id}".lower(),
                  tuple(_squashed(model)))


def matches(model: ModelRecord, query: str, *, typos: bool = False) -> bool:
    """Whether every term of ``query`` finds ``model`` (an empty query finds every model);
    ``typos`` allows a word off by :data:`TYPO_EDITS` (the search's second pass)."""
    return _score(_prepared(model), terms(query), typos=typos) is not None


def search(models: Sequence[ModelRecord], query: str) -> list[ModelRecord]:
    """The models ``query`` finds, best first (see the module's docstring); typos are
    allowed only when the query finds nothing without them. An empty query finds every
    model, in the order given."""
    wanted = terms(query)
    if not wanted:
        return list(models)
    prepared = [_prepared(model) for model in models]
    for typos in (False, True):
        scored = [(model, score) for model in prepared
                  if (score := _score(model, wanted, typos=typos)) is not None]
        if scored:
            break
    asks_derivative = not DERIVATIVE_WORDS.isdisjoint(
        word for term in wanted for word in words(term))
    family_words = {term for term in wanted if not _SEPARATORS.search(term)}

    def rank(item: tuple[_Model, int]) -> tuple[bool, bool, int, int, int]:
        model, score = item
        derivative = is_derivative(model.record) and not asks_derivative
        family = words(model.record.family)
        names_family = any(part.startswith(term) or (len(term) >= TYPO_MIN_CHARS
                                                     and _near(term, family))
                           for term in family_words for part in family)
        return (derivative, not names_family, -score, len(model.vocabulary),
                model.record.params_total)

    scored.sort(key=lambda item: item[0].record.slug, reverse=True)  # newer versions first
    return [model.record for model, _ in sorted(scored, key=rank)]
