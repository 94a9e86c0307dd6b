"""The page, the CLI and the API give identical numbers: they call one estimates service.

For each input of a small matrix (models x methods x a few options), the storefront's result
(what ``app.web.calculator`` renders), ``sizer estimate --format json`` (its ``main``, in this
process, on the same database) and ``POST /api/v1/estimates`` must be the same document; and
every system the page shows as fitting is a recommendation with the same free memory and
largest micro-batch.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.caches import Caches
from app.catalog import service as catalog_service
from app.cli import main as sizer
from app.db.session import SessionFactory
from app.web import calculator
from app.web import calculator_form as form

MATRIX: list[tuple[str, str, dict[str, Any]]] = [
    (model, method, options)
    for model in ("llama-3.1-8b", "qwen3-30b-a3b", "gemma-2-2b")
    for method in ("full", "lora", "qlora")
    for options in ({"batch": 2, "seq": 1024},)
] + [
    ("mistral-7b-v0.3", "lora", {"batch": 4, "seq": 4096, "ckpt": "on", "optimizer": "adamw_8bit"}),
    ("qwen3-8b", "qlora", {"batch": 4, "seq": 2048, "ckpt": "off"}),
    ("qwen3-8b", "full", {"batch": 1, "seq": 2048, "gpus": 4, "sharding": "zero3"}),
    # training precision (issue 15): a framework preset, and explicit dtypes over it
    ("llama-3.2-3b", "full", {"batch": 2, "seq": 4096, "framework": "torchtune"}),
    ("llama-3.1-8b", "lora", {"batch": 1, "seq": 512, "framework": "litgpt"}),
    ("llama-3.1-8b", "qlora", {"batch": 2, "seq": 1024, "framework": "unsloth"}),
    ("qwen3-8b", "full", {"batch": 1, "seq": 2048, "precision": "bf16"}),
    ("mistral-7b-v0.3", "lora", {"batch": 2, "seq": 1024, "adapter": "bf16", "base": "fp32"}),
    # QLoRA as bitsandbytes 0.41-0.43.1 ran it (issue 15, point 1)
    ("llama-3.1-8b", "qlora", {"batch": 2, "seq": 1024, "bnb": "0.41"}),
    # ZeRO-3 as FSDP FULL_SHARD runs it (issue 15, point 3)
    ("qwen3-8b", "lora", {"batch": 2, "seq": 2048, "gpus": 4, "sharding": "zero3",
                          "impl": "fsdp"}),
    # PyTorch's allocator with expandable segments (issue 15, point 4)
    ("llama-3.1-8b", "lora", {"batch": 2, "seq": 2048, "segments": True}),
    # LoRA on a mixture of experts, one adapter per expert (issue 16, point 1)
    ("qwen3-30b-a3b", "lora", {"batch": 1, "seq": 1024, "moe": "per-expert"}),
]

# page parameter -> (CLI option, API field) of the precision options, the bitsandbytes release
# and the sharding implementation
PRECISION_OPTIONS = {"framework": ("--framework", "framework"),
                     "precision": ("--precision", "precision"),
                     "adapter": ("--adapter-dtype", "adapter_dtype"),
                     "base": ("--base-dtype", "base_dtype"),
                     "bnb": ("--bnb-version", "bnb_version"),
                     "impl": ("--sharding-impl", "sharding_impl"),
                     "moe": ("--moe-lora", "moe_lora")}


def _ids(case: tuple[str, str, dict[str, Any]]) -> str:
    return f"{case[0]}-{case[1]}-" + "-".join(f"{k}{v}" for k, v in case[2].items())


@pytest.mark.parametrize("case", MATRIX, ids=[_ids(c) for c in MATRIX])
def test_page_cli_and_api_agree(
    case: tuple[str, str, dict[str, Any]], client: TestClient, auth: dict[str, str],
    seeded: SessionFactory, database_url: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], caches: Caches,
) -> None:
    model, method, options = case
    batch, seq = options["batch"], options["seq"]
    ckpt = options.get("ckpt", "auto")  # every surface's default: auto
    optimizer = options.get("optimizer", "adamw")
    gpus, sharding = options.get("gpus", 1), options.get("sharding", "none")
    dtypes = {name: options[name] for name in PRECISION_OPTIONS if name in options}
    segments = bool(options.get("segments"))

    # The page: the view the calculator renders for this shareable query.
    query = {"model": model, "method": method, "batch": str(batch), "seq": str(seq),
             "optimizer": optimizer, "gpus": str(gpus), "sharding": sharding,
             "ckpt": {"auto": "", "on": "1", "off": "0"}[ckpt],
             **({"segments": "1"} if segments else {}),
             **dtypes}
    calc, errors = form.parse(query)
    with seeded() as session:
        catalog = catalog_service.get_catalog(session, caches.catalog)
        view, status = calculator.size(catalog, calc, errors, cache=caches.estimates)
    assert status == 200 and view is not None
    page = json.loads(json.dumps(view.result.to_dict()))
    assert client.get("/", params=query).status_code == 200

    # The CLI, on the same database.
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    argv = ["estimate", "--model", model, "--method", method, "--batch-size", str(batch),
            "--seq-len", str(seq), "--optimizer", optimizer, "--gpus", str(gpus),
            "--sharding", sharding, "--format", "json"]
    argv += [part for name, value in dtypes.items() for part in (PRECISION_OPTIONS[name][0],
                                                                  value)]
    argv += ["--expandable-segments"] if segments else []
    # the bare flag still means on
    assert sizer([*argv, *({"auto": [], "on": ["--gradient-checkpointing"],
                            "off": ["--gradient-checkpointing", "off"]}[ckpt])]) == 0
    cli = json.loads(capsys.readouterr().out)

    # The API.
    body = {"model": model, "method": method, "batch_size": batch, "seq_len": seq,
            "optimizer": optimizer, "gpus": gpus, "sharding": sharding,
            "gradient_checkpointing": {"auto": "auto", "on": True, "off": "off"}[ckpt],
            "expandable_segments": segments,
            **{PRECISION_OPTIONS[name][1]: value for name, value in dtypes.items()}}
    api = client.post("/api/v1/estimates", headers=auth, json=body).json()

    assert page == cli == api
    assert not dtypes or api["assumptions"] != _default_assumptions(client, auth, body, dtypes)
    assert api["engine_version"]

    recommended = {
        r["slug"]: r for r in client.post("/api/v1/recommendations", headers=auth,
                                          json=body).json()["recommendations"]
    }
    # every row that fits as set, or with a setup (the same setup), and no other (issue 27)
    for row in view.systems:
        if row.fit.fits:
            rec = recommended[row.system.slug]
            assert (rec["free_bytes_per_gpu"], rec["max_batch_size"], rec["cards"]) == (
                row.fit.free_bytes_per_gpu, row.fit.max_batch_size, row.fit.gpus)
            assert rec["setup"] is None
        elif row.fit.setup is not None:
            rec = recommended[row.system.slug]
            assert rec["setup"]["changes"] == row.fit.setup.changes
            assert rec["total_bytes_per_gpu"] == row.fit.setup.total_bytes
        else:
            assert row.system.slug not in recommended
    for card in view.cards:
        if card.fit.fits:
            rec = recommended[card.gpu.slug]
            assert (rec["free_bytes_per_gpu"], rec["max_batch_size"]) == (
                card.fit.free_bytes, card.fit.max_batch_size)
            assert rec["setup"] is None
        elif card.fit.setup is not None:
            rec = recommended[card.gpu.slug]
            assert rec["setup"]["changes"] == card.fit.setup.changes
            assert rec["total_bytes_per_gpu"] == card.fit.setup.total_bytes
        else:
            assert card.gpu.slug not in recommended
    rec = api["recommendation"]
    first = client.post("/api/v1/recommendations", headers=auth, json=body).json()[
        "recommendations"]
    assert (first[0]["kind"], first[0]["slug"]) == (rec["kind"], rec["slug"]) if rec else (
        first == [])


def _default_assumptions(client: TestClient, auth: dict[str, str], body: dict[str, Any],
                         dtypes: dict[str, str]) -> list[str]:
    """The assumptions of the same body without its precision options: they must differ, or
    the options were not passed on."""
    plain = {k: v for k, v in body.items()
             if k not in {PRECISION_OPTIONS[name][1] for name in dtypes}}
    assumptions: list[str] = client.post("/api/v1/estimates", headers=auth,
                                         json=plain).json()["assumptions"]
    return assumptions
