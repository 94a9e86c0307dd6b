"""The engine's refusals in the customer's language, beside the control they are about.

The engine raises an error as data (a field, a key in :data:`app.engine.errors.ERROR_TEXTS`
and the values its wording takes); the API and the CLI say the engine's English reason, the
page says the text below for the key, translated like the engine's assumptions and warnings
(``result_view.ASSUMPTION_LABELS``). A test holds this table to the engine's keys.
"""

from __future__ import annotations

from typing import Final

from app.errors import DomainError
from app.html.forms import N_, FieldErrors
from app.html.hub_errors import HUB_ERROR_LABELS

ENGINE_ERROR_LABELS: Final[dict[str, str]] = {
    "not_one_of": N_("Choose one of: %(allowed)s."),
    "whole_number": N_("Enter a whole number of at least 1."),
    "at_most": N_("Enter a number of at most %(max)s."),
    "four_bit_full": N_(
        "A 4-bit base cannot be fully fine-tuned: bitsandbytes trains only adapters on 4-bit "
        "weights. Choose QLoRA, or keep the base in bf16."
    ),
    "quantised_lora": N_(
        "A 4-bit base is trained with QLoRA, not LoRA. Choose QLoRA, or keep the base in bf16."
    ),
    "beyond_positions": N_("%(seq_len)s tokens are more than this model's %(max_positions)s "
                           "positions."),
    "context_beyond_positions": N_("A context of %(context)s tokens is more than this model's "
                                   "maximum of %(max_positions)s tokens."),
    "dropout_range": N_("Enter a dropout of at least 0 and below 1."),
    "offload_needs_zero3": N_("Offloading the weights needs ZeRO-3 sharding."),
    "fsdp_needs_zero3": N_("FSDP is sized for ZeRO-3 (full shard) only; choose ZeRO-3 "
                           "sharding, or DeepSpeed."),
    "qv_fused": N_("This %(model_type)s model computes q, k and v in one fused layer "
                   "(%(fused)s); an adapter wraps a whole layer, so q and v alone cannot be "
                   "adapted. Choose attention (the fused layer and the output projection) "
                   "instead."),
    "no_targets": N_("Name at least one layer."),
    "unknown_targets": N_("%(unknown)s: not in this model (its linear layers: %(available)s)."),
    "at_least_one": N_("Enter a number of at least 1."),
    "no_adapters": N_("A full fine-tune has no adapters; its weights follow the training "
                      "precision."),
    "no_frozen_base": N_("A full fine-tune has no frozen base; its weights follow the training "
                         "precision."),
    "pure_bf16_adapters": N_("Pure bf16 keeps the adapters in bf16 as well; choose mixed "
                             "precision (amp) for fp32 adapters."),
    "pure_bf16_base": N_("Pure bf16 keeps the base in bf16; choose mixed precision (amp) for an "
                         "fp32 base."),
    "bnb_needs_qlora": N_("The bitsandbytes release matters only for QLoRA's 4-bit layers; "
                          "choose QLoRA, or the current release."),
    "litgpt_quantised_mixed": N_("LitGPT does not quantise to 4 bits under mixed precision; its "
                                 "QLoRA trains in pure bf16: choose pure bf16."),
    "layer_types_length": N_("%(field)s: expected one entry per layer (%(layers)s)."),
    "layer_type_unknown": N_("%(field)s: %(value)s is not a layer kind we know (%(kinds)s)."),
    "format_needs_card": N_("%(format)s weights do not run there: llama.cpp takes GGUF files "
                            "or 16-bit weights."),
    "utilization_range": N_("Enter a fraction above 0 and at most 1."),
    "speed_floor_range": N_("Enter a number of tokens per second from 0 to %(max)s."),
    "config_not_object": N_("A config.json is a JSON object ({...})."),
    "config_missing": N_("%(field)s is missing from the config.json."),
    "model_type_unsupported": N_("The model type %(value)s is not supported (supported: "
                                 "%(supported)s)."),
    "approximate_missing": N_("%(field)s is missing from the config.json: the model type "
                              "%(value)s is not one we count exactly, and an approximate "
                              "estimate needs the standard decoder fields (%(needed)s)."),
    "positive_or_null": N_("%(field)s: expected a positive number or null, got %(value)s."),
    "true_or_false": N_("%(field)s: expected true or false, got %(value)s."),
    "layer_list_length": N_("%(field)s: expected a list of at most %(layers)s layer numbers."),
    "layer_indices": N_("%(field)s: expected distinct layer numbers from 0 to %(last)s."),
    "layer_kinds": N_("%(field)s: expected a list of %(layers)s entries, each one of %(kinds)s."),
    "heads_per_layer": N_("%(field)s: expected a list of %(layers)s head counts, each a multiple "
                          "of num_key_value_heads and at most %(bound)s."),
    "positive_integer": N_("%(field)s: expected a positive whole number, got %(value)s."),
    "above_bound": N_("%(field)s: at most %(bound)s is supported, got %(value)s."),
    "too_many_active_experts": N_("%(field)s: %(active)s is more than the %(experts)s experts "
                                  "(%(experts_field)s)."),
    "head_dim_indivisible": N_("head_dim is missing and hidden_size is not divisible by the "
                               "number of heads."),
    "kv_heads_divide": N_("num_key_value_heads must divide num_attention_heads."),
    "heads_divide_embd": N_("n_head must divide n_embd."),
    "compute_capability_format": N_("Expected a compute capability like 8.9, got %(value)s."),
}
"""The page's wording of each engine error (``ERROR_TEXTS``), by key (English msgids); the
config.json errors also take ``field``, the config field the engine names."""


def add(errors: FieldErrors, field: str, error: DomainError) -> None:
    """Put ``error`` beside the form ``field``: the engine's key translated, with its values
    (``field`` among them: the engine's own field, say a config.json's); a service error
    without a key keeps its reason."""
    label = ENGINE_ERROR_LABELS.get(error.key) or HUB_ERROR_LABELS.get(error.key)
    if label is None:
        errors.add(field, error.reason)
        return
    errors.add(field, label, **{"field": error.field, **error.params})
