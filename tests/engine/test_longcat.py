"""LongCat-Flash (``longcat_flash``) counted as its release holds it and transformers 5.25
builds it, with the zero-computation (identity) experts' share of a token's picks.

The truth is ``tests/fixtures/hf_configs/expected_longcat.json``: transformers 5.25 and PEFT
0.21 on the meta device (``tools/moe_counts.py``), and transformers 5.24's count of the same
config, which also built a ``gate_up_proj`` for every identity expert."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.engine import parse_config
from app.engine.serving_kv import kv_layout
from app.engine.states import LoraSetup, lora_trainable_params

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
CONFIG: dict[str, Any] = json.loads((CONFIGS / "longcat-flash-chat.json").read_text())
EXPECTED: dict[str, Any] = json.loads(
    (CONFIGS / "expected_longcat.json").read_text())["models"]["longcat-flash-chat"]

HIDDEN, EXPERT_WIDTH, DECODER_LAYERS = 6144, 2048, 28
ROUTED, IDENTITY, PICKS = 512, 256, 12
ONE_EXPERT_EVERY_LAYER = DECODER_LAYERS * 3 * HIDDEN * EXPERT_WIDTH


def test_the_total_is_the_release_and_transformers_5_25() -> None:
    shape = parse_config(CONFIG)
    assert shape.model_type == "longcat_flash"
    assert shape.total_params == EXPECTED["total"] == 560_664_958_976
    assert shape.split.embedding == EXPECTED["embedding"]
    assert shape.split.lm_head == EXPECTED["lm_head"]
    assert shape.split.norm == EXPECTED["norm"]


def test_transformers_5_24_held_exactly_the_identity_experts_gate_up_more() -> None:
    """What a run on transformers 5.17-5.24 allocates beyond the release: one gate/up tensor
    (2 x width rows of hidden) per identity expert and decoder layer, nothing else."""
    identity_gate_up = IDENTITY * 2 * EXPERT_WIDTH * HIDDEN * DECODER_LAYERS
    assert EXPECTED["total_transformers_5_24"] - identity_gate_up == parse_config(
        CONFIG).total_params


def test_active_parameters_count_the_real_experts_of_an_average_token() -> None:
    """12 picks over 512 real and 256 identity experts land on 8 real ones on average; the
    tool's ``active`` is the model without any expert."""
    shape = parse_config(CONFIG)
    real = PICKS * ROUTED // (ROUTED + IDENTITY)
    assert real == 8
    assert shape.active_params == EXPECTED["active"] + real * ONE_EXPERT_EVERY_LAYER
    # The model card's 18.6 B to 31.3 B activated: without the input embedding, cut to 0.1 B.
    without_embedding = EXPECTED["active"] - EXPECTED["embedding"]
    assert int(without_embedding / 1e8) == 186
    assert int((without_embedding + PICKS * ONE_EXPERT_EVERY_LAYER) / 1e8) == 313


def test_lora_r16_equals_peft_under_both_conventions() -> None:
    shape = parse_config(CONFIG)
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == EXPECTED["lora_r16"]
    per_expert = LoraSetup(rank=16, moe_lora="per-expert")
    assert lora_trainable_params(shape, per_expert) == EXPECTED["lora_r16_per_expert"]


def test_qlora_packs_the_linear_layers_and_leaves_the_fused_experts_16_bit() -> None:
    shape = parse_config(CONFIG)
    packed = sum(s.weight_params for s in shape.linears if s.packed_4bit)
    experts = sum(s.weight_params for s in shape.linears if s.copies > 1)
    assert experts == ROUTED * ONE_EXPERT_EVERY_LAYER
    assert packed + experts == shape.split.linear
    router = next(s for s in shape.linears if s.role == "router")
    assert (router.out_features, router.packed_4bit) == (ROUTED + IDENTITY, True)


def test_the_kv_cache_holds_one_latent_per_attention_sublayer() -> None:
    """Two MLA sublayers in each of 28 decoder layers, 512 + 64 values each, bf16: with or
    without the shape, every tensor-parallel degree (MLA's latent is replicated)."""
    shape = parse_config(CONFIG)
    for layout in (kv_layout(CONFIG), kv_layout(CONFIG, shape)):
        assert (layout.full_layers, layout.mla_latent) == (2 * DECODER_LAYERS, 512 + 64)
        assert layout.bytes_per_token(8, 2) == 56 * 576 * 2
