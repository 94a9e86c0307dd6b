"""The Llama layout and the dense decoders that keep it: Llama, Mistral, Ministral 3, OLMo 2 and
SmolLM3 (separate q/k/v/o projections, a SwiGLU MLP, RMSNorms).

:func:`dense_swiglu` is the layout itself, which Qwen2/Qwen3 (``qwen``) and the language models
of several multimodal checkpoints (``multimodal``) reuse with their own biases. Each builder
mirrors the module tree transformers 5 builds for its ``model_type`` (``modeling_llama``,
``modeling_olmo2``, ``modeling_smollm3``); a field the config leaves out takes the default of
that model's config class, as ``AutoConfig`` would; the totals are held to transformers on the
meta device by ``tests/engine/test_hf_configs.py`` (``tools/model_counts.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from app.engine.architectures.kit import (
    Biases,
    Config,
    assemble,
    attention_dims,
    gated_mlp,
    separate_attention,
)
from app.engine.shapes import ModelShape


def dense_swiglu(cfg: Config, model_type: str, *, biases: Callable[[Config], Biases],
                  qk_norm: bool = False, tied_default: bool = False) -> ModelShape:
    """The Llama layout the dense Llama, Mistral, Qwen2 and Qwen3 share: RMSNorm before
    attention and MLP (and one final), separate q/k/v/o, SwiGLU.

    The models differ only in which linears carry a bias (``biases`` reads the config's flags,
    after the sizes, as the builders always read them) and in Qwen3's RMSNorm on q and k per
    head (``qk_norm``: ``head_dim`` weights each, two per layer). ``tied_default``: what the
    config class assumes when ``tie_word_embeddings`` is left out (``SmolLM3Config``: True)."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    qkv_bias, o_bias, mlp_bias = biases(cfg)
    linears = separate_attention(att, layers, qkv_bias=qkv_bias, o_bias=o_bias)
    linears += gated_mlp(att.hidden, intermediate, layers, bias=mlp_bias)
    norms = (2 * layers + 1) * att.hidden + (2 * layers * att.head_dim if qk_norm else 0)
    return assemble(
        cfg, model_type=model_type, att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=norms, norms_per_layer=2, qk_norm=qk_norm,
        tied=cfg.flag("tie_word_embeddings", tied_default),
    )


def llama_biases(cfg: Config) -> Biases:
    """Llama and Mistral: ``attention_bias`` on q, k, v and o; ``mlp_bias`` on the MLP."""
    attention_bias = cfg.flag("attention_bias", False)
    return attention_bias, attention_bias, cfg.flag("mlp_bias", False)


def no_biases(_cfg: Config) -> Biases:
    """Ministral 3: no biases anywhere (``Ministral3Attention``/``Ministral3MLP``, no flag)."""
    return False, False, False


def olmo2(cfg: Config, model_type: str = "olmo2") -> ModelShape:
    """OLMo 2: Llama's linears without biases (``attention_bias`` on q/k/v/o); norms after the
    attention and the MLP (two per layer) and RMSNorms on the full q and k widths. OLMo 3
    (``olmo3``) has the same parameters: transformers' ``Olmo3DecoderLayer`` is
    ``Olmo2DecoderLayer`` and ``Olmo3ForCausalLM`` ``Olmo2ForCausalLM`` (``modular_olmo3.py``);
    only three of four layers attend over a window (``layer_types``), which the KV reader
    counts."""
    att = attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    bias = cfg.flag("attention_bias", False)
    linears = separate_attention(att, layers, qkv_bias=bias, o_bias=bias)
    linears += gated_mlp(att.hidden, intermediate, layers)
    qk_norm = layers * (att.heads + att.kv_heads) * att.head_dim
    return assemble(
        cfg, model_type=model_type, att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=(2 * layers + 1) * att.hidden + qk_norm, norms_per_layer=2,
        qk_norm=True, tied=cfg.flag("tie_word_embeddings", False),
    )


def smollm3(cfg: Config) -> ModelShape:
    """SmolLM3 (``modeling_smollm3``, transformers 5.25): the Llama layout (``attention_bias``,
    ``mlp_bias`` as Llama reads them); its NoPE layers (``no_rope_layers``) change no parameter.
    ``SmolLM3Config.tie_word_embeddings`` defaults to True: a config that leaves it out ties."""
    return dense_swiglu(cfg, "smollm3", biases=llama_biases, tied_default=True)


def seed_oss_biases(cfg: Config) -> Biases:
    """Seed-OSS (``SeedOssAttention``): ``attention_bias`` on q, k and v (``SeedOssConfig``
    default True), ``attention_out_bias`` on o and ``mlp_bias`` on the MLP (default False)."""
    return (cfg.flag("attention_bias", True), cfg.flag("attention_out_bias", False),
            cfg.flag("mlp_bias", False))


def ernie4_5_biases(cfg: Config) -> Biases:
    """ERNIE 4.5 dense (``Ernie4_5Attention``/``Ernie4_5MLP``): ``use_bias`` on every linear."""
    bias = cfg.flag("use_bias", False)
    return bias, bias, bias


def helium_biases(cfg: Config) -> Biases:
    """Helium (``HeliumAttention``): ``attention_bias`` on q, k and v, never on o;
    ``mlp_bias`` on the MLP."""
    return cfg.flag("attention_bias", False), False, cfg.flag("mlp_bias", False)


NEWER_DENSE: dict[str, Callable[[Config], ModelShape]] = {
    "seed_oss": lambda cfg: dense_swiglu(cfg, "seed_oss", biases=seed_oss_biases),
    "ernie4_5": lambda cfg: dense_swiglu(cfg, "ernie4_5", biases=ernie4_5_biases,
                                         tied_default=True),
    "exaone4": lambda cfg: dense_swiglu(cfg, "exaone4", biases=no_biases, qk_norm=True),
    "granite": lambda cfg: dense_swiglu(cfg, "granite", biases=llama_biases),
    "helium": lambda cfg: dense_swiglu(cfg, "helium", biases=helium_biases),
}
"""Dense decoders of 2025 releases with the Llama layout, each as transformers builds it
(held to transformers on the meta device by tests/engine/test_newer_dense.py): Seed-OSS
(ByteDance), ERNIE 4.5 dense (Baidu), EXAONE 4.0 (LG: Qwen3's RMSNorm on q and k per head, its
two norms after attention and MLP instead of before), Granite (IBM; its multipliers hold no
parameter) and Helium (Kyutai)."""
