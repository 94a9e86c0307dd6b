"""LongCat-Flash (``longcat_flash``: meituan-longcat/LongCat-Flash-Chat and its Thinking
variant): multi-head latent attention, dense SwiGLU MLPs and a shortcut-connected mixture of
experts with zero-computation (identity) experts.

Mirrors transformers 5.25's ``modeling_longcat_flash`` (counted on the meta device by
``tools/moe_counts.py``; held to that count by ``tests/engine/test_longcat.py``). Each of the
``num_layers`` decoder layers holds two sublayers, each an RMSNorm, DeepSeek-V3's MLA (q
compressed to ``q_lora_rank``, kv to ``kv_lora_rank``, an RMSNorm each), an RMSNorm and a
SwiGLU MLP of ``ffn_hidden_size``; beside them one MoE (the "shortcut"): a router
(``classifier``, an ``nn.Linear`` hidden -> ``n_routed_experts + zero_expert_num``) and
``n_routed_experts`` fused experts of ``expert_ffn_hidden_size``. transformers counts the
sublayers as ``num_hidden_layers`` = 2 x ``num_layers``, and so does the engine: a
``ModelShape`` layer is a sublayer, half of them hold the experts. The identity experts hold
no weights: the router picks ``moe_topk`` of the real and identity experts together, and an
identity pick passes the token through unchanged.

Which count is the truth: the release's. vLLM and SGLang load its safetensors, which hold no
tensor for an identity expert, and transformers 5.25 builds exactly those tensors
(560,664,958,976 parameters for LongCat-Flash-Chat; the model card: 560 B). transformers 5.17
to 5.24 built ``gate_up_proj`` for every router slot, identity experts included (256 x 2 x
2048 x 6144 x 28 = 180,388,626,432 parameters more, never used): a fine-tuning run on those
versions holds them too, which the estimate states (assumption ``longcat_identity_experts``)
but does not count.

Active parameters: the router's ``moe_topk`` picks fall on real experts in proportion
``n_routed_experts / (n_routed_experts + zero_expert_num)`` on average (8 of 12 in the
release, the share the release's PID-controlled expert bias holds: the card's "~27 B
activated on average", between 18.6 B with no real expert and 31.3 B with twelve, both
without the input embedding); the engine counts that average.

LoRA ``all-linear`` (PEFT 0.21): transformers maps ``longcat_flash`` onto Qwen2-MoE's
conversion, so PEFT adapts the fused experts (gate/up at rank 2r) and the router, and no
longer the dense MLPs' gate/up/down projections (their names are remapped onto the experts);
under the per-expert convention every ``nn.Linear`` and every expert's three projections.
QLoRA: ``load_in_4bit`` packs the ``nn.Linear`` layers (attention, dense MLPs and the router,
whose ``_keep_in_fp32_modules`` entry ``classifier.weight`` names a parameter, not a module,
so the bitsandbytes swap does not skip it); the fused experts stay 16-bit. Measured on a tiny
LongCat-Flash with bitsandbytes 0.50.2 (``tools/moe_qlora_layout.py``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from app.engine.architectures.kit import Attention, Config
from app.engine.architectures.moe import Moe, moe_experts, moe_shape, swiglu_mlp
from app.engine.shapes import LinearSpec, ModelShape, ShapeError

SUBLAYERS_PER_LAYER: Final = 2
"""Attention-and-MLP sublayers in one ``LongcatFlashDecoderLayer`` (transformers 5.25:
``num_hidden_layers`` = 2 x ``num_layers``)."""

LONGCAT_DEFAULTS: Final = {
    "num_layers": 28, "ffn_hidden_size": 12288, "expert_ffn_hidden_size": 2048,
    "n_routed_experts": 512, "zero_expert_num": 256, "moe_topk": 12, "q_lora_rank": 1536,
    "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
}
"""``LongcatFlashConfig`` defaults (transformers 5.25; its docstring: LongCat-Flash-Chat's) a
released config may leave out."""


IDENTITY_EXPERT_TYPES: Final = frozenset({"longcat_flash"})
"""Model types whose router also picks identity experts (assumption ``identity_experts``)."""


def routed_picks(shape: ModelShape) -> int:
    """The real experts a token passes on average: the experts' ``active_copies``."""
    return max((spec.active_copies for spec in shape.linears if spec.copies > 1), default=0)


def longcat_layers(cfg: Config) -> int:
    """Sublayers: 2 x ``num_layers``, or where a config names ``num_hidden_layers`` (whose
    setter in ``LongcatFlashConfig`` sets ``num_layers`` to half of it) twice that half."""
    if cfg.raw.get("num_hidden_layers") is None:
        return SUBLAYERS_PER_LAYER * cfg.integer("num_layers",
                                                 default=LONGCAT_DEFAULTS["num_layers"])
    pairs = cfg.integer("num_hidden_layers") // SUBLAYERS_PER_LAYER
    if not pairs:
        raise ShapeError("num_hidden_layers", "whole_number")
    return SUBLAYERS_PER_LAYER * pairs


def real_expert_picks(routed: int, zero: int, top_k: int) -> int:
    """The picks of one token that land on a real expert, on average (module docstring)."""
    return top_k * routed // (routed + zero)


def longcat_flash(cfg: Config) -> ModelShape:
    """LongCat-Flash (module docstring)."""
    d = LONGCAT_DEFAULTS

    def get(name: str) -> int:
        return cfg.integer(name, default=d[name])

    hidden = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    layers = longcat_layers(cfg)
    q_rank, kv_rank = get("q_lora_rank"), get("kv_lora_rank")
    rope, nope, v_dim = get("qk_rope_head_dim"), get("qk_nope_head_dim"), get("v_head_dim")
    routed = get("n_routed_experts")
    zero = 0 if cfg.raw.get("zero_expert_num") == 0 else get("zero_expert_num")
    top_k = get("moe_topk")
    if top_k > routed + zero:
        raise ShapeError("moe_topk", "too_many_active_experts", active=top_k,
                         experts=routed + zero, experts_field="n_routed_experts")
    moe = Moe(routed, real_expert_picks(routed, zero, top_k), get("expert_ffn_hidden_size"),
              layers // SUBLAYERS_PER_LAYER)
    bias = cfg.flag("attention_bias", False)
    linears = [
        LinearSpec("q_a_proj", "qkv", hidden, q_rank, layers, bias=bias),
        LinearSpec("q_b_proj", "qkv", q_rank, heads * (nope + rope), layers),
        LinearSpec("kv_a_proj_with_mqa", "qkv", hidden, kv_rank + rope, layers, bias=bias),
        LinearSpec("kv_b_proj", "qkv", kv_rank, heads * (nope + v_dim), layers),
        LinearSpec("o_proj", "o", heads * v_dim, hidden, layers, bias=bias),
    ]
    experts = moe_experts(hidden, moe, peft_fused=True, router_target=True)
    # The router is an nn.Linear over the real and the identity experts: packed by 4-bit loading.
    linears += [replace(experts[0], name="classifier", out_features=routed + zero,
                        packed_4bit=True), *experts[1:]]
    intermediate = get("ffn_hidden_size")
    linears += swiglu_mlp(hidden, intermediate, layers, target=False)
    norm = (2 * layers + 1) * hidden + layers * (q_rank + kv_rank)
    shape = moe_shape(cfg, model_type="longcat_flash", att=Attention(hidden, heads, heads,
                                                                     nope + rope),
                      layers=layers, intermediate=intermediate, linears=linears, norm=norm,
                      other=0, moe=moe)
    return replace(shape, experts_per_token=top_k, latent_norm_width=q_rank + kv_rank)
