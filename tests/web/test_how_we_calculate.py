""""How we calculate" renders the engine's own documentation terms, and accuracy when measured."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from app.engine.documentation import CUDA_CONTEXTS, CURRENT_CONTEXT, TERMS, Value
from app.estimates.serving import VLLM_LOGS
from app.html import i18n
from app.web import pages
from app.web.data_notes import EXCLUSION_REASONS, SERVING_WEIGHT_NOTES
from app.web.method_terms import CONTEXT_LOADING, CONTEXT_TEXTS, TERM_TEXTS

PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def _worded(message: str, values: Mapping[str, Value], lang: str) -> str:
    """A term's message as the page words it: translated, the values the locale's way."""
    return i18n.translations(lang).gettext(message) % {
        key: value if isinstance(value, str) else i18n.format_number(value, lang)
        for key, value in values.items()
    }


def test_every_term_with_formula_and_source(client: TestClient, htmx: bool) -> None:
    response = client.get("/how-we-calculate", headers={"HX-Request": "true"} if htmx else {})
    assert response.status_code == 200
    for term in TERMS:
        text = TERM_TEXTS[term.key]
        assert f'id="term-{term.key}"' in response.text
        assert str(escape(_worded(text.formula, term.values, "en"))) in response.text
        assert str(escape(_worded(text.source, {}, "en"))) in response.text


@pytest.mark.parametrize("lang", ["en", "de"])
def test_the_cuda_context_of_every_stack_with_its_source(client: TestClient, lang: str) -> None:
    """Issue 28, point 1: the context by PyTorch and CUDA version, each row with its stack,
    card, figure and source in the reader's language, the row the engine sizes with marked."""
    page = client.get("/how-we-calculate", headers={"Accept-Language": lang}).text
    words = i18n.translations(lang).gettext
    assert set(CONTEXT_TEXTS) == {row.key for row in CUDA_CONTEXTS}
    for row in CUDA_CONTEXTS:
        start = page.index(f'<tr id="context-{row.key}">')
        cells = page[start:page.index("</tr>", start)]
        assert f"<td>{escape(row.pytorch or words('any'))}</td>" in cells
        assert f"<td>{escape(row.cuda)}</td>" in cells
        assert f"<td>{words(CONTEXT_LOADING[row.loading])}</td>" in cells
        assert f"<td>{row.card or words('not stated')}</td>" in cells
        mib = i18n.format_number(round(row.bytes / 2**20), lang)
        assert f"<td>{mib}&nbsp;MiB</td>" in cells
        assert words(CONTEXT_TEXTS[row.key]) in cells
        marked = words("current: what we size with") in cells
        assert marked == (row.key == CURRENT_CONTEXT)


def test_the_wording_quotes_exactly_the_engine_s_constants() -> None:
    """Every engine term has its wording, and each formula names every constant the engine
    gives for it and no other: a constant added to a term shows, a renamed one fails here."""
    assert set(TERM_TEXTS) == {term.key for term in TERMS}
    for term in TERMS:
        text = TERM_TEXTS[term.key]
        assert set(PLACEHOLDER.findall(text.formula)) == set(term.values), term.key
        assert PLACEHOLDER.findall(text.source) == [], term.key


def test_the_formulas_read_the_same_in_english_and_in_german_with_german_numbers(
    client: TestClient,
) -> None:
    """Issue 18, point 8: the engine's constants in the reader's language, the English page
    saying what it always said."""
    english = client.get("/how-we-calculate", headers={"Accept-Language": "en"}).text
    german = client.get("/how-we-calculate", headers={"Accept-Language": "de"}).text
    assert ("2 (bf16 weights) + 2 (gradients) + 4 (fp32 master) + 8 (Adam moments) = 16 bytes "
            "per parameter") in english
    assert ("2 (bf16-Gewichte) + 2 (Gradienten) + 4 (fp32-Master-Kopie) + 8 (Adam-Momente) = "
            "16 Byte je Parameter") in german
    assert "and 1.5 layers&#39; activations of segments (0.25 with expandable" in english
    assert "Aktivierungen von 1,5 Schichten (0,25 mit Expandable Segments" in german
    assert "780 MiB (PyTorch 2.11, CUDA 13.0;" in english
    assert "8K + 37.5KE + 30V" in english and "8K + 37,5KE + 30V" in german
    assert "4.127 bits per parameter" in english and "4,127 Bit je Parameter" in german
    assert "Quelle: Rajbhandari et al., ZeRO, arXiv 1910.02054, Abschnitt 3.1" in german


def test_every_note_kept_with_the_published_measurements_is_translated() -> None:
    """A figure excluded, or a vLLM log's weights left uncompared, with a note the German page
    cannot word fails here: add the note to app/web/data_notes.py and translate it
    (docs/development.md)."""
    german = i18n.translations("de")
    reasons = {case["excluded"] for case in _external()["cases"] if case["excluded"]}
    assert reasons and reasons <= set(EXCLUSION_REASONS)
    logs = json.loads(VLLM_LOGS.read_text("utf-8"))
    notes = {case["weights_check_skipped"] for case in logs["cases"]
             if case.get("weights_check_skipped")}
    assert notes <= set(SERVING_WEIGHT_NOTES)
    assert all(german.gettext(note) != note for note in reasons | notes)


def test_measurement_pending_without_accuracy_files(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(pages, "ACCURACY_JSON", tmp_path / "missing.json")
    assert "Measurement is pending" in client.get("/how-we-calculate").text


def test_accuracy_table_when_measured(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "accuracy.json"
    path.write_text(json.dumps({
        "summary": {"cases": 1, "fake_mode_cases": 0, "median_abs_error_pct": 3.1,
                    "max_abs_error_pct": 3.1, "within_10_pct": 1},
        "rows": [{"case": "llama-3.2-1b lora", "measured_gib": 10.0, "estimated_gib": 10.31,
                  "error_pct": 3.1}],
    }))
    monkeypatch.setattr(pages, "ACCURACY_JSON", path)
    body = client.get("/how-we-calculate").text
    assert "llama-3.2-1b lora" in body and "Measurement is pending" not in body
    assert "3.1 %" in body and "at most" in body


def test_the_published_accuracy_and_the_qlora_basis_are_on_the_page(client: TestClient) -> None:
    body = client.get("/how-we-calculate", headers={"Accept-Language": "en"}).text
    assert "/static/img/accuracy.png" in body
    assert "tiny-gemma2_full_b2_s512_eager_nogc_real" in body
    assert "QLoRA: measured with bitsandbytes" in body and "QLoRA: not yet" not in body


def test_the_held_out_accuracy_is_on_the_page(client: TestClient) -> None:
    body = client.get("/how-we-calculate", headers={"Accept-Language": "en"}).text
    assert "Held out:" in body and "tiny-qwen3moe_full_b2_s256_sdpa_nogc_real" in body
    assert "not counted" in body


def _external() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(pages.EXTERNAL_JSON.read_text(encoding="utf-8"))
    return document


def test_the_published_gpu_runs_side_by_side_in_english(client: TestClient) -> None:
    """Per source our median and largest error beside fitcheck-llm's, every counted figure
    with its error, and every excluded one with its reason (issue 15, points 6 and 7)."""
    document = _external()
    body = client.get("/how-we-calculate", headers={"Accept-Language": "en"}).text
    assert "Published GPU runs" in body and "fitcheck-llm " + document["peer"]["version"] in body
    table = body.split('class="cards external"', 1)[1].split("</table>", 1)[0]
    for source, row in document["per_source"].items():
        assert f"<code>{source}</code>" in table
        mine = row["engine"]["median_abs_error_pct"]
        assert f"{mine:.1f}&nbsp;%" in table or f"{round(mine, 1):g}&nbsp;%" in table
    cases = body.split("Every figure with its error", 1)[1]
    for case in document["cases"]:
        assert f"<code>{case['id']}</code>" in cases
        if case["excluded"]:
            assert str(escape(case["excluded"])) in cases
    german = client.get("/how-we-calculate", headers={"Accept-Language": "de"}).text
    assert "unter dem Minimum der Modellzustände: 1,236 Mrd. Parameter" in german
    assert "figures not counted, and why" in body


def test_the_published_gpu_runs_in_german_with_german_numbers(client: TestClient) -> None:
    document = _external()
    body = client.get("/how-we-calculate", headers={"Accept-Language": "de"}).text
    assert "Veröffentlichte GPU-Läufe" in body and "Published GPU runs" not in body
    assert "Every figure with its error" not in body and "Our median error" not in body
    median = document["all"]["engine"]["median_abs_error_pct"]
    assert f"{round(median, 1):g}".replace(".", ",") + " %" in body


def test_no_published_runs_section_without_the_results_file(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(pages, "EXTERNAL_JSON", tmp_path / "missing.json")
    assert "Published GPU runs" not in client.get("/how-we-calculate").text


def test_the_supported_architectures_are_listed_from_the_engine(client: TestClient) -> None:
    page = client.get("/how-we-calculate").text
    assert "Supported architectures" in page
    for model_type in ("qwen3_next", "nemotron_h", "gemma3", "olmo2", "gpt_neox", "llama",
                       "deepseek_v3", "glm_moe_dsa", "minimax_m2", "gpt_oss", "llama4"):
        assert model_type in page
    assert "LoRA on the experts is counted as PEFT 0.21 builds it" in page


def test_the_h200_steps_are_shown_per_step_beside_the_cpu_grid(client: TestClient) -> None:
    """Issue 28: allocated and the total per GPU against each real H200 step, in both
    languages, from the published comparison (``make accuracy``)."""
    published = json.loads(pages.ACCURACY_JSON.read_text(encoding="utf-8"))["h200"]
    english = client.get("/how-we-calculate", headers={"Accept-Language": "en"}).text
    german = client.get("/how-we-calculate", headers={"Accept-Language": "de"}).text
    assert 'id="h200"' in english and "On a real GPU" in english
    assert "Auf einer echten GPU" in german
    for row in published["rows"]:
        assert f"<code>{row['step']}</code>" in english
        total = i18n.format_number(row["engine_total_gb"], "de")
        assert f"{total}&nbsp;GB" in german


@pytest.mark.parametrize("lang", ["en", "de"])
def test_each_h200_row_shows_allocated_and_the_total_measured_and_estimated(
    client: TestClient, lang: str
) -> None:
    """Issue 28: per step, both counters (allocated, and what the card held) beside our figure
    for each and the error, in the row of that step, in the reader's language."""
    published = json.loads(pages.ACCURACY_JSON.read_text(encoding="utf-8"))["h200"]
    page = client.get("/how-we-calculate", headers={"Accept-Language": lang}).text
    table = page[page.index('<table class="cards accuracy-h200">'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr>\s*<td><code>(.*?)</code></td>(.*?)</tr>", table, re.S)
    assert [step for step, _ in rows] == [row["step"] for row in published["rows"]]
    for (_, cells), row in zip(rows, published["rows"], strict=True):
        shown = re.findall(r"<td>(.*?)</td>", cells)
        expected = [f"{i18n.format_number(row[key], lang)}&nbsp;{unit}" for key, unit in (
            ("allocated_gb", "GB"), ("engine_allocated_gb", "GB"), ("allocated_error_pct", "%"),
            ("total_gb", "GB"), ("engine_total_gb", "GB"), ("total_error_pct", "%"))]
        assert shown == expected, row["step"]


# Where the Unsloth estimate departs from Unsloth's published figures, and why, in each
# language: below the card, because the table's code held tensors today's does not.
UNSLOTH_DEPARTURE = {
    "en": ("our total lies 5 % to 23 % below the card",
           "Unsloth's code of December 2024, which held more than today's",
           "so we count less"),
    "de": ("liegt unsere Summe 5 % bis 23 % unter der Karte",
           "Unsloths Code vom Dezember 2024 gemessen, der mehr hielt als der heutige",
           "daher rechnen wir weniger"),
}


@pytest.mark.parametrize("lang", sorted(UNSLOTH_DEPARTURE))
def test_the_page_says_where_unsloth_s_published_figures_differ_and_why(
    client: TestClient, lang: str
) -> None:
    """Issue 28, point 3: each Unsloth term with its source, and what the sources do not
    give said on the page: the published table lies above our total, and the page says by how
    much and that the code it was measured with held more (tests/engine/test_framework_unsloth.py
    holds the figures)."""
    page = client.get("/how-we-calculate", headers={"Accept-Language": lang}).text
    section = page[page.index('id="unsloth-basis"'):]
    section = section[:section.index("</p>")].replace("\u00a0", " ")
    for words in UNSLOTH_DEPARTURE[lang]:
        assert words in section
