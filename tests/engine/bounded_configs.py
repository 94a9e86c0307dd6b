"""Configs for every supported ``model_type`` with every numeric field at a chosen value.

Shared by the bound tests (``test_config_bounds.py``) and the benchmark that times the slowest
estimate at the bounds (``benchmarks/test_config_bounds_speed.py``).
"""

from __future__ import annotations

from typing import Any

from app.engine.shapes import FIELD_BOUNDS, SUPPORTED_MODEL_TYPES

# The fields each builder reads, besides model_type (see the builders in app/engine/shapes.py).
_COMMON = (
    "num_hidden_layers", "hidden_size", "intermediate_size", "vocab_size",
    "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings",
)
FIELDS: dict[str, tuple[str, ...]] = {
    model_type: _COMMON for model_type in SUPPORTED_MODEL_TYPES
}
FIELDS["qwen3_moe"] = (*_COMMON, "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                       "decoder_sparse_step")
FIELDS["mixtral"] = (*_COMMON, "num_local_experts", "num_experts_per_tok")
FIELDS["gpt2"] = ("n_layer", "n_embd", "n_inner", "vocab_size", "n_head", "n_positions")

# The smallest value each field may take in a config that parses (positions must hold the job).
SMALLEST: dict[str, int] = {name: 1 for name in FIELD_BOUNDS}
SMALLEST.update(max_position_embeddings=4096, n_positions=4096)

# Values of an ordinary mid-sized model (a Qwen3-30B-A3B-like shape): the baseline whose work
# one field at its bound must not change.
ORDINARY: dict[str, int] = dict(
    num_hidden_layers=48, n_layer=48, hidden_size=2048, n_embd=2048, intermediate_size=6144,
    n_inner=8192, moe_intermediate_size=768, vocab_size=151_936, num_attention_heads=32,
    n_head=32, num_key_value_heads=4, head_dim=128, num_experts=128, num_local_experts=128,
    num_experts_per_tok=8, decoder_sparse_step=1, max_position_embeddings=40_960,
    n_positions=40_960,
)


def config_at(model_type: str, values: dict[str, int]) -> dict[str, Any]:
    """A config of ``model_type`` with each of its fields at ``values[field]``.

    Kept consistent where the builders demand it: key/value heads divide the heads (the heads
    are raised to a multiple), GPT-2's width is a multiple of its heads, experts per token are
    at most the experts, and layer 0 of a Qwen3-MoE is listed as dense (``mlp_only_layers``)."""
    config: dict[str, Any] = {"model_type": model_type}
    for name in FIELDS[model_type]:
        config[name] = values[name]
    if "num_key_value_heads" in config:
        kv = config["num_key_value_heads"]
        config["num_attention_heads"] = kv * max(1, config["num_attention_heads"] // kv)
    if model_type == "gpt2":
        config["n_embd"] = config["n_head"] * max(1, config["n_embd"] // config["n_head"])
    experts = config.get("num_experts", config.get("num_local_experts"))
    if experts is not None:
        config["num_experts_per_tok"] = min(config["num_experts_per_tok"], experts)
    if model_type == "qwen3_moe":
        config["mlp_only_layers"] = [0]
    return config


def at_bounds(model_type: str) -> dict[str, Any]:
    """Every field at its upper bound."""
    return config_at(model_type, dict(FIELD_BOUNDS))


def one_at_bound(model_type: str, field: str) -> dict[str, Any]:
    """The ordinary config with ``field`` alone at its upper bound."""
    return config_at(model_type, {**ORDINARY, field: FIELD_BOUNDS[field]})
