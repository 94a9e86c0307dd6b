"""The engine's one error type: which input field was wrong, and why, as data.

The raiser names the field, a key into :data:`ERROR_TEXTS` and the values its wording takes,
so no surface has to take a message apart again: the API and the CLI say :attr:`reason` (the
English wording below), pages translate by :attr:`key` (``app/web/engine_errors.py`` holds the
German and English texts; a test holds the two tables to the same keys), exactly as the
engine's assumptions are translated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

ErrorParam = str | int
"""A value an error's wording takes. Numbers stay numbers, so each surface formats them its
own way: the English reason with thousands separators (``1,024``), pages as the locale does."""

ERROR_TEXTS: Final[Mapping[str, str]] = {
    # the job (app/engine/job.py, app/engine/states.py)
    "not_one_of": "%(value)s is not one of %(allowed)s",
    "whole_number": "must be a whole number of at least 1",
    "at_most": "must be at most %(max)s",
    "four_bit_full": "a 4-bit base cannot be fully fine-tuned; bitsandbytes trains only extra "
    "parameters (adapters) on 4-bit weights. Use method qlora.",
    "quantised_lora": "a quantised base is method qlora, not lora",
    "beyond_positions": "%(seq_len)s is beyond this model's %(max_positions)s positions",
    "context_beyond_positions": "a context of %(context)s tokens is beyond this model's "
    "maximum of %(max_positions)s tokens",
    "dropout_range": "must be at least 0 and below 1",
    "offload_needs_zero3": "parameter offload needs sharding zero3",
    "fsdp_needs_zero3": "sharding_impl fsdp is modelled for sharding zero3 (FULL_SHARD) only; "
    "choose sharding zero3, or sharding_impl deepspeed",
    "qv_fused": "'qv' needs separate q_proj and v_proj modules; this %(model_type)s model "
    "computes q, k and v in one fused layer (%(fused)s), and PEFT wraps whole modules, so it "
    "cannot adapt q and v alone. Use 'attention' (the fused layer and o_proj) instead",
    "no_targets": "no module names given",
    "unknown_targets": "%(unknown)s not in this model (its linear layers: %(available)s; "
    "presets: %(presets)s)",
    "at_least_one": "must be at least 1",
    "no_adapters": "a full fine-tune has no adapters; the weights' dtype follows precision",
    "no_frozen_base": "a full fine-tune has no frozen base; the weights' dtype follows precision",
    "pure_bf16_adapters": "pure bf16 (precision bf16) holds the adapters in bf16 too; choose "
    "precision amp for fp32 adapters",
    "pure_bf16_base": "pure bf16 (precision bf16) holds the base in bf16; choose precision amp "
    "for an fp32 base",
    "bnb_needs_qlora": "bitsandbytes 0.41 matters only for its 4-bit layers; choose method "
    "qlora, or bnb_version current",
    "litgpt_quantised_mixed": "LitGPT refuses 4-bit quantisation with mixed precision "
    "(\"Quantization and mixed precision is not supported.\"); its QLoRA trains in pure bf16: "
    "choose precision bf16",
    # the model's config.json (app/engine/architectures/)
    "config_not_object": "expected a JSON object",
    "config_missing": "missing from the config",
    "model_type_unsupported": "%(value)s is not supported (supported: %(supported)s)",
    "approximate_missing": "missing from the config: %(value)s is not a model type the engine "
    "counts exactly, and an approximate estimate needs the standard decoder fields "
    "(%(needed)s)",
    "positive_or_null": "expected a positive number or null, got %(value)s",
    "true_or_false": "expected true or false, got %(value)s",
    "layer_list_length": "expected a list of at most %(layers)s layer indices",
    "layer_indices": "expected distinct layer indices from 0 to %(last)s",
    "layer_kinds": "expected a list of %(layers)s entries, each one of %(kinds)s",
    "heads_per_layer": "expected a list of %(layers)s head counts, each a multiple of "
    "num_key_value_heads and at most %(bound)s",
    "positive_integer": "expected a positive integer, got %(value)s",
    "above_bound": "at most %(bound)s is supported, got %(value)s",
    "too_many_active_experts": "%(active)s is more than the %(experts)s experts "
    "(%(experts_field)s)",
    "head_dim_indivisible": "missing and hidden_size is not divisible by the heads",
    "kv_heads_divide": "must divide num_attention_heads",
    "heads_divide_embd": "must divide n_embd",
    # a config's attention layout (app/engine/serving_kv.py)
    "layer_types_length": "expected one entry per layer (%(layers)s)",
    "layer_type_unknown": "%(value)s is not a layer kind the engine knows (%(kinds)s)",
    # a serving job (app/engine/serving.py)
    "format_needs_card": "%(format)s needs %(needs)s",
    "utilization_range": "must be above 0 and at most 1",
    "speed_floor_range": "must be a number from 0 to %(max)s tokens per second",
    # a card (app/engine/capabilities.py)
    "compute_capability_format": "expected 'major.minor', got %(value)s",
}
"""The English wording of each engine error (the API's and the CLI's); pages translate by key."""


class EngineError(ValueError):
    """Bad input to the engine: the input ``field``, the error's ``key`` in :data:`ERROR_TEXTS`
    and the ``params`` its wording takes. Every surface points at the field (422 on the API, an
    inline message on the page, exit 2 in the CLI) and words the key its own way."""

    def __init__(self, field: str, key: str, **params: ErrorParam) -> None:
        self.field = field
        self.key = key
        self.params: Mapping[str, ErrorParam] = params
        english = {name: f"{value:,}" if isinstance(value, int) else value
                   for name, value in params.items()}
        self.reason = ERROR_TEXTS[key] % english if english else ERROR_TEXTS[key]
        super().__init__(f"{field}: {self.reason}")
