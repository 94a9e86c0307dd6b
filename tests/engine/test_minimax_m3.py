"""MiniMax-M3 (``minimax_m3_vl``, ``minimax_m3_vl_text``, ``minimax_m3``; issue 29, point 5) is
counted as transformers 5.24 builds it, not approximated.

nvidia/MiniMax-M3-NVFP4's config.json (``minimax_m3_vl``) was read since issue 29's point 1 but
went the approximate path: 425,440,794,624 parameters against transformers' 426,174,565,632 in
the language model, the vision tower left out. The truth is ``tools/moe_counts.py`` and
``tools/model_counts.py`` on the meta device (transformers 5.24.0, PEFT 0.21.2:
``expected_moe.json``, ``expected_hybrid.json``; the figures are held for every real config
by tests/engine/test_moe_configs.py and tests/engine/test_hf_configs.py). The flat text config
MiniMaxAI/MiniMax-M3 names (``minimax_m3``, ``minimax-m3.json``) holds the same model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine.architectures.approximate import shape_of
from app.engine.errors import EngineError
from app.engine.states import LoraSetup, lora_trainable_params

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
MOE: dict[str, Any] = json.loads((CONFIGS / "expected_moe.json").read_text())["models"]
HYBRID: dict[str, Any] = json.loads((CONFIGS / "expected_hybrid.json").read_text())


def _config(slug: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / f"{slug}.json").read_text())
    return config


def _text(**changes: object) -> dict[str, Any]:
    """The export's text_config as the language model alone, with ``changes``."""
    return {**_config("minimax-m3-nvfp4")["text_config"], "model_type": "minimax_m3_vl_text",
            **changes}


@pytest.mark.parametrize("slug", ["minimax-m3-nvfp4", "minimax-m3"])
def test_minimax_m3_is_counted_exactly_not_approximated(slug: str) -> None:
    shape = shape_of(_config(slug))
    expected = MOE[slug]
    assert shape.approximation is None
    assert (shape.total_params, shape.active_params) == (expected["total"], expected["active"])
    assert shape.total_params == 426_174_565_632
    assert shape.tower_params == expected.get("tower", 0)


def test_the_checkpoint_counts_its_vision_tower_and_projector_beside_it() -> None:
    """transformers' whole checkpoint: 427,040,132,864, of it 865,567,232 the CLIP-like tower
    (Conv3d patches, 32 layers of 1,280) and the projector merging 2 x 2 patches."""
    shape = shape_of(_config("minimax-m3-nvfp4"))
    entry = HYBRID["minimax-m3-nvfp4"]
    assert shape.tower_params == entry["tower"] == 865_567_232
    assert shape.total_params + shape.tower_params == entry["total"]


def test_peft_adapts_the_linear_layers_and_no_expert() -> None:
    """PEFT 0.21's conversion table lacks the type: all-linear adapts attention, the indexer and
    the dense and shared MLPs (74,065,920 at r16), not the router nor the fused experts; one
    adapter per expert adds those."""
    shape = shape_of(_config("minimax-m3-nvfp4"))
    fused = lora_trainable_params(shape, LoraSetup(rank=16))
    per_expert = lora_trainable_params(shape, LoraSetup(rank=16, moe_lora="per-expert"))
    assert fused == MOE["minimax-m3-nvfp4"]["lora_r16"] == 74_065_920
    assert per_expert == MOE["minimax-m3-nvfp4"]["lora_r16_per_expert"]
    routers = 57 * 16 * (6144 + 128)
    experts = 57 * 128 * 16 * (2 * (6144 + 3072) + (3072 + 6144))
    assert per_expert - fused == routers + experts


def test_the_indexer_is_on_the_sparse_attention_layers_only() -> None:
    """sparse_attention_freq marks 57 of the 60 layers; transformers builds the lightning
    indexer (q_proj to 4 heads of 128, k_proj to one, an RMSNorm each) there alone: without
    the list no layer has one (425,950,417,920 in transformers 5.24)."""
    text = _text()
    with_indexer = shape_of(text).total_params
    without = {k: v for k, v in text.items() if k != "sparse_attention_config"}
    assert with_indexer - shape_of(without).total_params == 57 * (6144 * (4 * 128 + 128) + 256)
    assert shape_of(without).total_params == 425_950_417_920


def test_listed_layer_kinds_are_read_before_the_releases_flags() -> None:
    """``layer_types`` and ``mlp_layer_types`` (what MiniMaxM3VLTextConfig keeps) win over the
    release's ``sparse_attention_freq`` and ``moe_layer_freq``."""
    listed = _text(layer_types=["full_attention"] * 60, mlp_layer_types=["sparse"] * 60)
    flags = _text(moe_layer_freq=[1] * 60,
                  sparse_attention_config={"sparse_attention_freq": [0] * 60})
    assert shape_of(listed).total_params == shape_of(flags).total_params
    assert shape_of(listed).num_experts == 128


@pytest.mark.parametrize(("changes", "field"), [
    ({"moe_layer_freq": [0, 1] * 29}, "moe_layer_freq"),
    ({"moe_layer_freq": [2] * 60}, "moe_layer_freq"),
    ({"mlp_layer_types": ["dense", "moe"] * 30}, "mlp_layer_types"),
    ({"sparse_attention_config": {"sparse_attention_freq": [1] * 59}}, "sparse_attention_freq"),
    ({"layer_types": ["sliding_attention"] * 60}, "layer_types"),
])
def test_a_layer_list_that_does_not_name_every_layer_is_refused_naming_it(
    changes: dict[str, object], field: str,
) -> None:
    with pytest.raises(EngineError) as caught:
        shape_of(_text(**changes))
    assert caught.value.field == field
