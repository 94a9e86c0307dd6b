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


def test_the_bitsandbytes_release_reaches_the_job_and_the_link() -> None:
    """Advanced offers QLoRA's bitsandbytes release (issue 15, point 1); the default stays out
    of the shareable link."""
    calc, errors = form.parse({"model": "llama-3.1-8b", "method": "qlora", "bnb": "0.41"})
    assert not errors and calc.job().bnb_saves_inputs
    assert "bnb=0.41" in calc.url()
    calc, errors = form.parse({"model": "llama-3.1-8b", "method": "qlora"})
    assert not errors and not calc.job().bnb_saves_inputs
    assert "bnb=" not in calc.url()


def test_bnb_0_41_without_qlora_is_refused_beside_its_field_in_german(
    make_client: Callable[..., TestClient],
) -> None:
    body = make_client().get("/", params={"model": "llama-3.1-8b", "method": "lora",
                                          "bnb": "0.41"},
                             headers={"Accept-Language": "de"}).text
    error = re.search(r'<span id="err-bnb" class="field-error">([^<]*)</span>', body)
    assert error is not None
    assert "Die bitsandbytes-Version zählt nur für die 4-Bit-Schichten" in error.group(1)
    assert 'name="bnb" aria-describedby="err-bnb" aria-invalid="true"' in body
    assert "bitsandbytes-Version (nur QLoRA)" in body


def test_the_english_page_names_both_releases(make_client: Callable[..., TestClient]) -> None:
    body = make_client().get("/", params={"model": "llama-3.1-8b", "method": "qlora",
                                          "bnb": "0.41"},
                             headers={"Accept-Language": "en"}).text
    assert 'value="0.41" selected' in body
    assert "bitsandbytes 0.43.2 or later" in body
    assert "bitsandbytes 0.41 to 0.43.1: every 4-bit layer keeps its input" in body


def test_the_sharding_implementation_reaches_the_job_and_the_link() -> None:
    """Advanced offers who runs ZeRO-3 (issue 15, point 3); the default stays out of the link."""
    zero3 = {"model": "llama-3.1-8b", "method": "lora", "gpus": "4", "sharding": "zero3"}
    calc, errors = form.parse({**zero3, "impl": "fsdp"})
    assert not errors and calc.job().sharding_impl == "fsdp"
    assert "impl=fsdp" in calc.url()
    calc, errors = form.parse(zero3)
    assert not errors and calc.job().sharding_impl == "deepspeed"
    assert "impl=" not in calc.url()


def test_fsdp_without_zero3_is_refused_beside_its_field_in_german(
    make_client: Callable[..., TestClient],
) -> None:
    body = make_client().get("/", params={"model": "llama-3.1-8b", "method": "lora",
                                          "gpus": "2", "sharding": "zero2", "impl": "fsdp"},
                             headers={"Accept-Language": "de"}).text
    error = re.search(r'<span id="err-impl" class="field-error">([^<]*)</span>', body)
    assert error is not None
    assert "FSDP wird nur für ZeRO-3" in error.group(1)
    assert 'name="impl" aria-describedby="err-impl" aria-invalid="true"' in body
    assert "Sharding-Umsetzung (nur ZeRO-3)" in body


def test_the_page_says_whose_zero3_buffers_it_assumes(
    make_client: Callable[..., TestClient],
) -> None:
    zero3 = {"model": "llama-3.1-8b", "method": "lora", "gpus": "4", "sharding": "zero3"}
    english = make_client().get("/", params={**zero3, "impl": "fsdp"},
                                headers={"Accept-Language": "en"}).text
    assert 'value="fsdp" selected' in english
    assert "ZeRO-3 as PyTorch FSDP (full shard) runs it" in english
    german = make_client().get("/", params=zero3, headers={"Accept-Language": "de"}).text
    assert "ZeRO-3 wie DeepSpeed es ausführt" in german


def test_expandable_segments_reach_the_job_and_the_link() -> None:
    """Advanced offers PyTorch's expandable segments (issue 15, point 4); off stays out of the
    link."""
    calc, errors = form.parse({"model": "llama-3.1-8b", "segments": "1"})
    assert not errors and calc.job().expandable_segments
    assert "segments=1" in calc.url()
    calc, errors = form.parse({"model": "llama-3.1-8b"})
    assert not errors and not calc.job().expandable_segments
    assert "segments=" not in calc.url()


def test_the_page_shows_allocated_and_reserved_in_german(
    make_client: Callable[..., TestClient],
) -> None:
    """Both counters, each from the result the verdict is built on, and the switch offered."""
    calc, errors = form.parse({"model": "llama-3.1-8b", "method": "lora"})
    assert not errors
    body = make_client().get("/", params=calc.query(), headers={"Accept-Language": "de"}).text
    assert "Belegt im vollsten Moment, je GPU" in body  # plain words (issue 30, point 5)
    assert "Von PyTorch gehalten, mit Reserve, je GPU" in body
    assert 'id="fig-allocated"' in body and 'id="fig-reserved"' in body
    assert "Erweiterbare Segmente von PyTorch" in body
    assert ("reserviert: PyTorchs Speicher-Allokator hält Blöcke, die die Spitze nicht "
            "wiederverwenden kann") in body


def test_the_bitsandbytes_and_sharding_checks_are_the_services() -> None:
    """The page checks the libraries with estimates.service.library_switches, as the API and
    the CLI do (one rule, one wording): the refusal sits beside the field it names."""
    _calc, errors = form.parse({"model": "llama-3.1-8b", "method": "full", "bnb": "0.41"})
    assert set(errors.messages) == {"bnb"}
    _calc, errors = form.parse({"model": "llama-3.1-8b", "sharding": "zero2", "gpus": "2",
                                "impl": "fsdp"})
    assert set(errors.messages) == {"impl"}


def test_the_moe_lora_convention_reaches_the_job_and_the_link() -> None:
    """Advanced offers how LoRA adapts the experts (issue 16, point 1); the default, what PEFT
    0.21 builds on transformers 5, stays out of the link."""
    moe = {"model": "qwen3-30b-a3b", "method": "lora"}
    calc, errors = form.parse({**moe, "moe": "per-expert"})
    assert not errors and calc.job().moe_lora == "per-expert"
    assert "moe=per-expert" in calc.url()
    calc, errors = form.parse(moe)
    assert not errors and calc.job().moe_lora == "fused"
    assert "moe=" not in calc.url()


def test_the_page_says_which_moe_lora_convention_it_counts(
    make_client: Callable[..., TestClient],
) -> None:
    moe = {"model": "qwen3-30b-a3b", "method": "lora"}
    english = make_client().get("/", params=moe, headers={"Accept-Language": "en"}).text
    assert "LoRA on the experts as PEFT 0.21 builds it on transformers 5" in english
    german = make_client().get("/", params={**moe, "moe": "per-expert"},
                               headers={"Accept-Language": "de"}).text
    assert 'value="per-expert" selected' in german
    assert "LoRA auf den Experten als eine lineare Schicht je Experte" in german
    assert "LoRA auf Experten-Schichten (MoE)" in german
