"""`sizer estimate --precision/--adapter-dtype/--base-dtype/--framework` (issue 15, point 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_estimate_cli import sizer

LLAMA_FULL = ("estimate", "--model", "llama-3.2-3b", "--method", "full", "--format", "json")


def _states(*extra: str, tmp_path: Path) -> int:
    run = sizer(*LLAMA_FULL, *extra, tmp_path=tmp_path)
    assert run.code == 0, run.stderr
    states: int = json.loads(run.stdout)["model_states_bytes"]
    return states


def test_pure_bf16_and_the_torchtune_preset_halve_the_full_fine_tune_states(
    tmp_path: Path,
) -> None:
    amp = _states(tmp_path=tmp_path)
    pure = _states("--precision", "bf16", tmp_path=tmp_path)
    assert pure == _states("--framework", "torchtune", tmp_path=tmp_path)
    assert 2 * pure == amp  # 8 against 16 bytes per param with AdamW


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--precision", "fp8"), "--precision"),
        (("--framework", "axolotl"), "--framework"),
        (("--method", "lora", "--precision", "bf16", "--adapter-dtype", "fp32"),
         "adapter_dtype: pure bf16"),
        (("--method", "full", "--base-dtype", "fp32"), "base_dtype: a full fine-tune"),
    ],
)
def test_contradictory_dtypes_are_one_line_and_exit_2(args: tuple[str, ...], needle: str,
                                                      tmp_path: Path) -> None:
    method = () if "--method" in args else ("--method", "lora")
    run = sizer("estimate", "--model", "llama-3.1-8b", *method, *args, tmp_path=tmp_path)
    assert run.code == 2
    assert len(run.stderr.strip().splitlines()) == 1
    assert needle in run.stderr
