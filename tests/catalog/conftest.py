"""A seed directory per test: the shipped GPU and system files plus two small models.

The shipped models.json is curated separately (and grows); these tests are
about seeding mechanics, so they use two real-format configs of their own
(a dense Llama-style model and a Mixtral-style mixture of experts) and stay
independent of which models the catalog ships.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from app.config import SEED_DIR

TINY_LLAMA: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "num_hidden_layers": 2,
    "vocab_size": 1000,
    "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False,
}

TINY_MIXTRAL: dict[str, Any] = {
    "architectures": ["MixtralForCausalLM"],
    "model_type": "mixtral",
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "vocab_size": 500,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False,
}


class SeedFiles:
    """A writable seed directory and the edits tests make to it between seed runs."""

    def __init__(self, root: Path) -> None:
        self.dir = root

    def write_models(self, entries: list[dict[str, Any]]) -> None:
        """Rewrite models.json."""
        (self.dir / "models.json").write_text(json.dumps({"models": entries}), encoding="utf-8")

    @staticmethod
    def model_entry(slug: str, config: str, **extra: Any) -> dict[str, Any]:
        """A models.json entry pointing at ``models/<config>``."""
        return {
            "slug": slug,
            "hf_id": f"test/{slug}",
            "family": "test",
            "config": config,
            "license": "apache-2.0",
            "gated": False,
            **extra,
        }

    def edit_gpu(self, slug: str, **changes: Any) -> None:
        """Change one GPU's entry in gpus.json (a new seed release, say)."""
        path = self.dir / "gpus.json"
        document = json.loads(path.read_text(encoding="utf-8"))
        (entry,) = [gpu for gpu in document["gpus"] if gpu["slug"] == slug]
        entry.update(changes)
        path.write_text(json.dumps(document), encoding="utf-8")


@pytest.fixture
def seed_files(tmp_path: Path) -> SeedFiles:
    """A writable copy of the seed: shipped gpus.json/systems.json, two test models."""
    files = SeedFiles(tmp_path / "seed")
    (files.dir / "models").mkdir(parents=True)
    for name in ("gpus.json", "systems.json"):
        shutil.copy(SEED_DIR / name, files.dir / name)
    for name, config in (("tiny-llama.json", TINY_LLAMA), ("tiny-mixtral.json", TINY_MIXTRAL)):
        (files.dir / "models" / name).write_text(json.dumps(config), encoding="utf-8")
    files.write_models(
        [
            files.model_entry("tiny-llama", "tiny-llama.json"),
            files.model_entry("tiny-mixtral", "tiny-mixtral.json", notes="extra keys ignored"),
        ]
    )
    return files
