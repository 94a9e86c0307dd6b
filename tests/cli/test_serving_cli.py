"""`sizer serving` as a user runs it: the contracted JSON, the table, exit codes naming the
field; and `--gpu-memory` on both `sizer serving` and `sizer estimate` (gpu "custom")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli.estimate import OFFLINE_NOTE
from tests.cli.runner import Run
from tests.cli.runner import sizer as run_sizer

GIB = 1024**3


def sizer(*args: str, tmp_path: Path) -> Run:
    """``sizer ARGS --offline`` (the seed files' catalog), the note it prints on standard
    error taken off (tests/cli/test_estimate_database.py holds the note itself)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SIZER_DATABASE_URL", f"sqlite:///{tmp_path / 'none.db'}")
        run = run_sizer(*args, "--offline")
    return Run(run.code, run.stdout, run.stderr.removeprefix(f"{OFFLINE_NOTE}\n"))


def test_json_document_has_the_contracted_shape(tmp_path: Path) -> None:
    run = sizer("serving", "--model", "llama-3.1-8b", "--context", "16384", "--concurrency", "8",
                "--format", "json", tmp_path=tmp_path)
    assert run.code == 0, run.stderr
    doc = json.loads(run.stdout)
    assert set(doc) >= {"engine_version", "params", "kv_cache_bytes_per_token",
                        "per_gpu_bytes", "fits", "levers", "assumptions"}
    assert doc["params"] == {"total": 8_030_261_248, "active": 8_030_261_248}
    assert doc["kv_cache_bytes_per_token"] == 131_072
    per_gpu = doc["per_gpu_bytes"]
    assert per_gpu["total"] == sum(per_gpu[k] for k in ("weights", "activations",
                                                        "cuda_graphs", "overhead", "kv_cache"))
    assert per_gpu["kv_cache"] == 8 * 16384 * 131_072  # context x concurrency, per GPU
    assert {fit["gpu"] for fit in doc["fits"]} >= {"rtx-pro-6000", "h200-nvl", "dgx-spark"}
    for fit in doc["fits"]:
        assert set(fit) >= {"gpu", "usable_bytes", "budget_bytes", "kv_cache_capacity_bytes",
                            "kv_cache_capacity_tokens", "max_concurrency", "max_context",
                            "fits", "decode_tokens_per_s", "prefill_tokens_per_s"}
        assert set(fit["decode_tokens_per_s"]) == {"per_request", "total"}
        assert fit["fits"] == (fit["max_concurrency"] >= 8)


def test_table_shows_the_same_numbers(tmp_path: Path) -> None:
    args = ("serving", "--model", "qwen3-32b", "--weights", "awq", "--gpu", "rtx-pro-4500")
    table = sizer(*args, tmp_path=tmp_path)
    doc = json.loads(sizer(*args, "--format", "json", tmp_path=tmp_path).stdout)
    assert table.code == 0, table.stderr
    fit = doc["fits"][0]
    assert f"{fit['kv_cache_capacity_bytes'] / 1e9:.1f}" in table.stdout
    assert f" {fit['max_concurrency']} " in table.stdout


def test_gpu_memory_holds_the_job_against_a_custom_card(tmp_path: Path) -> None:
    run = sizer("serving", "--model", "llama-3.1-8b", "--gpu-memory", "24GiB", "--format",
                "json", tmp_path=tmp_path)
    assert run.code == 0, run.stderr
    (fit,) = json.loads(run.stdout)["fits"]
    assert fit["gpu"] == "custom"
    assert fit["usable_bytes"] == 24 * GIB
    assert fit["decode_tokens_per_s"] is None  # its bandwidth is unknown


def test_estimate_takes_gpu_memory_too(tmp_path: Path) -> None:
    run = sizer("estimate", "--model", "llama-3.1-8b", "--method", "lora", "--gpu-memory",
                "80GB", "--format", "json", tmp_path=tmp_path)
    assert run.code == 0, run.stderr
    (fit,) = json.loads(run.stdout)["fits"]
    assert (fit["gpu"], fit["usable_bytes"]) == ("custom", 80 * 10**9)


@pytest.mark.parametrize(("args", "field"), [
    (("--context", "0"), "context"),
    (("--concurrency", "-3"), "concurrency"),
    (("--gpus", "1000"), "gpus"),
    (("--gpu-memory-utilization", "1.5"), "gpu_memory_utilization"),
    (("--gpu-memory", "lots"), "gpu_memory"),
    (("--gpu", "no-such-card"), "gpu"),
    (("--runtime", "llama.cpp", "--weights", "awq"), "weights"),
])
def test_bad_input_exits_2_naming_the_field(args: tuple[str, ...], field: str,
                                            tmp_path: Path) -> None:
    run = sizer("serving", "--model", "llama-3.1-8b", *args, tmp_path=tmp_path)
    assert run.code == 2
    assert run.stderr.startswith(f"sizer serving: error: {field}:"), run.stderr


def test_an_unknown_choice_exits_2(tmp_path: Path) -> None:
    run = sizer("serving", "--model", "llama-3.1-8b", "--weights", "int3", tmp_path=tmp_path)
    assert run.code == 2
    assert "--weights" in run.stderr


def test_a_model_config_file_with_a_sliding_window(tmp_path: Path) -> None:
    config = Path(__file__).resolve().parents[2] / "app/catalog/seed/models/gemma-2-9b.json"
    run = sizer("serving", "--model-config", str(config), "--gpu", "rtx-pro-6000", "--format",
                "json", tmp_path=tmp_path)
    assert run.code == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["kv_cache_bytes_per_token"] == 42 * 2 * 8 * 256 * 2
    assert any("sliding-window" in item for item in doc["assumptions"])


def test_an_unknown_model_type_is_sized_approximately(tmp_path: Path) -> None:
    config = {"model_type": "mystery", "hidden_size": 4096, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8,
              "intermediate_size": 14336, "vocab_size": 128256}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    run = sizer("serving", "--model-config", str(path), "--gpu", "h200-nvl", "--format",
                "json", tmp_path=tmp_path)
    assert run.code == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["fidelity"] == "approximate"
    assert doc["assumptions"][0].startswith("approximate: model type 'mystery'")
    assert doc["kv_cache_bytes_per_token"] == 131_072
