"""An approximate shape for a model type no builder in this package knows.

Why: a new architecture appears every month, and a customer who pastes its config.json (or
names its repository) should get an answer, marked as approximate, rather than a refusal.
Nearly every decoder-only model since Llama keeps the same standard fields in its config.json
(``transformers``' ``PretrainedConfig`` conventions, followed by Llama, Mistral, Qwen, Gemma,
Granite, EXAONE, InternLM, OLMo, SmolLM and others): ``hidden_size``, ``num_hidden_layers``,
``num_attention_heads``, ``num_key_value_heads`` (absent: as many as the attention heads, the
``LlamaConfig`` default), ``intermediate_size`` and ``vocab_size``. From those the model is
counted as the Llama layout (:func:`llama.dense_swiglu`'s: separate q/k/v/o projections
without biases, a gated MLP, two RMSNorms per layer and a final one, ``head_dim`` as given or
``hidden_size / num_attention_heads``, the output head tied only when
``tie_word_embeddings`` says so). When the config names experts (``num_local_experts``,
``num_experts`` or ``n_routed_experts``, with ``num_experts_per_tok``), its sparse layers hold a
router and that many gated experts of ``moe_intermediate_size`` (absent: ``intermediate_size``,
which a config whose every layer is sparse may leave out), plus a shared expert where the config
declares one (``shared_expert_intermediate_size``, or ``n_shared_experts`` experts' width); the
dense layers are those ``first_k_dense_replace``, ``moe_layer_freq`` (a 0/1 list) or
``mlp_only_layers``/``decoder_sparse_step`` name (DeepSeek-V3, GLM-4.5-Air, MiMo,
Qwen3-VL-MoE under an unknown name come within 0.3 % of their exact counts).

What it knows is there but cannot count it names (``Approximation.missing``, one assumption
each): a vision or audio tower (``vision_config`` and the like), experts without
``num_experts_per_tok``, and an output head the config does not say is tied or not.

What it cannot see (biases, q/k norms, fused or extra projections, attention variants, layers
of other kinds) is why the answer is marked: the shape carries an
:class:`~app.engine.shapes.Approximation` with the model type and the fields it was counted
from, the estimate's ``fidelity`` is ``"approximate"`` and an assumption says so. For the
architectures the builders know the error is 0; for a Llama-like newcomer it is the few
parameters of what it adds (biases and norms: well under 1 %).

A multimodal config keeps its language model in ``text_config`` (or ``language_config``): a
field missing at the top is read there (the fields name the nested path). Only when a standard
field is missing from both is the config refused, naming the field (``approximate_missing``).
Every integer read is held to ``FIELD_BOUNDS`` as the builders' are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Final

from app.engine.architectures.kit import (
    Config,
    assemble,
    attention_dims,
    experts_per_token,
    gated_mlp,
    separate_attention,
    sparse_layer_count,
)
from app.engine.architectures.registry import parse_config
from app.engine.shapes import Approximation, LinearSpec, ModelShape, ShapeError

STANDARD_FIELDS: Final = (
    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",
)
"""The fields an approximate estimate cannot do without (``num_key_value_heads`` defaults to
the attention heads)."""

OPTIONAL_FIELDS: Final = (
    "num_key_value_heads", "head_dim", "tie_word_embeddings", "max_position_embeddings",
)
"""Fields read when present, and then listed among those used."""

EXPERT_FIELDS: Final = ("num_local_experts", "num_experts", "n_routed_experts")
"""Where a config gives its experts per layer (Mixtral's name, Qwen-MoE's, DeepSeek's)."""
SHARED_EXPERT_FIELDS: Final = ("shared_expert_intermediate_size",
                               "moe_shared_expert_intermediate_size")
"""A shared expert's width as Qwen-MoE and Nemotron-H name it (DeepSeek's ``n_shared_experts``
counts experts of ``moe_intermediate_size`` instead)."""
DENSE_LAYER_FIELDS: Final = ("first_k_dense_replace", "mlp_only_layers", "moe_layer_freq")
"""Which layers stay dense: DeepSeek's first k, Qwen-MoE's list, MiMo's per-layer 0/1 list."""

NESTED_CONFIGS: Final = ("text_config", "language_config")
"""Where a multimodal config keeps its language model's fields (most families, then
DeepSeek-VL2's and others' name); the first present is read."""
TOWER_FIELDS: Final = ("vision_config", "audio_config", "vision_tower", "mm_vision_tower")
"""Sections naming a vision or audio tower, which the approximation cannot count."""

MISSING_TOWER: Final = "tower"
MISSING_EXPERTS: Final = "experts"
MISSING_TIE: Final = "tie"
"""Parts the approximation knows are there but cannot account for (``Approximation.missing``):
a tower, experts it cannot route (no ``num_experts_per_tok``), or whether the output head is
tied (no ``tie_word_embeddings``: counted untied, the ``PretrainedConfig`` convention of most
families)."""

MAX_MODEL_TYPE_CHARS: Final = 64
"""Longest ``model_type`` an approximate result repeats (the text is the stranger's; real ones
are under 30 characters)."""


def shape_of(config: Mapping[str, object]) -> ModelShape:
    """The exact shape when a builder knows the model type, else :func:`approximate_shape`.

    Every other refusal of :func:`~app.engine.architectures.registry.parse_config` (a missing
    or bad field of a known type, no ``model_type`` at all) stands."""
    try:
        return parse_config(config)
    except ShapeError as error:
        if error.key != "model_type_unsupported":
            raise
    return approximate_shape(config)


def approximate_shape(config: Mapping[str, object]) -> ModelShape:
    """The Llama-layout count of ``config`` from its standard fields, marked approximate."""
    model_type = str(config.get("model_type", ""))[:MAX_MODEL_TYPE_CHARS]
    nested_name = next((name for name in NESTED_CONFIGS
                        if isinstance(config.get(name), Mapping)), NESTED_CONFIGS[0])
    nested = config.get(nested_name)
    inner: Mapping[str, object] = nested if isinstance(nested, Mapping) else {}
    merged = {**config, **{k: v for k, v in inner.items() if v is not None}}

    def path(name: str) -> str:
        return f"{nested_name}.{name}" if inner.get(name) is not None else name

    # A mixture of experts whose every layer is sparse may give no dense width: the experts'
    # width stands in for it (it sizes only dense layers, of which there are then none).
    borrowed = (merged.get("intermediate_size") is None
                and merged.get("moe_intermediate_size") is not None
                and any(merged.get(f) not in (None, 0) for f in EXPERT_FIELDS))
    if borrowed:
        merged["intermediate_size"] = merged["moe_intermediate_size"]
    for name in STANDARD_FIELDS:
        if merged.get(name) is None:
            raise ShapeError(name, "approximate_missing", value=f"'{model_type}'",
                             needed=", ".join(STANDARD_FIELDS))
    try:
        shape, used, missing = _count(Config(merged), model_type)
    except ShapeError as error:
        raise ShapeError(path(error.field), error.key, **error.params) from error
    fields = tuple(path(name) for name in (*STANDARD_FIELDS, *OPTIONAL_FIELDS, *used)
                   if merged.get(name) is not None
                   and not (borrowed and name == "intermediate_size"))
    if any(config.get(name) is not None for name in TOWER_FIELDS):
        missing = (MISSING_TOWER, *missing)
    return replace(shape, approximation=Approximation(model_type, fields, missing))


def _count(cfg: Config, model_type: str,
           ) -> tuple[ModelShape, tuple[str, ...], tuple[str, ...]]:
    """The shape, the expert fields read (none for a dense model) and the parts it could not
    account for (:data:`MISSING_EXPERTS`, :data:`MISSING_TIE`)."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    linears = separate_attention(att, layers, qkv_bias=False, o_bias=False)
    experts_field = next((f for f in EXPERT_FIELDS if cfg.raw.get(f) not in (None, 0)), None)
    used: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    experts = active = moe_intermediate = 0
    if experts_field is not None and cfg.raw.get("num_experts_per_tok") is not None:
        experts = cfg.integer(experts_field)
        active = experts_per_token(cfg, experts, experts_field)
        moe_intermediate = cfg.integer("moe_intermediate_size", default=intermediate)
        sparse, dense_field = _sparse_layers(cfg, layers)
        shared_field = next((f for f in SHARED_EXPERT_FIELDS if cfg.raw.get(f) not in (None, 0)),
                            None)
        shared = (cfg.integer(shared_field) if shared_field is not None
                  else cfg.count("n_shared_experts") * moe_intermediate)
        used = (experts_field, "num_experts_per_tok", "moe_intermediate_size",
                *((dense_field,) if dense_field else ()),
                *((shared_field,) if shared_field else ("n_shared_experts",) if shared else ()))
        if sparse:
            linears.append(LinearSpec("gate", "router", att.hidden, experts, sparse))
            linears += gated_mlp(att.hidden, moe_intermediate, sparse, copies=experts,
                                  active=active)
        if shared and sparse:
            linears += gated_mlp(att.hidden, shared, sparse)
        if layers - sparse:
            linears += gated_mlp(att.hidden, intermediate, layers - sparse)
    else:
        if experts_field is not None:
            missing = (MISSING_EXPERTS,)
        linears += gated_mlp(att.hidden, intermediate, layers)
    if cfg.raw.get("tie_word_embeddings") is None:
        missing = (*missing, MISSING_TIE)
    shape = assemble(
        cfg, model_type=model_type, att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=(2 * layers + 1) * att.hidden, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", False), num_experts=experts,
        experts_per_token=active, moe_intermediate=moe_intermediate,
    )
    return shape, used, missing


def _sparse_layers(cfg: Config, layers: int) -> tuple[int, str | None]:
    """Layers holding experts, and the field that said which are dense (None: every layer):
    DeepSeek's ``first_k_dense_replace``, Qwen-MoE's ``mlp_only_layers`` (with
    ``decoder_sparse_step``), or a per-layer 0/1 ``moe_layer_freq`` list (MiMo)."""
    if cfg.raw.get("first_k_dense_replace") is not None:
        first = 0 if cfg.raw.get("first_k_dense_replace") == 0 \
            else cfg.integer("first_k_dense_replace")
        return max(layers - first, 0), "first_k_dense_replace"
    freq = cfg.raw.get("moe_layer_freq")
    if isinstance(freq, list):
        if len(freq) != layers or not set(freq) <= {0, 1}:
            raise ShapeError("moe_layer_freq", "layer_kinds", layers=layers, kinds="0, 1")
        return freq.count(1), "moe_layer_freq"
    dense = cfg.layer_list("mlp_only_layers", layers)
    step = cfg.integer("decoder_sparse_step", default=1)
    if dense or step != 1:
        return sparse_layer_count(layers, step, dense), "mlp_only_layers"
    return layers, None
