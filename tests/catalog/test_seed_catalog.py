"""The catalog straight from the seed files: what ``sizer estimate`` holds a job against when
there is no database. Active rows only, like the database's catalog for customers; before
issue 14 (point 2) there were two ``load_seed_catalog`` functions, and the one the command used
kept archived rows, so it could recommend a card the shop no longer sells."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.catalog import seed as seed_module
from app.catalog.seed import load_seed_catalog
from tests.catalog.conftest import SeedFiles
from tests.cli.runner import sizer

ARCHIVED_GPU = "rtx-pro-6000"
"""A card the shipped seed sells, with systems built on it (srv-8x-rtx-pro-6000 and more)."""


def _archive(seed_files: SeedFiles) -> None:
    seed_files.edit_gpu(ARCHIVED_GPU, active=False)
    seed_files.write_models([
        seed_files.model_entry("tiny-llama", "tiny-llama.json"),
        seed_files.model_entry("tiny-mixtral", "tiny-mixtral.json", active=False),
    ])


def test_the_seed_catalog_holds_active_rows_only(seed_files: SeedFiles) -> None:
    _archive(seed_files)
    catalog = load_seed_catalog(seed_files.dir)

    assert ARCHIVED_GPU not in {gpu.slug for gpu in catalog.gpus}
    assert catalog.gpus  # the others stay
    assert all(system.gpu_slug != ARCHIVED_GPU for system in catalog.systems)
    assert [model.slug for model in catalog.models] == ["tiny-llama"]


@pytest.fixture
def no_database(seed_files: SeedFiles, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> SeedFiles:
    """``sizer estimate --offline`` (a SQLite file that does not exist configured) and the
    test's seed files in place of the shipped ones."""
    monkeypatch.setenv("SIZER_DATABASE_URL", f"sqlite:///{tmp_path / 'absent.db'}")
    monkeypatch.setattr(seed_module, "SEED_DIR", seed_files.dir)
    _archive(seed_files)
    return seed_files


def test_sizer_estimate_without_a_database_skips_an_archived_card(
    no_database: SeedFiles,
) -> None:
    run = sizer("estimate", "--offline", "--model", "tiny-llama", "--method", "lora",
                "--format", "json")

    assert run.code == 0, run.stderr
    cards = {fit["gpu"] for fit in json.loads(run.stdout)["fits"]}
    assert cards and ARCHIVED_GPU not in cards


def test_sizer_estimate_without_a_database_refuses_an_archived_card_or_model(
    no_database: SeedFiles,
) -> None:
    card = sizer("estimate", "--offline", "--model", "tiny-llama", "--method", "lora",
                 "--gpu", ARCHIVED_GPU)
    assert card.code == 2 and ARCHIVED_GPU in card.stderr
    model = sizer("estimate", "--offline", "--model", "tiny-mixtral", "--method", "lora")
    assert model.code == 2 and "tiny-mixtral" in model.stderr
