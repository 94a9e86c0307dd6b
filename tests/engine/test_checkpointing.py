"""Gradient checkpointing ``auto``, ``on`` and ``off`` (issue 27, point 1): the one rule the
page, the API and the CLI follow, with the parameters counted from the config."""

from __future__ import annotations

import pytest

from app.engine import EngineError, checkpointing
from app.engine.checkpointing import AUTO_PARAMS, AUTO_SEQ, Checkpointing, choose


@pytest.mark.parametrize(("method", "params", "seq", "expected"), [
    ("qlora", 1_000_000_000, 512, Checkpointing("auto", True, "qlora")),
    ("lora", AUTO_PARAMS, 512, Checkpointing("auto", True, "large_model")),
    ("full", AUTO_PARAMS - 1, AUTO_SEQ, Checkpointing("auto", True, "long_sequence")),
    ("lora", AUTO_PARAMS - 1, AUTO_SEQ - 1, Checkpointing("auto", False, "small_job")),
])
def test_auto_follows_the_recipes(method: str, params: int, seq: int,
                                  expected: Checkpointing) -> None:
    assert choose("auto", method=method, total_params=params, seq_len=seq) == expected


def test_on_and_off_are_kept_whatever_the_job() -> None:
    assert choose("off", method="qlora", total_params=AUTO_PARAMS, seq_len=AUTO_SEQ) == (
        checkpointing.as_set(False))
    assert choose("on", method="lora", total_params=1, seq_len=1) == Checkpointing(
        "on", True, "set")


def test_another_setting_is_refused_naming_the_field() -> None:
    with pytest.raises(EngineError) as raised:
        choose("sometimes", method="lora", total_params=1, seq_len=1)
    assert raised.value.field == "gradient_checkpointing"
