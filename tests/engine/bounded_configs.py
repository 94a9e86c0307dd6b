"""Configs for every supported ``model_type`` with every numeric field at a chosen value.

Shared by the bound tests (``test_config_bounds.py``) and the benchmark that times the slowest
estimate at the bounds (``benchmarks/test_config_bounds_speed.py``).
"""

from __future__ import annotations

from typing import Any

from app.engine.architectures.kit import FIELD_BOUNDS
from app.engine.architectures.registry import SUPPORTED_MODEL_TYPES

# The fields each builder reads, besides model_type (see the builders in app/engine/architectures/).
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
# Hybrid, multimodal and older dense models (app/engine/arch_*.py).
_DELTA_NET = ("full_attention_interval", "linear_num_key_heads", "linear_num_value_heads",
              "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim")
_QWEN_MOE = ("num_experts", "num_experts_per_tok", "moe_intermediate_size",
             "shared_expert_intermediate_size")
FIELDS["qwen3_next"] = (*_COMMON, *_DELTA_NET, *_QWEN_MOE, "decoder_sparse_step")
FIELDS["qwen3_5"] = (*_COMMON, *_DELTA_NET)
FIELDS["qwen3_5_text"] = FIELDS["qwen3_5"]
FIELDS["qwen3_5_moe"] = (*tuple(f for f in _COMMON if f != "intermediate_size"), *_DELTA_NET,
                         *_QWEN_MOE)
FIELDS["qwen3_5_moe_text"] = FIELDS["qwen3_5_moe"]
FIELDS["nemotron_h"] = (
    *tuple(f for f in _COMMON if f != "num_hidden_layers"), "mamba_num_heads", "mamba_head_dim",
    "ssm_state_size", "n_groups", "conv_kernel", "n_routed_experts", "num_experts_per_tok",
    "moe_intermediate_size", "moe_shared_expert_intermediate_size", "moe_latent_size",
    "chunk_size",
)
FIELDS["falcon"] = ("num_hidden_layers", "hidden_size", "vocab_size", "num_attention_heads",
                    "num_kv_heads", "ffn_hidden_size", "num_ln_in_parallel_attn",
                    "max_position_embeddings")
FIELDS["gpt_neox"] = ("num_hidden_layers", "hidden_size", "intermediate_size", "vocab_size",
                      "num_attention_heads", "max_position_embeddings")
# Multimodal checkpoints: the text model's fields go in text_config, the tower's in
# vision_config, the rest at the top (see config_at).
VISION_FIELDS: dict[str, tuple[str, ...]] = {
    "gemma3": ("hidden_size", "intermediate_size", "num_hidden_layers", "patch_size",
               "image_size", "num_channels"),
    "mistral3": ("hidden_size", "intermediate_size", "num_hidden_layers", "patch_size",
                 "num_channels"),
    "qwen3_5": ("depth", "hidden_size", "intermediate_size", "patch_size", "in_channels",
                "temporal_patch_size", "spatial_merge_size", "out_hidden_size",
                "num_position_embeddings"),
}
VISION_FIELDS["qwen3_5_moe"] = VISION_FIELDS["qwen3_5"]
VISION_FIELDS["qwen3_vl"] = VISION_FIELDS["qwen3_vl_moe"] = VISION_FIELDS["qwen3_5"]
# Gemma 4 (architectures/gemma4.py): the second attention width, per-layer embeddings and the
# experts beside the MLP; its vision and audio towers. num_kv_shared_layers and
# num_global_key_value_heads follow the layers and kv heads (config_at), as they must.
FIELDS["gemma4_text"] = (*_COMMON, "global_head_dim", "hidden_size_per_layer_input",
                         "vocab_size_per_layer_input", "num_experts", "top_k_experts",
                         "moe_intermediate_size")
VISION_FIELDS["gemma4"] = ("hidden_size", "intermediate_size", "num_hidden_layers",
                           "num_attention_heads", "num_key_value_heads", "head_dim",
                           "patch_size", "position_embedding_size")
AUDIO_FIELDS: dict[str, tuple[str, ...]] = {
    "gemma4": ("hidden_size", "num_hidden_layers", "num_attention_heads", "conv_kernel_size",
               "output_proj_dims"),
}
TOP_FIELDS: dict[str, tuple[str, ...]] = {"mistral3": ("spatial_merge_size",)}
TEXT_FIELDS: dict[str, tuple[str, ...]] = {
    "gemma3": _COMMON, "mistral3": _COMMON, "qwen3_5": FIELDS["qwen3_5"],
    "qwen3_5_moe": FIELDS["qwen3_5_moe"], "gemma4": FIELDS["gemma4_text"],
    "qwen3_vl": _COMMON, "qwen3_vl_moe": FIELDS["qwen3_moe"],
}
for _nested, _text in TEXT_FIELDS.items():
    FIELDS[_nested] = tuple(dict.fromkeys(
        (*_text, *VISION_FIELDS[_nested], *AUDIO_FIELDS.get(_nested, ()),
         *TOP_FIELDS.get(_nested, ()))
    ))
# app/engine/architectures/deepseek.py: multi-head latent attention reads no kv heads or head_dim.
_MLA = (
    "num_hidden_layers", "hidden_size", "intermediate_size", "vocab_size", "num_attention_heads",
    "max_position_embeddings", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim",
    "qk_nope_head_dim", "v_head_dim", "n_routed_experts", "num_experts_per_tok",
    "moe_intermediate_size", "n_shared_experts",
)
_INDEXER = ("index_n_heads", "index_head_dim")
FIELDS["deepseek_v3"] = FIELDS["kimi_k2"] = (*_MLA, "first_k_dense_replace")
FIELDS["glm4_moe_lite"] = _MLA
FIELDS["deepseek_v32"] = (*_MLA, "first_k_dense_replace", *_INDEXER)
FIELDS["glm_moe_dsa"] = (*_MLA, "first_k_dense_replace", *_INDEXER, "index_topk_freq",
                         "index_skip_topk_offset")
FIELDS["glm4_moe"] = (*_COMMON, "n_routed_experts", "num_experts_per_tok",
                      "moe_intermediate_size", "n_shared_experts", "first_k_dense_replace")
FIELDS["minimax_m2"] = FIELDS["gpt_oss"] = (*_COMMON, "num_local_experts", "num_experts_per_tok")
FIELDS["llama4_text"] = (*_COMMON, "num_local_experts", "num_experts_per_tok",
                         "interleave_moe_layer_step", "intermediate_size_mlp")
FIELDS["mimo_v2_flash"] = (*_COMMON, "v_head_dim", "n_routed_experts", "num_experts_per_tok",
                           "moe_intermediate_size")
FIELDS["lfm2"] = (*tuple(f for f in _COMMON if f != "intermediate_size"), "block_ff_dim",
                  "block_multiple_of", "conv_L_cache")
FIELDS["deepseek_v4"] = (
    "num_hidden_layers", "hidden_size", "vocab_size", "num_attention_heads", "head_dim",
    "max_position_embeddings", "q_lora_rank", "o_groups", "o_lora_rank", "hc_mult",
    "index_n_heads", "index_head_dim", "n_routed_experts", "num_experts_per_tok",
    "moe_intermediate_size", "compress_rate_csa", "compress_rate_hca",
)
# app/engine/architectures/granite_hybrid.py: Mamba-2 sizes (mamba_d_head left "auto": it must
# be the inner width over the heads), the shared MLP, the experts.
FIELDS["granitemoehybrid"] = (*_COMMON, "mamba_n_heads", "mamba_d_state", "mamba_n_groups",
                              "mamba_d_conv", "mamba_expand", "shared_intermediate_size",
                              "num_local_experts", "num_experts_per_tok", "mamba_chunk_size")
# app/engine/architectures/ernie.py: ERNIE 4.5's expert names and layer schedule.
FIELDS["ernie4_5_moe"] = (*_COMMON, "moe_num_experts", "moe_k", "moe_intermediate_size",
                          "moe_num_shared_experts", "moe_layer_start_index",
                          "moe_layer_end_index", "moe_layer_interval")
# app/engine/architectures/falcon_h1.py: the Mamba-2 sizes, its inner width mamba_d_ssm.
FIELDS["falcon_h1"] = (*_COMMON, "mamba_n_heads", "mamba_d_state", "mamba_n_groups",
                       "mamba_d_conv", "mamba_d_ssm", "mamba_chunk_size")
# app/engine/architectures/hunyuan.py: experts and the experts a token passes.
FIELDS["hunyuan_v1_moe"] = (*_COMMON, "num_experts", "moe_topk")
# app/engine/architectures/exaone_moe.py: experts, shared experts, the first dense layers.
FIELDS["exaone_moe"] = (*_COMMON, "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                        "num_shared_experts", "first_k_dense_replace")
# app/engine/architectures/afmoe.py: experts, shared experts, the first dense layers.
FIELDS["afmoe"] = (*_COMMON, "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                   "num_shared_experts", "num_dense_layers")
# app/engine/architectures/laguna.py: experts, their width and the shared expert's.
FIELDS["laguna"] = (*_COMMON, *_QWEN_MOE)
# app/engine/architectures/longcat.py: layer pairs, MLA ranks, real and identity experts.
FIELDS["longcat_flash"] = (
    "num_layers", "hidden_size", "ffn_hidden_size", "vocab_size", "num_attention_heads",
    "max_position_embeddings", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim",
    "qk_nope_head_dim", "v_head_dim", "n_routed_experts", "zero_expert_num", "moe_topk",
    "expert_ffn_hidden_size",
)
# app/engine/architectures/minimax_m3.py: experts, the dense and shared MLPs' widths, the
# indexer's heads; the checkpoint's vision tower and projector.
FIELDS["minimax_m3"] = FIELDS["minimax_m3_vl_text"] = (
    *_COMMON, "num_local_experts", "num_experts_per_tok", "dense_intermediate_size",
    "shared_intermediate_size", "index_n_heads", "index_head_dim")
VISION_FIELDS["minimax_m3_vl"] = ("hidden_size", "intermediate_size", "num_hidden_layers",
                                  "num_channels", "patch_size", "temporal_patch_size",
                                  "spatial_merge_size")
TOP_FIELDS["minimax_m3_vl"] = ("projector_hidden_size",)
TEXT_FIELDS["minimax_m3_vl"] = FIELDS["minimax_m3"]
FIELDS["minimax_m3_vl"] = tuple(dict.fromkeys(
    (*FIELDS["minimax_m3"], *VISION_FIELDS["minimax_m3_vl"], "projector_hidden_size")))
# app/engine/architectures/step3p7.py: experts, their width and the shared expert's; the
# checkpoint's vision tower (its MLP follows mlp_ratio, not intermediate_size).
TEXT_FIELDS["step3p7"] = (*_COMMON, "n_routed_experts", "num_experts_per_tok",
                          "moe_intermediate_size", "share_expert_dim")
VISION_FIELDS["step3p7"] = ("hidden_size", "num_hidden_layers", "num_channels", "image_size",
                            "patch_size")
FIELDS["step3p7"] = tuple(dict.fromkeys(
    (*TEXT_FIELDS["step3p7"], *VISION_FIELDS["step3p7"])))
# Multimodal checkpoints read their fields from ``text_config`` (config_at nests them).
NESTED: dict[str, str] = {"kimi_k25": "deepseek_v3", "llama4": "llama4_text"}
for _outer in NESTED:
    FIELDS[_outer] = ()

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
    full_attention_interval=4, linear_num_key_heads=16, linear_num_value_heads=32,
    linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4,
    shared_expert_intermediate_size=512, mamba_num_heads=128, mamba_head_dim=64, n_groups=8,
    ssm_state_size=128, conv_kernel=4, n_routed_experts=128,
    moe_shared_expert_intermediate_size=3712, moe_latent_size=1024, num_kv_heads=8,
    ffn_hidden_size=8192, num_ln_in_parallel_attn=2, depth=27, num_position_embeddings=2304,
    out_hidden_size=2048, patch_size=16, image_size=896, num_channels=3, in_channels=3,
    spatial_merge_size=2, temporal_patch_size=2,
    n_shared_experts=1, first_k_dense_replace=3,
    interleave_moe_layer_step=2, intermediate_size_mlp=8192, q_lora_rank=1536,
    kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128,
    block_ff_dim=6144, block_multiple_of=256, conv_L_cache=3,
    o_groups=8, o_lora_rank=1024, hc_mult=4, compress_rate_csa=4, compress_rate_hca=128,
    index_n_heads=64, index_head_dim=128, index_topk_freq=1, index_skip_topk_offset=2,
    global_head_dim=512, hidden_size_per_layer_input=256, vocab_size_per_layer_input=262_144,
    top_k_experts=8, position_embedding_size=10_240, conv_kernel_size=5, output_proj_dims=1536,
    mamba_n_heads=128, mamba_d_head=64, mamba_d_state=128, mamba_n_groups=1, mamba_d_conv=4,
    mamba_expand=2, shared_intermediate_size=1536,
    moe_num_experts=64, moe_k=6, moe_num_shared_experts=2, moe_layer_start_index=1,
    moe_layer_end_index=47, moe_layer_interval=1, mamba_d_ssm=1024, moe_topk=8,
    num_shared_experts=1, num_dense_layers=1,
    num_layers=24, expert_ffn_hidden_size=768, zero_expert_num=64,
    dense_intermediate_size=6144, projector_hidden_size=2048,
    chunk_size=128, mamba_chunk_size=256, share_expert_dim=1280,
)


def config_at(model_type: str, values: dict[str, int]) -> dict[str, Any]:
    """A config of ``model_type`` with each of its fields at ``values[field]``.

    Kept consistent where the builders demand it: key/value heads divide the heads (the heads
    are raised to a multiple), GPT-2's, Falcon's and GPT-NeoX's width is a multiple of its
    heads, experts per token are at most the experts, layer 0 of a Qwen3-MoE (and Qwen3-Next)
    is listed as dense (``mlp_only_layers``), Nemotron-H has one block of each kind, and a
    multimodal checkpoint's fields sit in ``text_config``/``vision_config``."""
    vision_fields = VISION_FIELDS.get(model_type, ())
    top_fields = TOP_FIELDS.get(model_type, ())
    nested = bool(vision_fields)
    if model_type in NESTED:  # a checkpoint whose text model is another type's config
        return {"model_type": model_type, "text_config": config_at(NESTED[model_type], values)}
    config: dict[str, Any] = {"model_type": model_type}
    text: dict[str, Any] = {} if nested else config
    for name in TEXT_FIELDS.get(model_type, FIELDS[model_type]):
        text[name] = values[name]
    for name in top_fields:
        config[name] = values[name]
    if nested:
        config["text_config"] = text
        config["vision_config"] = {name: values[name] for name in vision_fields}
        if model_type == "gemma3":
            config["vision_config"]["vision_use_head"] = False
    if model_type in AUDIO_FIELDS:
        config["audio_config"] = {name: values[name] for name in AUDIO_FIELDS[model_type]}
    for heads_field, kv_field in (("num_attention_heads", "num_key_value_heads"),
                                  ("num_attention_heads", "num_kv_heads")):
        if kv_field in text:
            kv = text[kv_field]
            text[heads_field] = kv * max(1, text[heads_field] // kv)
    if model_type == "gpt2":
        config["n_embd"] = config["n_head"] * max(1, config["n_embd"] // config["n_head"])
    if model_type in ("falcon", "gpt_neox"):
        heads = config["num_attention_heads"]
        config["hidden_size"] = heads * max(1, config["hidden_size"] // heads)
    if model_type == "falcon":
        config["new_decoder_architecture"] = True
    experts = text.get("num_experts", text.get("num_local_experts", text.get("n_routed_experts")))
    if experts is not None and "num_experts_per_tok" in text:
        text["num_experts_per_tok"] = min(text["num_experts_per_tok"], experts)
    if model_type in ("qwen3_moe", "qwen3_next"):
        config["mlp_only_layers"] = [0]
    if model_type == "nemotron_h":
        config["hybrid_override_pattern"] = "M*-E"
    if model_type in ("gemma4", "gemma4_text"):
        _gemma4_switches(config, text)
    if model_type == "falcon_h1":  # the heads divide the Mamba width, as transformers demands
        heads = config["mamba_n_heads"]
        config["mamba_d_ssm"] = heads * max(1, config["mamba_d_ssm"] // heads)
    if model_type == "hunyuan_v1_moe":
        config["moe_topk"] = min(config["moe_topk"], config["num_experts"])
    if model_type == "longcat_flash":  # the picks are among the real and identity experts
        config["moe_topk"] = min(config["moe_topk"],
                                 config["n_routed_experts"] + config["zero_expert_num"])
    if model_type in ("minimax_m3", "minimax_m3_vl_text", "minimax_m3_vl"):
        # the first layer dense, the others sparse with the indexer (the release's pattern)
        layers = text["num_hidden_layers"]
        text["mlp_layer_types"] = ["dense"] + ["sparse"] * (layers - 1)
        text["layer_types"] = ["full_attention"] + ["minimax_m3_sparse"] * (layers - 1)
    if model_type == "ernie4_5_moe":
        config["moe_k"] = min(config["moe_k"], config["moe_num_experts"])
    if model_type == "granitemoehybrid":  # one attention layer, the rest Mamba-2
        config["layer_types"] = ["mamba"] * (config["num_hidden_layers"] - 1) + ["attention"]
        heads = config["mamba_n_heads"]  # dividing the inner width, as transformers demands
        config["hidden_size"] = heads * max(1, config["hidden_size"] // heads)
    return config


def _gemma4_switches(config: dict[str, Any], text: dict[str, Any]) -> None:
    """Every Gemma 4 branch on: experts beside the MLP, keys as values with their own kv heads
    on full layers, the last layers sharing keys and values (as many as the default layer
    pattern allows: each kind keeps a layer of its own before them), a double-wide MLP there;
    the vision tower's kv heads divide its heads."""
    text.update(enable_moe_block=True, attention_k_eq_v=True, use_double_wide_mlp=True,
                num_global_key_value_heads=text["num_key_value_heads"],
                num_kv_shared_layers=max(0, text["num_hidden_layers"] - 6) // 2)
    text["top_k_experts"] = min(text["top_k_experts"], text["num_experts"])
    vision = config.get("vision_config")
    if vision is not None:
        kv = vision["num_key_value_heads"]
        vision["num_attention_heads"] = kv * max(1, vision["num_attention_heads"] // kv)


def set_field(config: dict[str, Any], field: str, value: int) -> None:
    """Set ``field`` where :func:`config_at` put it (the text model's first)."""
    for part in (config.get("text_config"), config, config.get("vision_config"),
                 config.get("audio_config")):
        if isinstance(part, dict) and field in part:
            part[field] = value
            return
    raise KeyError(field)


def at_bounds(model_type: str) -> dict[str, Any]:
    """Every field at its upper bound."""
    return config_at(model_type, dict(FIELD_BOUNDS))


def one_at_bound(model_type: str, field: str) -> dict[str, Any]:
    """The ordinary config with ``field`` alone at its upper bound."""
    return config_at(model_type, {**ORDINARY, field: FIELD_BOUNDS[field]})
