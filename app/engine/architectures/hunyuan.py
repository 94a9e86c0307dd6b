"""Hunyuan (``hunyuan_v1_dense``: Hunyuan 0.5B-7B; ``hunyuan_v1_moe``: Hunyuan-A13B).

Mirrors transformers 5's ``modeling_hunyuan_v1_dense`` and ``modeling_hunyuan_v1_moe``
(counted on the meta device by ``tools/newer_moe_counts.py``, transformers 5.24.0 and PEFT
0.21.2): Llama's attention (``attention_bias`` on q, k, v and o) with an RMSNorm over each
query and key head (``query_layernorm``, ``key_layernorm``), two RMSNorms a layer. The dense
model has Llama's SwiGLU MLP, no bias. The MoE model has in every layer a router ``wg``
(an ``nn.Linear``, float32), ``num_experts`` fused experts of ``intermediate_size`` of which
``moe_topk`` (a number, or one per layer) route a token, and one shared SwiGLU MLP of the same
width.

LoRA ``all-linear`` (PEFT 0.21): transformers' conversion table maps ``hunyuan_v1_moe`` to the
Qwen2-MoE pattern, so PEFT adapts the router and the fused experts (gate/up at rank 2r) and
no longer the shared MLP, whose ``gate_proj``/``up_proj``/``down_proj`` it renames onto them
(``LinearSpec.lora_target`` False; adapted under the per-expert convention).
"""

from __future__ import annotations

from dataclasses import replace

from app.engine.architectures.kit import (
    MAX_LAYERS,
    Biases,
    Config,
    attention_dims,
    bounded,
    gated_mlp,
    separate_attention,
)
from app.engine.architectures.llama import dense_swiglu
from app.engine.architectures.moe import Moe, moe_experts, moe_shape
from app.engine.shapes import ModelShape, ShapeError

MAX_SHOWN = 8
"""Entries of a refused per-layer list that the message repeats."""


def hunyuan_biases(cfg: Config) -> Biases:
    """``attention_bias`` on q, k, v and o; the MLPs never carry one (no flag)."""
    bias = cfg.flag("attention_bias", False)
    return bias, bias, False


def hunyuan_v1_dense(cfg: Config) -> ModelShape:
    """Hunyuan dense (module docstring): the Llama layout with per-head q/k norms."""
    return dense_swiglu(cfg, "hunyuan_v1_dense", biases=hunyuan_biases, qk_norm=True)


def hunyuan_topk(cfg: Config, experts: int) -> int:
    """``moe_topk``: one number, or one per layer (all alike: the engine holds one count of
    active experts, so a list that varies is refused naming the field)."""
    value = cfg.raw.get("moe_topk", 1)
    if isinstance(value, list):
        # one number the list repeats, else refused as not one positive integer; the list is
        # at most MAX_LAYERS long (str of a long list is not built)
        if not value or len(value) > MAX_LAYERS or value.count(value[0]) != len(value):
            shown = repr(value) if len(value) <= MAX_SHOWN else f"a list of {len(value)}"
            raise ShapeError("moe_topk", "positive_integer", value=shown)
        value = value[0]
    active = bounded("moe_topk", value)
    if active > experts:
        raise ShapeError("moe_topk", "too_many_active_experts", active=active, experts=experts,
                         experts_field="num_experts")
    return active


def hunyuan_v1_moe(cfg: Config) -> ModelShape:
    """Hunyuan MoE (module docstring)."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    width = cfg.integer("intermediate_size")
    experts = cfg.integer("num_experts", default=1)
    moe = Moe(experts, hunyuan_topk(cfg, experts), width, layers)
    qkv_bias, o_bias, _ = hunyuan_biases(cfg)
    linears = separate_attention(att, layers, qkv_bias=qkv_bias, o_bias=o_bias)
    # the router wg is an nn.Linear: load_in_4bit packs it like any other
    linears += [replace(spec, packed_4bit=True) if spec.role == "router" else spec
                for spec in moe_experts(att.hidden, moe, peft_fused=True, router_target=True)]
    linears += [replace(spec, lora_target=False)
                for spec in gated_mlp(att.hidden, width, layers)]
    norm = (2 * layers + 1) * att.hidden + 2 * layers * att.head_dim
    return moe_shape(cfg, model_type="hunyuan_v1_moe", att=att, layers=layers,
                     intermediate=width, linears=linears, norm=norm, other=0, moe=moe,
                     qk_norm=True)
