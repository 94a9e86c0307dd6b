"""The engine's documentation terms (app/engine/documentation.py), what "How we calculate"
renders: one entry per key, numbers read from the engine's constants, each term pointing at
code that exists. The page's own tests (tests/web/test_how_we_calculate.py) check the wording."""

from __future__ import annotations

from pathlib import Path

from app.engine import documentation, states

ROOT = Path(__file__).resolve().parents[2]


def test_each_term_has_its_own_key() -> None:
    keys = [term.key for term in documentation.TERMS]
    assert len(keys) == len(set(keys))


def test_each_term_names_code_that_exists() -> None:
    for term in documentation.TERMS:
        for path in term.module.split(", "):
            assert (ROOT / path).exists(), f"{term.key}: {path}"


def test_the_values_are_numbers_or_text_the_page_can_show() -> None:
    for term in documentation.TERMS:
        for name, value in term.values.items():
            assert isinstance(value, (int, float, str)) and not isinstance(value, bool), name


def test_the_values_are_the_engines_constants() -> None:
    full = next(term for term in documentation.TERMS if term.key == "full-zero")
    weights, gradients = states.FULL_WEIGHT_GRAD_BYTES["zero"]
    assert full.values["weights"] == weights and full.values["gradients"] == gradients
    assert full.values["total"] == (weights + gradients + states.ZERO_MASTER_BYTES
                                    + states.OPTIMIZER_MOMENT_BYTES["adamw"])
