"""Parameter counts equal what transformers builds, to the parameter, for every seed model."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine import EngineError, parse_config
from app.engine.states import LoraSetup, lora_trainable_params
from tests.engine.reference import REFERENCE, seed_model_config, seed_model_index

MODELS = seed_model_index()


@pytest.mark.parametrize("entry", MODELS, ids=[m["slug"] for m in MODELS])
def test_counts_equal_transformers(entry: dict[str, Any]) -> None:
    shape = parse_config(seed_model_config(entry))
    assert shape.total_params == entry["total_params"]
    assert shape.split.embedding == entry["embedding_params"]
    assert shape.split.lm_head == entry["lm_head_params"]
    assert shape.split.norm == entry["norm_params"]
    assert shape.tied_embeddings is entry["tied_word_embeddings"]
    if entry.get("active_params") is not None:
        assert shape.active_params == entry["active_params"]
    else:
        assert shape.active_params == shape.total_params


@pytest.mark.parametrize("entry", MODELS, ids=[m["slug"] for m in MODELS])
def test_lora_r16_all_linear_equals_peft(entry: dict[str, Any]) -> None:
    """PEFT 0.21's count on transformers 5 by default (fused experts); one linear layer per
    expert under moe_lora="per-expert"; the two agree for dense models."""
    shape = parse_config(seed_model_config(entry))
    fused = lora_trainable_params(shape, LoraSetup(rank=16))
    per_expert = lora_trainable_params(shape, LoraSetup(rank=16, moe_lora="per-expert"))
    assert fused == entry["lora_r16_all_linear"]
    if "lora_r16_all_linear_per_expert_linear" in entry:
        assert per_expert == entry["lora_r16_all_linear_per_expert_linear"]
    elif not shape.is_moe:
        assert per_expert == fused


def test_reference_index_agrees_with_seed_index() -> None:
    import json

    reference = json.loads((REFERENCE / "models" / "index.json").read_text())["models"]
    seeded = {m["slug"]: m for m in MODELS}
    for entry in reference:
        assert seeded[entry["slug"]]["total_params"] == entry["total_params"]


def test_the_split_adds_up_and_biases_are_other() -> None:
    qwen = parse_config(seed_model_config(next(m for m in MODELS if m["slug"] == "qwen2.5-7b")))
    assert qwen.split.total == qwen.total_params
    # q, k and v carry biases in Qwen2: (h + 2 * kv) per layer
    assert qwen.split.other == 28 * (3584 + 2 * 4 * 128)


def test_mixture_of_experts_counts_every_expert_and_two_active() -> None:
    entry = next(m for m in MODELS if m["slug"] == "mixtral-8x7b")
    mixtral = parse_config(seed_model_config(entry))
    assert mixtral.num_experts == 8 and mixtral.experts_per_token == 2
    assert mixtral.active_params < mixtral.total_params / 3


BAD_CONFIGS = [
    ({}, "model_type"),
    ({"model_type": "bert"}, "model_type"),
    ({"model_type": "llama", "hidden_size": 64}, "num_attention_heads"),
    ({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
      "num_hidden_layers": 2, "intermediate_size": 128}, "vocab_size"),
    ({"model_type": "llama", "hidden_size": -64, "num_attention_heads": 4}, "hidden_size"),
    ({"model_type": "llama", "hidden_size": "64", "num_attention_heads": 4}, "hidden_size"),
    ({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
      "num_key_value_heads": 3}, "num_key_value_heads"),
    ({"model_type": "mixtral", "hidden_size": 64, "num_attention_heads": 4,
      "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 10}, "num_local_experts"),
    ({"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 10},
     "n_positions"),
    ({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
      "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 10,
      "tie_word_embeddings": "yes"}, "tie_word_embeddings"),
]


@pytest.mark.parametrize(("config", "field"), BAD_CONFIGS)
def test_a_config_the_engine_cannot_read_names_the_field(
    config: dict[str, Any], field: str
) -> None:
    with pytest.raises(EngineError) as caught:
        parse_config(config)
    assert caught.value.field == field


def _config(slug: str) -> dict[str, Any]:
    return seed_model_config({"config": f"{slug}.json"})


def test_gemma_2_soft_caps_scores_and_logits_and_builds_two_masks() -> None:
    gemma2 = parse_config(_config("gemma-2-9b"))
    assert gemma2.attention_softcap and gemma2.final_logit_softcap
    assert gemma2.mask_kinds == 2
    uncapped = parse_config(
        {**_config("gemma-2-9b"), "attn_logit_softcapping": None,
         "final_logit_softcapping": None}
    )
    assert not uncapped.attention_softcap and not uncapped.final_logit_softcap
    llama = parse_config(_config("llama-3.1-8b"))
    assert not llama.attention_softcap and not llama.final_logit_softcap
    assert llama.mask_kinds == 1


def test_a_soft_cap_that_is_not_a_number_names_the_field() -> None:
    with pytest.raises(EngineError, match="final_logit_softcapping"):
        parse_config({**_config("gemma-2-9b"), "final_logit_softcapping": "30"})
