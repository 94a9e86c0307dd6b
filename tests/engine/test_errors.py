"""Engine errors are data: the raiser names the field, the key and the values; nothing parses."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine import Job, estimate
from app.engine.architectures.registry import parse_config
from app.engine.errors import ERROR_TEXTS, EngineError
from app.engine.shapes import ShapeError
from tests.engine.reference import reference_shape
from tests.engine.test_validation import BAD_JOBS


def test_an_engine_error_carries_field_key_and_values() -> None:
    error = EngineError("seq_len", "beyond_positions", seq_len=200_000, max_positions=131_072)
    assert (error.field, error.key) == ("seq_len", "beyond_positions")
    assert error.params == {"seq_len": 200_000, "max_positions": 131_072}
    assert error.reason == "200,000 is beyond this model's 131,072 positions"
    assert str(error) == "seq_len: 200,000 is beyond this model's 131,072 positions"


def test_a_value_with_a_colon_stays_in_the_reason() -> None:
    """The field is given, not found at the first colon of the message."""
    with pytest.raises(ShapeError) as caught:
        parse_config({"model_type": "llama: the sequel"})
    assert caught.value.field == "model_type"
    assert caught.value.key == "model_type_unsupported"
    assert caught.value.params["value"] == "'llama: the sequel'"


@pytest.mark.parametrize(("change", "field"), BAD_JOBS)
def test_every_job_refusal_has_a_key_the_pages_can_translate(change: dict[str, Any],
                                                              field: str) -> None:
    with pytest.raises(EngineError) as caught:
        estimate(reference_shape("llama-3.1-8b"), Job(**change), [])
    assert caught.value.field == field
    assert caught.value.key in ERROR_TEXTS


def test_a_quantised_lora_base_names_its_key() -> None:
    with pytest.raises(EngineError) as caught:
        estimate(reference_shape("llama-3.1-8b"), Job(method="lora", quant="nf4"), [])
    assert (caught.value.field, caught.value.key) == ("quant", "quantised_lora")
    assert caught.value.reason == "a quantised base is method qlora, not lora"
