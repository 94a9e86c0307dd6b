"""``sizer estimate`` prints each card's training time and takes the customer's data (issue 26)."""

from __future__ import annotations

import json

import pytest

from tests.cli.runner import sizer

JOB = ("estimate", "--model", "llama-3.1-8b", "--method", "lora",
       "--gradient-checkpointing", "off")


def test_the_table_prints_hours_beside_each_card() -> None:
    run = sizer(*JOB)
    assert run.code == 0, run.stderr
    header = next(line for line in run.stdout.splitlines() if "max batch" in line)
    assert header.split()[-2:] == ["hours", "tokens/s"]
    row = next(line for line in run.stdout.splitlines() if line.strip().startswith("h200-nvl"))
    document = json.loads(sizer(*JOB, "--format", "json").stdout)
    fit = next(f for f in document["fits"] if f["gpu"] == "h200-nvl")
    assert f"{fit['training']['hours']:.2f}" in row.split()


def test_data_and_epochs_set_the_hours() -> None:
    base = json.loads(sizer(*JOB, "--format", "json", "--gpu", "h200-nvl").stdout)
    more = json.loads(sizer(*JOB, "--format", "json", "--gpu", "h200-nvl",
                            "--dataset-tokens", "1.5B", "--epochs", "2").stdout)
    hours = base["fits"][0]["training"]["hours"], more["fits"][0]["training"]["hours"]
    assert hours[1] == pytest.approx(300 * hours[0], rel=0.01)


def test_a_comparison_card_is_named_and_marked() -> None:
    run = sizer(*JOB, "--gpu", "h200-sxm")
    assert run.code == 0, run.stderr
    assert "(comparison card, not sold)" in run.stdout
    assert "h200-sxm" not in sizer(*JOB).stdout


@pytest.mark.parametrize(("argv", "field"), [
    (("--dataset-tokens", "lots"), "dataset_tokens"),
    (("--dataset-tokens", "0"), "dataset_tokens"),
    (("--dataset-tokens", "20T"), "dataset_tokens"),
    (("--epochs", "0"), "epochs"),
    (("--epochs", "5000"), "epochs"),
])
def test_bad_data_sizes_exit_2_naming_the_field(argv: tuple[str, str], field: str) -> None:
    run = sizer(*JOB, *argv)
    assert run.code == 2
    assert field in run.stderr
