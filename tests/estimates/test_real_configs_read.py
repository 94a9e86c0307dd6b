"""Real published config.json files that the reader used to refuse (issue 29, point 1), read
through the one reader every surface uses (``app/catalog/inline_config.py``) and sized.

* nvidia/Nemotron-H-56B-Base-8K carries ``"time_step_limit": [0.0, Infinity]``, which
  transformers reads (Python's ``json``); it was refused as "numbers must be finite". Its
  count is transformers 5.25's (``expected_hybrid.json``, ``tools/model_counts.py``).
* nvidia/MiniMax-M3-NVFP4's config.json is 3,087,083 bytes, 2.41 MB of it the ModelOpt layer
  list in ``quantization_config``; it was refused as "larger than 256 KB".

Sources: ``tests/fixtures/hf_configs/SOURCES.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.catalog import inline_config
from app.catalog.inline_config import read_config_bytes
from app.engine.architectures.approximate import shape_of
from app.engine.architectures.registry import parse_config
from app.engine.states import LoraSetup, lora_trainable_params

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
EXPECTED: dict[str, dict[str, Any]] = json.loads((CONFIGS / "expected_hybrid.json").read_text())


def test_nemotron_h_with_an_infinite_time_step_limit_is_counted_exactly() -> None:
    raw = (CONFIGS / "nemotron-h-56b-base-8k.json").read_bytes()
    assert b"Infinity" in raw

    config = read_config_bytes(raw)
    shape = parse_config(config)

    assert config["time_step_limit"] == [0.0, "Infinity"]
    expected = EXPECTED["nemotron-h-56b-base-8k"]
    assert shape.total_params == expected["text_total"] == 56_324_350_464
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == expected["lora_r16_text"]


def test_a_3_mb_nvidia_quantised_config_is_read_and_sized() -> None:
    raw = (CONFIGS / "minimax-m3-nvfp4.json").read_bytes()
    assert len(raw) == 3_087_083 > inline_config.MAX_CONFIG_BYTES

    config = read_config_bytes(raw)

    section = config["quantization_config"]
    assert section["quant_method"] == "modelopt"
    assert section["quant_algo"] == "MIXED_PRECISION"
    assert section["quantized_layers"]["entries"] > 1000
    assert len(json.dumps(config)) <= inline_config.MAX_CONFIG_BYTES
    original = json.loads(raw)
    assert {k: v for k, v in config.items() if k != "quantization_config"} == {
        k: v for k, v in original.items() if k != "quantization_config"}
    shape = shape_of(config)
    assert shape.total_params > 0
