"""The engine's refusals on the page: translated by key, beside their control, never in the
engine's English on a German page (the browser test found two that were)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from app.engine.errors import ERROR_TEXTS
from app.html import i18n
from app.web.engine_errors import ENGINE_ERROR_LABELS

GERMAN = {"Accept-Language": "de"}


def _field_error(body: str, field: str) -> str:
    found = re.search(rf'<span id="err-{field}" class="field-error"[^>]*>([^<]+)</span>', body)
    assert found, body[:3000]
    return found.group(1)


def test_every_engine_error_key_has_a_german_and_an_english_text() -> None:
    assert set(ENGINE_ERROR_LABELS) == set(ERROR_TEXTS)
    german, english = i18n.translations("de"), i18n.translations("en")
    for key, label in ENGINE_ERROR_LABELS.items():
        assert german.gettext(label) != label, f"no German text for engine error {key!r}"
        assert english.gettext(label) == label, key


@pytest.mark.parametrize("lang", ["de", "en"])
def test_every_engine_error_text_takes_the_engine_s_values(lang: str) -> None:
    """Each page text, in each language, formats with what its key is raised with (and the
    ``field`` the page adds): no KeyError on a page for a placeholder the engine never gives."""
    placeholder = re.compile(r"%\((\w+)\)s")
    for key, label in ENGINE_ERROR_LABELS.items():
        given = set(placeholder.findall(ERROR_TEXTS[key])) | {"field"}
        text = i18n.translations(lang).gettext(label)
        assert set(placeholder.findall(text)) <= given, (lang, key)


def test_a_quantised_base_with_lora_is_refused_in_german(
    make_client: Callable[..., TestClient],
) -> None:
    response = make_client().get(
        "/", params={"model": "llama-3.1-8b", "method": "lora", "quant": "nf4"}, headers=GERMAN
    )
    assert response.status_code == 422
    assert _field_error(response.text, "quant") == (
        "Eine 4-Bit-Basis wird mit QLoRA trainiert, nicht mit LoRA. Wählen Sie QLoRA oder "
        "belassen Sie die Basis in bf16."
    )
    assert "method qlora, not lora" not in response.text


def test_an_unknown_model_type_without_the_standard_fields_is_refused_in_german(
    make_client: Callable[..., TestClient],
) -> None:
    response = make_client().post(
        "/", data={"model": "custom", "config": '{"model_type": "foo"}'}, headers=GERMAN
    )
    assert response.status_code == 422
    message = _field_error(response.text, "config")
    assert message.startswith("hidden_size fehlt in der config.json: Den Modelltyp "
                              "&#39;foo&#39; zählen wir nicht exakt")
    assert "standard decoder fields" not in response.text


def test_a_config_field_over_its_bound_is_named_with_german_numbers(
    make_client: Callable[..., TestClient],
) -> None:
    config = ('{"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, '
              '"num_attention_heads": 4, "num_hidden_layers": 5000, "vocab_size": 1000}')
    response = make_client().post("/", data={"model": "custom", "config": config},
                                  headers=GERMAN)
    assert response.status_code == 422
    assert _field_error(response.text, "config") == (
        "num_hidden_layers: höchstens 1.024 wird unterstützt, nicht 5.000."
    )


def test_the_four_bit_full_fine_tune_keeps_its_page_wording(
    make_client: Callable[..., TestClient],
) -> None:
    body = make_client().get("/", params={"method": "full", "quant": "nf4-dq"},
                             headers=GERMAN).text
    assert "Ein 4-Bit-Basismodell lässt sich nicht vollständig feinabstimmen" in body
    assert "fully fine-tuned" not in body
