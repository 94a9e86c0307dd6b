"""`sizer estimate` as a user runs it: its output and exit codes, through ``main`` in this
process (tests/cli/runner.py); tests/cli/test_end_to_end.py runs it as a real process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli.estimate import OFFLINE_NOTE
from tests.cli.runner import Run
from tests.cli.runner import sizer as run_sizer
from tests.engine.reference import REFERENCE


def sizer(*args: str, tmp_path: Path) -> Run:
    """``sizer ARGS --offline`` (the seed files' catalog), with a database URL that names no
    file yet; the note --offline prints on standard error is taken off, so a test sees what
    the command says besides (tests/cli/test_estimate_database.py holds the note itself)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SIZER_DATABASE_URL", f"sqlite:///{tmp_path / 'none.db'}")
        run = run_sizer(*args, "--offline")
    assert not (tmp_path / "none.db").exists()  # estimate reads; it never creates a database
    return Run(run.code, run.stdout, run.stderr.removeprefix(f"{OFFLINE_NOTE}\n"))


def test_json_document_has_the_contracted_shape(tmp_path: Path) -> None:
    run = sizer("estimate", "--model", "llama-3.1-8b", "--method", "lora", "--format", "json",
                tmp_path=tmp_path)
    assert run.code == 0, run.stderr
    doc = json.loads(run.stdout)
    assert set(doc) >= {"engine_version", "params", "per_gpu_bytes", "model_states_bytes",
                        "peak_phase", "fits", "levers", "assumptions"}
    assert doc["params"]["total"] == 8030261248
    assert doc["params"]["trainable"] == 41943040
    per_gpu = doc["per_gpu_bytes"]
    assert per_gpu["total"] == sum(per_gpu[k] for k in
                                   ("weights", "adapter", "gradients", "optimizer",
                                    "activations", "overhead"))
    assert doc["model_states_bytes"] == sum(per_gpu[k] for k in
                                            ("weights", "adapter", "gradients", "optimizer"))
    assert doc["peak_phase"] in ("forward", "backward", "optimizer")
    slugs = {fit["gpu"] for fit in doc["fits"]}
    assert {"rtx-pro-6000", "h200-nvl", "dgx-spark", "rtx-pro-4500"} <= slugs
    for fit in doc["fits"]:
        assert set(fit) >= {"gpu", "usable_bytes", "free_bytes", "fits", "max_batch_size",
                            "max_seq_len"}


def test_table_shows_the_same_numbers(tmp_path: Path) -> None:
    args = ("estimate", "--model", "qwen3-32b", "--method", "qlora", "--gpu", "rtx-pro-4500")
    table = sizer(*args, tmp_path=tmp_path)
    doc = json.loads(sizer(*args, "--format", "json", tmp_path=tmp_path).stdout)
    assert table.code == 0
    total_gb = f"{doc['per_gpu_bytes']['total'] / 1e9:.1f}"
    assert any(line.split()[:2] == ["total", total_gb] for line in table.stdout.splitlines())
    assert "rtx-pro-4500" in table.stdout


def test_model_config_file_works_like_a_slug(tmp_path: Path) -> None:
    path = REFERENCE / "models" / "gemma-2-9b.json"
    by_file = sizer("estimate", "--model-config", str(path), "--method", "lora", "--format",
                    "json", tmp_path=tmp_path)
    by_slug = sizer("estimate", "--model", "gemma-2-9b", "--method", "lora", "--format", "json",
                    tmp_path=tmp_path)
    by_file_doc, by_slug_doc = json.loads(by_file.stdout), json.loads(by_slug.stdout)
    assert by_file_doc["per_gpu_bytes"] == by_slug_doc["per_gpu_bytes"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--model", "llama-3.1-8b", "--method", "lora", "--batch-size", "0"), "batch_size"),
        (("--model", "llama-3.1-8b", "--method", "lora", "--seq-len", "-1"), "seq_len"),
        (("--model", "llama-3.1-8b", "--method", "lora", "--seq-len", "200000"), "seq_len"),
        (("--model", "llama-3.1-8b", "--method", "lora", "--lora-rank", "0"), "lora_rank"),
        (("--model", "llama-3.1-8b", "--method", "lora", "--lora-targets", "x_proj"),
         "lora_targets"),
        (("--model", "llama-3.1-8b", "--method", "lora", "--optimizer", "lion"), "optimizer"),
        (("--model", "llama-3.1-8b", "--method", "full", "--quant", "nf4"), "quant"),
        (("--model", "no-such-model", "--method", "lora"), "no-such-model"),
        (("--model", "llama-3.1-8b", "--method", "lora", "--gpu", "rtx-9999"), "rtx-9999"),
        (("--model", "llama-3.1-8b", "--method", "lora", "--batch-size", "many"), "batch-size"),
        # the shop's bounds, the same as on the page and the API
        (("--model", "llama-3.1-8b", "--method", "lora", "--batch-size", "4097"),
         "batch_size: at most 4096"),
        (("--model", "llama-3.1-8b", "--method", "lora", "--lora-rank", "4097"),
         "lora_rank: at most 4096"),
        (("--model", "llama-3.1-8b", "--method", "lora", "--gpus", "1025"), "gpus: at most"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], needle: str,
                                          tmp_path: Path) -> None:
    run = sizer("estimate", *args, tmp_path=tmp_path)
    assert run.code == 2
    assert "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert needle in run.stderr


def test_config_file_problems_are_one_line(tmp_path: Path) -> None:
    not_json = tmp_path / "config.json"
    not_json.write_text("model_type: llama")
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    for path, needle in ((not_json, "not valid JSON"), (missing, "num_attention_heads"),
                         (tmp_path / "absent.json", "cannot read")):
        run = sizer("estimate", "--model-config", str(path), "--method", "lora",
                    tmp_path=tmp_path)
        assert run.code == 2, run.stdout
        assert "Traceback" not in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1
        assert needle in run.stderr


def test_checkpointing_is_auto_on_or_off_and_the_bare_flag_means_on(tmp_path: Path) -> None:
    """Issue 27, point 1: ``--gradient-checkpointing auto|on|off`` (default auto; QLoRA turns
    it on, as PEFT's prepare_model_for_kbit_training does); the bare flag still means on."""
    job = ("estimate", "--model", "qwen3-8b", "--method", "qlora", "--batch-size", "4",
           "--format", "json")
    docs = {name: json.loads(sizer(*job, *flag, tmp_path=tmp_path).stdout) for name, flag in (
        ("default", ()), ("auto", ("--gradient-checkpointing", "auto")),
        ("bare", ("--gradient-checkpointing",)), ("on", ("--gradient-checkpointing", "on")),
        ("off", ("--gradient-checkpointing", "off")))}
    assert docs["default"]["checkpointing"] == {"setting": "auto", "enabled": True,
                                                "reason": "qlora"}
    assert docs["default"]["per_gpu_bytes"] == docs["auto"]["per_gpu_bytes"] == docs["bare"][
        "per_gpu_bytes"] == docs["on"]["per_gpu_bytes"]
    assert docs["bare"]["checkpointing"] == {"setting": "on", "enabled": True, "reason": "set"}
    assert docs["default"]["per_gpu_bytes"]["total"] < 40e9 < docs["off"]["per_gpu_bytes"][
        "total"]
    table = sizer(*job[:-2], tmp_path=tmp_path).stdout
    assert "gradient checkpointing: on (auto: qlora)" in table
    refused = sizer(*job, "--gradient-checkpointing", "sometimes", tmp_path=tmp_path)
    assert refused.code == 2 and "gradient-checkpointing" in refused.stderr
