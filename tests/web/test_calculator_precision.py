"""The calculator's training-precision options under Advanced (issue 15, point 2)."""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi.testclient import TestClient

from app.web import calculator_form as form


def test_the_options_reach_the_job_and_the_shareable_link() -> None:
    calc, errors = form.parse({"model": "llama-3.1-8b", "method": "lora",
                               "framework": "torchtune", "adapter": "bf16"})
    assert not errors
    job = calc.job()
    assert (job.framework, job.precision, job.adapter_dtype, job.base_dtype) == (
        "torchtune", None, "bf16", None)
    assert job.training_precision.precision == "bf16"
    assert "framework=torchtune" in calc.url() and "adapter=bf16" in calc.url()
    assert "precision=" not in calc.url()


def test_an_unknown_choice_is_refused_beside_its_field() -> None:
    _calc, errors = form.parse({"precision": "fp8", "framework": "axolotl"})
    assert {"precision", "framework"} <= set(errors.messages)


def test_the_german_page_offers_them_and_says_pure_bf16(
    make_client: Callable[..., TestClient],
) -> None:
    body = make_client().get("/", params={"model": "llama-3.2-3b", "method": "full",
                                          "framework": "torchtune"},
                             headers={"Accept-Language": "de"}).text
    assert "Erweitert: Genauigkeit, mehrere GPUs" in body
    assert "Trainingsgenauigkeit" in body and 'value="torchtune" selected' in body
    assert "Trainingsgenauigkeit: reines bf16" in body
    assert "torchtune-Vorgabe" in body
    assert "pure bf16" not in body and "training precision" not in body


def test_a_contradiction_is_shown_beside_the_field_in_german(
    make_client: Callable[..., TestClient],
) -> None:
    body = make_client().get("/", params={"model": "llama-3.1-8b", "method": "lora",
                                          "precision": "bf16", "adapter": "fp32"},
                             headers={"Accept-Language": "de"}).text
    error = re.search(r'<span id="err-adapter" class="field-error">([^<]*)</span>', body)
    assert error is not None
    assert "Reines bf16 hält auch die Adapter in bf16" in error.group(1)
    assert 'name="adapter" aria-describedby="err-adapter" aria-invalid="true"' in body
