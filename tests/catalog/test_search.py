"""The model search ranks what people mean first (issue 30, point 1), on the shipped catalog.

The walk typed these and got the wrong model sized at once ("llama 70b" gave DeepSeek's
distill, "deepseek r1" Distill-Qwen-1.5B) or nothing at all ("Llama 3.1 8B Instruct",
"qwen2.5 7b instruct", "gptoss", "lama 70b").
"""

from __future__ import annotations

import pytest

from app.catalog import search
from app.catalog.schemas import ModelRecord
from app.catalog.seed import load_seed_catalog

MODELS: tuple[ModelRecord, ...] = load_seed_catalog().models


def found(query: str) -> list[str]:
    return [model.slug for model in search.search(MODELS, query)]


@pytest.mark.parametrize(("query", "first"), [
    ("llama 70b", "llama-3.3-70b"),
    ("Llama 70B", "llama-3.3-70b"),
    ("llama 8b", "llama-3.1-8b"),
    ("deepseek r1", "deepseek-r1"),
    ("r1", "deepseek-r1"),
    ("qwen3 8b", "qwen3-8b"),
])
def test_the_model_meant_comes_first(query: str, first: str) -> None:
    assert found(query)[0] == first


def test_the_family_named_comes_before_its_derivatives() -> None:
    assert found("llama 70b") == ["llama-3.3-70b", "llama-3.1-70b",
                                  "deepseek-r1-distill-llama-70b"]
    ranked = found("deepseek r1")
    assert ranked[0] == "deepseek-r1"
    assert all(search.is_derivative(m) for m in MODELS if m.slug in ranked[1:])


def test_asking_for_a_distill_ranks_the_distills_first() -> None:
    assert found("deepseek r1 distill llama")[0].startswith("deepseek-r1-distill-llama")


@pytest.mark.parametrize(("query", "expected"), [
    ("Llama 3.1 8B Instruct", ["llama-3.1-8b"]),  # the catalog's 8B is the base checkpoint
    ("qwen2.5 7b instruct", ["qwen2.5-7b"]),
    ("qwen2.5 7b chat", ["qwen2.5-7b"]),
    ("gemma 3 27b it", ["gemma-3-27b-it"]),
    ("gptoss", ["gpt-oss-20b", "gpt-oss-120b"]),
    ("gpt-oss 120b", ["gpt-oss-120b"]),
    ("gptoss120b", ["gpt-oss-120b"]),
    ("qwen25 7b", ["qwen2.5-7b"]),
])
def test_flavour_words_spacing_and_dashes_do_not_matter(query: str, expected: list[str]) -> None:
    assert found(query) == expected


@pytest.mark.parametrize(("query", "first"), [
    ("lama 70b", "llama-3.3-70b"),
    ("qwne3 8b", "qwen3-8b"),
    ("mistrl 7b", "mistral-7b-v0.3"),
    ("gemam 3 27b", "gemma-3-27b-it"),
])
def test_a_typo_of_one_letter_still_finds_the_model(query: str, first: str) -> None:
    assert found(query)[0] == first


def test_a_typo_never_changes_a_number_or_a_short_word() -> None:
    assert found("llama 71b") == []
    assert found("qwen3 9b") == []
    assert "phi-4" not in found("pho")  # three letters: too short to guess


def test_typos_are_only_read_when_the_query_finds_nothing_as_typed() -> None:
    # "gemma" is a word of the catalog, so a one-letter-off "gemm" family is never mixed in
    assert all(m.startswith("gemma") for m in found("gemma"))
    assert found("no such model") == []


def test_derivatives_are_the_distills_and_fine_tunes() -> None:
    derivatives = {m.slug for m in MODELS if search.is_derivative(m)}
    assert derivatives == {m.slug for m in MODELS if "distill" in m.slug}
    assert "deepseek-r1" not in derivatives


@pytest.mark.parametrize("query", ["7b", "8b", "14b", "70b", "1.5b", "qwen", "llama"])
def test_a_derivative_never_comes_before_a_model_of_its_own(query: str) -> None:
    """Issue 30, point 1: a size or a family alone lists the base models first; the distills
    and fine-tunes that also match come after every one of them, unless asked for."""
    ranked = [search.is_derivative(m) for m in search.search(MODELS, query)]
    assert True in ranked and False in ranked, query
    assert ranked == sorted(ranked), query


def test_the_edit_distance_counts_a_swap_as_one_edit() -> None:
    assert search._edits("qwne", "qwen") == 1
    assert search._edits("lama", "llama") == 1
    assert search._edits("lamma", "llama") == 2


def test_a_long_query_is_bounded() -> None:
    assert len(search.terms("llama " * 1000)) == search.MAX_TERMS
    assert found("x" * 10_000) == []
