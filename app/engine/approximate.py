"""An approximate shape for a model type no builder in ``shapes.py`` knows.

Why: a new architecture appears every month, and a customer who pastes its config.json (or
names its repository) should get an answer, marked as approximate, rather than a refusal.
Nearly every decoder-only model since Llama keeps the same standard fields in its config.json
(``transformers``' ``PretrainedConfig`` conventions, followed by Llama, Mistral, Qwen, Gemma,
Granite, EXAONE, InternLM, OLMo, SmolLM and others): ``hidden_size``, ``num_hidden_layers``,
``num_attention_heads``, ``num_key_value_heads`` (absent: as many as the attention heads, the
``LlamaConfig`` default), ``intermediate_size`` and ``vocab_size``. From those the model is
counted as the Llama layout (:func:`shapes._dense_swiglu`'s: separate q/k/v/o projections
without biases, a gated MLP, two RMSNorms per layer and a final one, ``head_dim`` as given or
``hidden_size / num_attention_heads``, the output head tied only when
``tie_word_embeddings`` says so). When the config names experts (``num_local_experts`` or
``num_experts`` with ``num_experts_per_tok``), every layer holds a router and that many gated
experts of ``moe_intermediate_size`` (absent: ``intermediate_size``), as Mixtral does.

What it cannot see (biases, q/k norms, fused or extra projections, attention variants, layers
of other kinds) is why the answer is marked: the shape carries an
:class:`~app.engine.shapes.Approximation` with the model type and the fields it was counted
from, the estimate's ``fidelity`` is ``"approximate"`` and an assumption says so. For the
architectures the builders know the error is 0; for a Llama-like newcomer it is the few
parameters of what it adds (biases and norms: well under 1 %).

A multimodal config keeps its language model in ``text_config``: a field missing at the top is
read there (the fields name the nested path). Only when a standard field is missing from both is
the config refused, naming the field (``approximate_missing``). Every integer read is held to
``FIELD_BOUNDS`` as the builders' are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Final

from app.engine.model_types import parse_config
from app.engine.shapes import (
    Approximation,
    LinearSpec,
    ModelShape,
    ShapeError,
    _assemble,
    _attention_dims,
    _Config,
    _experts_per_token,
    _gated_mlp,
    _separate_attention,
)

STANDARD_FIELDS: Final = (
    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",
)
"""The fields an approximate estimate cannot do without (``num_key_value_heads`` defaults to
the attention heads)."""

OPTIONAL_FIELDS: Final = (
    "num_key_value_heads", "head_dim", "tie_word_embeddings", "max_position_embeddings",
)
"""Fields read when present, and then listed among those used."""

EXPERT_FIELDS: Final = ("num_local_experts", "num_experts")
"""Where a config gives its experts per layer (Mixtral's name, then Qwen-MoE's)."""

NESTED_CONFIG: Final = "text_config"
"""Where a multimodal config keeps its language model's fields."""

MAX_MODEL_TYPE_CHARS: Final = 64
"""Longest ``model_type`` an approximate result repeats (the text is the stranger's; real ones
are under 30 characters)."""


def shape_of(config: Mapping[str, object]) -> ModelShape:
    """The exact shape when a builder knows the model type, else :func:`approximate_shape`.

    Every other refusal of :func:`~app.engine.model_types.parse_config` (a missing or bad field of a
    known type, no ``model_type`` at all) stands."""
    try:
        return parse_config(config)
    except ShapeError as error:
        if error.key != "model_type_unsupported":
            raise
    return approximate_shape(config)


def approximate_shape(config: Mapping[str, object]) -> ModelShape:
    """The Llama-layout count of ``config`` from its standard fields, marked approximate."""
    model_type = str(config.get("model_type", ""))[:MAX_MODEL_TYPE_CHARS]
    nested = config.get(NESTED_CONFIG)
    inner: Mapping[str, object] = nested if isinstance(nested, Mapping) else {}
    merged = {**config, **{k: v for k, v in inner.items() if v is not None}}

    def path(name: str) -> str:
        return f"{NESTED_CONFIG}.{name}" if inner.get(name) is not None else name

    for name in STANDARD_FIELDS:
        if merged.get(name) is None:
            raise ShapeError(name, "approximate_missing", value=f"'{model_type}'",
                             needed=", ".join(STANDARD_FIELDS))
    try:
        shape, used = _count(_Config(merged), model_type)
    except ShapeError as error:
        raise ShapeError(path(error.field), error.key, **error.params) from error
    fields = tuple(path(name) for name in (*STANDARD_FIELDS, *OPTIONAL_FIELDS, *used)
                   if merged.get(name) is not None)
    return replace(shape, approximation=Approximation(model_type, fields))


def _count(cfg: _Config, model_type: str) -> tuple[ModelShape, tuple[str, ...]]:
    """The shape, and the expert fields read (none for a dense model)."""
    att = _attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    linears = _separate_attention(att, layers, qkv_bias=False, o_bias=False)
    experts_field = next((f for f in EXPERT_FIELDS if cfg.raw.get(f) not in (None, 0)), None)
    used: tuple[str, ...] = ()
    experts = active = moe_intermediate = 0
    if experts_field is not None and cfg.raw.get("num_experts_per_tok") is not None:
        experts = cfg.integer(experts_field)
        active = _experts_per_token(cfg, experts, experts_field)
        moe_intermediate = cfg.integer("moe_intermediate_size", default=intermediate)
        used = (experts_field, "num_experts_per_tok", "moe_intermediate_size")
        linears.append(LinearSpec("gate", "router", att.hidden, experts, layers))
        linears += _gated_mlp(att.hidden, moe_intermediate, layers, copies=experts,
                              active=active)
    else:
        linears += _gated_mlp(att.hidden, intermediate, layers)
    shape = _assemble(
        cfg, model_type=model_type, att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=(2 * layers + 1) * att.hidden, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", False), num_experts=experts,
        experts_per_token=active, moe_intermediate=moe_intermediate,
    )
    return shape, used
