"""OLMo 3 (``olmo3``, released 2025-11; issue 29, point 4): counted exactly instead of by the
approximate path. transformers' ``modular_olmo3.py`` builds ``Olmo3DecoderLayer`` as
``Olmo2DecoderLayer`` and ``Olmo3ForCausalLM`` as ``Olmo2ForCausalLM``: the same parameters on
the same dimensions; what differs is that three of four layers attend over ``sliding_window``
(4,096 tokens), which serving's KV cache follows (``Olmo3Config``'s default ``layer_types``:
layers 3, 7, 11, ... full).

The truth is transformers 5.24 + PEFT 0.21.2 on the meta device for OLMo-2-1124-7B
(``expected_hybrid.json``: 7,298,617,344 parameters, 39,976,960 LoRA r16), on whose dimensions
OLMo 3 7B is built; the config below is that one with OLMo 3's type and layer kinds.
tests/engine/test_newer_dense.py holds ``Olmo3ForCausalLM`` itself, built by transformers 5.24
on ``Olmo3Config``'s defaults (6,888,624,128 parameters), and the release's config.json, put
together from public partial copies (``olmo-3-1025-7b.json``, SOURCES.md), is held below."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.engine.architectures.approximate import shape_of
from app.engine.serving_kv import kv_layout
from app.engine.states import LoraSetup, lora_trainable_params

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
OLMO2: dict[str, Any] = json.loads((FIXTURES / "olmo-2-1124-7b.json").read_text())
EXPECTED = json.loads((FIXTURES / "expected_hybrid.json").read_text())["olmo-2-1124-7b"]
OLMO3: dict[str, Any] = {**OLMO2, "model_type": "olmo3", "architectures": ["Olmo3ForCausalLM"],
                         "sliding_window": 4096}


def test_olmo3_is_counted_exactly_as_transformers_builds_it() -> None:
    shape = shape_of(OLMO3)
    assert shape.approximation is None  # it was approximate: an unknown model type
    assert shape.total_params == EXPECTED["total"] == 7_298_617_344
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == EXPECTED["lora_r16"]


def test_olmo3_slides_three_layers_of_four() -> None:
    layout = kv_layout(OLMO3, shape_of(OLMO3))
    assert (layout.full_layers, layout.sliding_layers, layout.window) == (8, 24, 4096)
    listed = {**OLMO3, "layer_types": ["sliding_attention"] * 3 + ["full_attention"]
              + ["sliding_attention"] * 28}
    assert (kv_layout(listed).full_layers, kv_layout(listed).sliding_layers) == (1, 31)


def test_olmo3_7b_release_is_the_size_its_checkpoint_holds() -> None:
    """allenai/Olmo-3-1025-7B: OLMo 2 7B's dimensions with a 100,278-token vocabulary, untied:
    transformers 5.24 builds 7,298,011,136 parameters, the safetensors total a public fine-tune
    of the release declares; its layer_types slide three layers in four."""
    release = json.loads((FIXTURES / "olmo-3-1025-7b.json").read_text())
    truth = json.loads((FIXTURES / "expected_hybrid.json").read_text())["olmo-3-1025-7b"]
    shape = shape_of(release)
    assert shape.approximation is None
    assert shape.total_params == truth["total"] == 7_298_011_136
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == truth["lora_r16"]
    removed_rows = (EXPECTED["total"] - shape.total_params) // (2 * 4096)  # embedding, head
    assert removed_rows == 100_352 - 100_278
    layout = kv_layout(release, shape)
    assert (layout.full_layers, layout.sliding_layers, layout.window) == (8, 24, 4096)
