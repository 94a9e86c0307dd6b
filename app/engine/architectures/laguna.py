"""poolside's Laguna (``laguna``).

Mirrors transformers 5's ``modeling_laguna`` (transformers 5.24.0, counted on the meta device by
``tools/newer_moe_counts.py`` with PEFT 0.21.2):

* attention with ``attention_bias`` on q/k/v/o, an RMSNorm over each query and key head, and
  ``g_proj`` (hidden -> one softplus gate per head, or per head channel with ``gating``
  ``"per-element"``; no bias); a layer may have its own query heads
  (``num_attention_heads_per_layer``; keys and values always ``num_key_value_heads``);
* an MLP per layer as ``mlp_layer_types`` lists them (``LagunaConfig``'s default: the first
  dense, the rest sparse): a SwiGLU MLP of ``intermediate_size``, or a router (an
  ``nn.Parameter``, experts x hidden, with a non-trained score correction, one per expert, also
  a parameter), fused experts of ``moe_intermediate_size`` (``num_experts_per_tok`` a token) and
  a SwiGLU shared expert of ``shared_expert_intermediate_size``;
* two RMSNorms a layer, one after the last; ``lm_head`` untied unless the config ties it.

LoRA ``all-linear`` (PEFT 0.21.2): PEFT's conversion table has no entry for this type, so it
adapts every ``nn.Linear`` (attention and its gate, the dense and shared MLPs) and neither the
router nor the fused experts (adapted under the per-expert convention): 21,043,200 parameters at
r16 with the class defaults (tests/fixtures/hf_configs/expected_newer_moe.json).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Final

from app.engine.architectures.kit import (
    MAX_HEADS,
    Attention,
    Config,
    attention_dims,
    experts_per_token,
    fused_experts,
)
from app.engine.architectures.moe import Moe, layer_kinds, moe_shape, swiglu_mlp
from app.engine.architectures.multimodal import with_defaults
from app.engine.shapes import LinearSpec, ModelShape, ShapeError

LAGUNA_DEFAULTS: Final[Mapping[str, object]] = {
    "vocab_size": 100_352, "hidden_size": 2048, "intermediate_size": 8192,
    "num_hidden_layers": 40, "num_attention_heads": 48, "num_key_value_heads": 8,
    "head_dim": 128, "max_position_embeddings": 131_072, "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512, "num_experts_per_tok": 8, "num_experts": 256,
}
"""``LagunaConfig`` defaults (transformers 5.24) of the sizes a config may leave out."""

PER_ELEMENT_GATE: Final = "per-element"
"""``LagunaConfig.gating``: one gate per head channel; ``True`` or ``"per-head"`` one per head."""


def heads_per_layer(cfg: Config, att: Attention, layers: int) -> Counter[int]:
    """How many layers have each query head count: ``num_attention_heads_per_layer`` (one
    positive multiple of ``num_key_value_heads`` up to :data:`MAX_HEADS` a layer), else
    ``num_attention_heads`` everywhere. Counted with ``Counter`` over a list the layer bound
    caps."""
    listed = cfg.raw.get("num_attention_heads_per_layer")
    if listed is None:
        return Counter({att.heads: layers})
    if (not isinstance(listed, list) or len(listed) != layers
            or not all(type(h) is int and 0 < h <= MAX_HEADS and not h % att.kv_heads
                       for h in listed)):
        raise ShapeError("num_attention_heads_per_layer", "heads_per_layer", layers=layers,
                         bound=MAX_HEADS)
    return Counter(listed)


def gated_attention(att: Attention, layers: int, heads: Counter[int], *, bias: bool,
                    per_element: bool) -> list[LinearSpec]:
    """q/k/v/o (``bias`` on each) and the output gate ``g_proj`` (no bias; one per head, or
    one per head channel where ``per_element``), per query-head count: ``heads`` says how many
    of the ``layers`` have each (Laguna's and Step-3.7-Flash's attention)."""
    kv_width = att.kv_heads * att.head_dim
    specs = [LinearSpec("k_proj", "k", att.hidden, kv_width, layers, bias=bias),
             LinearSpec("v_proj", "v", att.hidden, kv_width, layers, bias=bias)]
    for count_heads, count in sorted(heads.items()):
        width = count_heads * att.head_dim
        specs += [LinearSpec("q_proj", "q", att.hidden, width, count, bias=bias),
                  LinearSpec("o_proj", "o", width, att.hidden, count, bias=bias),
                  LinearSpec("g_proj", "gate", att.hidden,
                             width if per_element else count_heads, count)]
    return specs


def _sparse_layers(cfg: Config, layers: int) -> int:
    """Layers whose MLP is sparse: ``mlp_layer_types``, else all but the first."""
    kinds = cfg.raw.get("mlp_layer_types")
    if kinds is None:
        return layers - 1
    return layer_kinds("mlp_layer_types", kinds, layers, ("dense", "sparse"))


def laguna(config: Config) -> ModelShape:
    """Laguna (module docstring)."""
    cfg = with_defaults(config.raw, LAGUNA_DEFAULTS)
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    sparse = _sparse_layers(cfg, layers)
    experts = cfg.integer("num_experts")
    moe = Moe(experts, experts_per_token(cfg, experts, "num_experts"),
              cfg.integer("moe_intermediate_size"), sparse) if sparse else Moe(0, 0, 0, 0)
    intermediate = cfg.integer("intermediate_size")
    linears = gated_attention(att, layers, heads_per_layer(cfg, att, layers),
                              bias=cfg.flag("attention_bias", False),
                              per_element=cfg.raw.get("gating") == PER_ELEMENT_GATE)
    linears += fused_experts(att.hidden, moe.width, sparse, experts, moe.active,
                             peft_fused=False, router_target=False)
    linears += swiglu_mlp(att.hidden, cfg.integer("shared_expert_intermediate_size"), sparse,
                          target=True)
    linears += swiglu_mlp(att.hidden, intermediate, layers - sparse, target=True)
    norm = (2 * layers + 1) * att.hidden + 2 * layers * att.head_dim
    return moe_shape(cfg, model_type="laguna", att=att, layers=layers,
                     intermediate=intermediate, linears=linears, norm=norm,
                     other=sparse * moe.experts, moe=moe, qk_norm=True)
