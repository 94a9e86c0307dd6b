"""KV cache bytes per token, exactly as vLLM lays them out, for each kind of attention.

Configs are the real ones (the catalog's seed files, or the fields the KV reader uses copied
from the model's config.json on the Hugging Face Hub, URL given). Expected numbers are worked
out by hand from vLLM's specs (``vllm/v1/kv_cache_interface.py``, v0.11.0), not by the engine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine.architectures.approximate import shape_of
from app.engine.architectures.kit import FIELD_BOUNDS
from app.engine.errors import EngineError
from app.engine.serving import ServingJob, assumption_items
from app.engine.serving_kv import BLOCK_TOKENS, KV_FIELD_BOUNDS, kv_layout

ROOT = Path(__file__).resolve().parents[2]


def seed(slug: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(
        (ROOT / f"app/catalog/seed/models/{slug}.json").read_text())
    return config


DEEPSEEK_V3 = {  # https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json
    "model_type": "deepseek_v3", "num_hidden_layers": 61, "hidden_size": 7168,
    "num_attention_heads": 128, "num_key_value_heads": 128, "kv_lora_rank": 512,
    "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
}
QWEN3_NEXT = {  # https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct/blob/main/config.json
    "model_type": "qwen3_next", "num_hidden_layers": 48, "hidden_size": 2048,
    "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "full_attention_interval": 4, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
    "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
}
GEMMA3_27B = {  # https://huggingface.co/google/gemma-3-27b-it/blob/main/config.json (text_config)
    "model_type": "gemma3_text", "num_hidden_layers": 62, "hidden_size": 5376,
    "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128,
    "sliding_window": 1024, "sliding_window_pattern": 6,
}


@pytest.mark.parametrize(("tp", "expected"), [(1, 131_072), (2, 65_536), (8, 16_384),
                                              (16, 16_384)])
def test_gqa_counts_key_value_heads_not_attention_heads(tp: int, expected: int) -> None:
    """Llama 3.1 8B: 32 layers x 2 x 8 KV heads x 128 x 2 bytes; beyond 8 GPUs each keeps one
    (replicated) head, so 16 GPUs cost what 8 do."""
    assert kv_layout(seed("llama-3.1-8b")).bytes_per_token(tp, 2) == expected


def test_fp8_kv_halves_the_bytes() -> None:
    assert kv_layout(seed("llama-3.1-8b")).bytes_per_token(1, 1) == 65_536


@pytest.mark.parametrize("tp", [1, 8])
def test_mla_keeps_one_latent_per_layer_not_split_by_tensor_parallel(tp: int) -> None:
    """DeepSeek-V3: (512 + 64) x 2 bytes x 61 layers = 70,272 on every GPU, not 128 heads."""
    layout = kv_layout(DEEPSEEK_V3)
    assert layout.is_mla
    assert layout.bytes_per_token(tp, 2) == 70_272
    assert layout.bytes_per_token(tp, 1) == 35_136


def test_gemma2_alternates_sliding_and_full_layers() -> None:
    """Gemma 2 9B: 42 layers, every even one slides over 4,096 tokens; 2 x 8 x 256 x 2 bytes per
    layer and token."""
    layout = kv_layout(seed("gemma-2-9b"))
    assert (layout.full_layers, layout.sliding_layers, layout.window) == (21, 21, 4096)
    assert layout.bytes_per_token(1, 2) == 42 * 8192
    # a request of 8,192 tokens with 2,048 batched: full layers hold 8,192 tokens, sliding
    # layers min(4,095 + 2,048, 8,192) = 6,143 -> 6,144 rounded to blocks, plus one block
    assert layout.request_bytes(8192, 1, 2, 2048) == 21 * 8192 * 8192 + 21 * 6160 * 8192


def test_gemma3_keeps_one_global_layer_in_six() -> None:
    """Gemma 3 27B: 62 layers, 10 global and 52 sliding over 1,024 tokens."""
    layout = kv_layout(GEMMA3_27B)
    assert (layout.full_layers, layout.sliding_layers) == (10, 52)
    per_layer = 2 * 16 * 128 * 2
    long_request = layout.request_bytes(131_072, 1, 2, 2048, padded=False)
    assert long_request == 10 * 131_072 * per_layer + 52 * (3072 + BLOCK_TOKENS) * per_layer


def test_vllm_pads_the_sliding_layers_to_whole_groups() -> None:
    """vLLM groups Gemma 3 27B's layers ten at a time (its 10 global layers); the 52 sliding
    ones fill six groups, 8 of them padding that a request still pays for ("Add 8 padding
    layers, may waste at most 15.38% KV cache memory", vLLM 0.19.0 in
    app/estimates/measurements/vllm_logs.json). The model's own cost per token counts no padding."""
    layout = kv_layout(GEMMA3_27B)
    per_layer = 2 * 16 * 128 * 2
    assert layout.grouped_layers() == (10, 60, 0)
    assert layout.grouped_layers(padded=False) == (10, 52, 0)
    assert layout.request_bytes(131_072, 1, 2, 2048) == (
        10 * 131_072 * per_layer + 60 * (3072 + BLOCK_TOKENS) * per_layer)
    assert layout.pool_bytes_per_token(1, 2) == 70 * per_layer
    assert layout.bytes_per_token(1, 2) == 62 * per_layer


@pytest.mark.parametrize(("full", "sliding", "grouped"), [
    (12, 12, (12, 12)),   # gpt-oss-20b: one group each, nothing padded
    (13, 12, (13, 13)),   # within 1.25 times: the larger count sets the group, one pad
    (5, 29, (5, 30)),     # Gemma 3 4B: one pad ("Add 1 padding layers ... 3.45%")
    (12, 36, (12, 36)),   # Llama 4 Scout: three chunked groups per global one
])
def test_group_size_follows_vllm(full: int, sliding: int, grouped: tuple[int, int]) -> None:
    config = {**GEMMA3_27B, "num_hidden_layers": full + sliding,
              "layer_types": ["full_attention"] * full + ["sliding_attention"] * sliding}
    assert kv_layout(config).grouped_layers()[:2] == grouped


def test_layer_types_list_decides_over_patterns() -> None:
    config = {**GEMMA3_27B, "num_hidden_layers": 4,
              "layer_types": ["sliding_attention", "full_attention", "sliding_attention",
                              "full_attention"]}
    layout = kv_layout(config)
    assert (layout.full_layers, layout.sliding_layers) == (2, 2)


def test_hybrid_linear_attention_holds_a_fixed_state_per_request() -> None:
    """Qwen3-Next: one full-attention layer in four (12 of 48), 2 x 2 x 256 x 2 bytes each per
    token; 36 gated DeltaNet layers, each a state of 32 x 128 x 128 plus a convolution of
    3 x (2 x 16 x 128 + 32 x 128) elements per request, whatever its length."""
    layout = kv_layout(QWEN3_NEXT)
    assert (layout.full_layers, layout.linear_layers) == (12, 36)
    assert layout.bytes_per_token(1, 2) == 24_576
    state = 36 * (32 * 128 * 128 + 3 * 8192) * 2
    assert layout.state_bytes(1) == state
    assert layout.request_bytes(4096, 1, 2, 2048) == 4096 * 24_576 + state
    assert (layout.request_bytes(8192, 1, 2, 2048) - layout.request_bytes(4096, 1, 2, 2048)
            == 4096 * 24_576)


def test_published_hybrid_figure_sixteen_attention_layers_in_fp8() -> None:
    """'16 layers x 4 kv-heads x 256 head-dim x 2 (K,V) x 1B fp8 = 32 KiB/token' for a 64-layer
    hybrid with full_attention_interval 4 (mitchross/talos-argocd-proxmox#1995)."""
    config = {**QWEN3_NEXT, "num_hidden_layers": 64, "num_key_value_heads": 4}
    assert kv_layout(config).bytes_per_token(1, 1) == 32 * 1024


def test_longest_context_inverts_request_bytes() -> None:
    layout = kv_layout(seed("llama-3.1-8b"))
    capacity = layout.request_bytes(10_000, 1, 2, 2048) * 3
    longest = layout.longest_context(capacity, 3, 1, 2, 2048, 131_072)
    assert layout.request_bytes(longest, 1, 2, 2048) * 3 <= capacity
    assert layout.request_bytes(longest + BLOCK_TOKENS, 1, 2, 2048) * 3 > capacity


@pytest.mark.parametrize(("field", "value"), [("num_hidden_layers", 10**9),
                                              ("kv_lora_rank", -1),
                                              ("layer_types", ["full_attention"])])
def test_bad_fields_are_named(field: str, value: object) -> None:
    config = {**DEEPSEEK_V3, field: value}
    with pytest.raises(EngineError) as error:
        kv_layout(config)
    assert error.value.field == field



def test_a_field_has_one_bound_wherever_it_is_read() -> None:
    """The KV reader extends the shapes' table; it never sets a second bound for their fields."""
    assert {name: KV_FIELD_BOUNDS[name] for name in FIELD_BOUNDS} == dict(FIELD_BOUNDS)


RENAMED: dict[str, str] = {"attention_chunk_size": "sliding_window",
                           "mamba_d_state": "ssm_state_size", "mamba_n_groups": "n_groups",
                           "mamba_d_conv": "conv_kernel"}
"""Older spellings the KV reader falls back on, and the field each one stands in for."""


@pytest.mark.parametrize("field", sorted(set(KV_FIELD_BOUNDS) - set(FIELD_BOUNDS)))
def test_fields_only_the_kv_reader_takes_are_refused_above_their_bound(field: str) -> None:
    window_field = field.startswith("sliding") or field == "attention_chunk_size"
    config: dict[str, Any] = (
        {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 512,
         "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 1024,
         "vocab_size": 1000, "layer_types": ["sliding_attention", "full_attention"] * 2}
        if window_field else fixture("nvidia-nemotron-nano-9b-v2"))
    if field == "sliding_window_pattern":  # read only where layer_types is absent
        config = {**fixture("gemma-3-27b-it")["text_config"], "model_type": "gemma3_text"}
    if field == "conv_dim":  # LFM2's short convolutions
        config = fixture("lfm2-1.2b")
    config.pop(RENAMED.get(field, ""), None)
    config[field] = KV_FIELD_BOUNDS[field] + 1
    with pytest.raises(EngineError) as error:
        kv_layout(config)
    assert error.value.field.endswith(field)

def fixture(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(
        (ROOT / f"tests/fixtures/hf_configs/{name}.json").read_text())
    return config


@pytest.mark.parametrize(("name", "kinds", "per_token"), [
    # Gemma 3 27B (multimodal checkpoint, text_config; pattern 6 by default): 10 global, 52 local
    ("gemma-3-27b-it", (10, 52, 0), 62 * 2 * 16 * 128 * 2),
    # Nemotron Nano 9B v2: 4 attention ("*") and 27 Mamba-2 ("M") layers; MLP-only ("-") none
    ("nvidia-nemotron-nano-9b-v2", (4, 0, 27), 4 * 2 * 8 * 128 * 2),
    # Qwen3-Next: layer_types absent, full_attention_interval 4
    ("qwen3-next-80b-a3b-instruct", (12, 0, 36), 12 * 2 * 2 * 256 * 2),
    # Qwen3.6-35B-A3B: layer_types in text_config, 10 of 40 full attention
    ("qwen3.6-35b-a3b", (10, 0, 30), 10 * 2 * 2 * 256 * 2),
])
def test_real_hybrid_and_sliding_configs(name: str, kinds: tuple[int, int, int],
                                         per_token: int) -> None:
    config = fixture(name)
    layout = kv_layout(config, shape_of(config))
    assert (layout.full_layers, layout.sliding_layers, layout.linear_layers) == kinds
    assert layout.bytes_per_token(1, 2) == per_token


def test_nemotron_h_mamba_state_per_request() -> None:
    """Mamba-2 state: heads x head_dim x state (128 x 80 x 128) plus a convolution of
    3 x (heads x head_dim + 2 x groups x state) elements, per layer, bf16."""
    config = fixture("nvidia-nemotron-nano-9b-v2")
    layout = kv_layout(config, shape_of(config))
    assert layout.state_elements == 128 * 80 * 128 + 3 * (128 * 80 + 2 * 8 * 128)
    assert layout.state_bytes(1) == 27 * layout.state_elements * 2


@pytest.mark.parametrize(("name", "sliding", "full", "tp", "per_token"), [
    # E2B: 35 layers, the last 20 read layers 13 and 14's cache, so 15 keep one: [4 sliding,
    # 1 full] x 3; one kv head, 256 wide on sliding and 512 on full layers
    ("gemma-4-e2b-it", 12, 3, 1, 12 * 2 * 1 * 256 * 2 + 3 * 2 * 1 * 512 * 2),
    # E4B: 42 layers, 18 shared, so 24 keep a cache: [5 sliding, 1 full] x 4; two kv heads
    ("gemma-4-e4b-it", 20, 4, 1, 20 * 2 * 2 * 256 * 2 + 4 * 2 * 2 * 512 * 2),
    # 31B: no sharing; 16 kv heads of 256 on sliding layers, 4 global heads of 512 on full ones
    ("gemma-4-31b-it", 50, 10, 1, 50 * 2 * 16 * 256 * 2 + 10 * 2 * 4 * 512 * 2),
    # ... at 8 GPUs: two sliding heads each, the 4 global heads replicated to one each
    ("gemma-4-31b-it", 50, 10, 8, 50 * 2 * 2 * 256 * 2 + 10 * 2 * 1 * 512 * 2),
    # 26B-A4B: 8 kv heads of 256 sliding, 2 global heads of 512 full
    ("gemma-4-26b-a4b", 25, 5, 1, 25 * 2 * 8 * 256 * 2 + 5 * 2 * 2 * 512 * 2),
])
def test_gemma4_caches_only_its_own_kv_layers_each_kind_at_its_own_width(
        name: str, sliding: int, full: int, tp: int, per_token: int) -> None:
    config = fixture(name)
    layout = kv_layout(config, shape_of(config))
    assert (layout.full_layers, layout.sliding_layers) == (full, sliding)
    assert layout.bytes_per_token(tp, 2) == per_token


def test_gemma4_long_request_pays_full_width_on_global_layers_and_a_window_on_the_rest() -> None:
    """Gemma 4 31B at 131,072 tokens with 2,048 batched: 10 global layers hold every token at
    2 x 4 x 512 x 2 bytes, 50 sliding layers 1,023 + 2,048 tokens (3,072 in blocks) plus a
    block at 2 x 16 x 256 x 2."""
    layout = kv_layout(fixture("gemma-4-31b-it"))
    assert layout.request_bytes(131_072, 1, 2, 2048) == (
        10 * 131_072 * 8192 + 50 * (3072 + BLOCK_TOKENS) * 16_384)


def test_mimo_v2_flash_full_and_sliding_layers_at_their_own_heads() -> None:
    """transformers' MiMoV2FlashAttention (modeling_mimo_v2_flash.py at 019770dd): the first and
    every sixth layer attend in full
    (9 of 48: the release's hybrid_layer_pattern and MiMoV2FlashConfig's default agree) with
    num_key_value_heads (4), the 39 sliding layers with twice as many (8) over a 128-token
    window; keys 192 wide, values 128 (v_head_dim). It was sized as 48 sliding layers of 4
    heads 192 wide for keys and values: 147,456 bytes a token within the window, no full
    layer."""
    config = fixture("mimo-v2-flash")
    default = [0 if i == 0 or not (i + 1) % 6 else 1 for i in range(48)]
    assert config["hybrid_layer_pattern"] == default
    layout = kv_layout(config, shape_of(config))
    assert (layout.full_layers, layout.sliding_layers, layout.window) == (9, 39, 128)
    assert layout.full_token_layer_bytes(1, 2) == 4 * (192 + 128) * 2
    assert layout.token_layer_bytes(1, 2) == 8 * (192 + 128) * 2
    assert layout.bytes_per_token(1, 2) == 9 * 2560 + 39 * 5120 == 222_720
    # a long request: the full layers grow, the sliding ones stop at the window
    growth = layout.request_bytes(65_536, 1, 2, 2048) - layout.request_bytes(32_768, 1, 2, 2048)
    assert growth == layout.grouped_layers()[0] * 32_768 * 2560
    # tensor parallel over 8: one full head and one sliding head a GPU
    assert layout.bytes_per_token(8, 2) == 9 * 320 * 2 + 39 * 320 * 2
    without_pattern = {k: v for k, v in config.items() if k != "hybrid_layer_pattern"}
    assert kv_layout(without_pattern) == kv_layout(config)


@pytest.mark.parametrize(("name", "csa", "hca", "layers"), [
    ("deepseek-v4-flash", 21, 20, 43),
    ("deepseek-v4-pro", 30, 31, 61),
])
def test_deepseek_v4_keeps_a_window_and_compressed_entries(
        name: str, csa: int, hca: int, layers: int) -> None:
    """transformers' DeepseekV4CSACache / DeepseekV4HCACache (modeling_deepseek_v4.py at 01976081):
    every layer a 128-token
    window of one shared key/value head of 512 (values are the keys' tensor); a CSA layer (rate
    4) one 512-wide entry and one 128-wide indexer entry per 4 tokens, an HCA layer (rate 128)
    one 512-wide entry per 128 tokens; fixed buffers of the tokens still to compress. It was
    sized as sliding layers with separate keys and values and no compressed entries, so a
    request's cache stopped growing at the window."""
    config = fixture(name)
    layout = kv_layout(config, shape_of(config))
    assert (layout.full_layers, layout.sliding_layers, layout.window) == (0, layers, 128)
    assert layout.token_layer_bytes(1, 2) == 512 * 2  # keys once, values share them
    assert [(k.layers, k.rate, k.entry_elements) for k in layout.compressed] == [
        (csa, 4, 512 + 128), (hca, 128, 512)]
    assert layout.compressed_token_bytes(2) == csa * 640 * 2 // 4 + -(-hca * 512 * 2 // 128)
    # 1M tokens: every complete window one entry, whatever the GPUs (one head, replicated)
    context = 1_048_576
    entries = csa * (context // 4) * 640 * 2 + hca * (context // 128) * 512 * 2
    buffers = csa * (3 * 4 * 640 + 2 * 640) * 2 + hca * (127 * 2 * 512) * 2
    window = layers * ((128 - 1 + 2048 + 15) // 16 * 16 + 16) * 512 * 2
    for tp in (1, 8):
        assert layout.request_bytes(context, tp, 2, 2048) == entries + buffers + window


def test_lfm2_short_convolutions_keep_a_state_per_request() -> None:
    """LFM2-1.2B: 6 attention layers (full_attn_idxs) keep keys and values; the 10 short
    convolutions keep (conv_L_cache - 1) x conv_dim = 2 x 2048 values each per request (vLLM's
    short_conv_state_shape), whatever its length; they were not counted at all."""
    config = fixture("lfm2-1.2b")
    layout = kv_layout(config, shape_of(config))
    assert (layout.full_layers, layout.linear_layers) == (6, 10)
    assert layout.state_elements == 2 * 2048
    assert layout.state_bytes(1) == 10 * 2 * 2048 * 2 == 81_920
    assert layout.state_bytes(2) == 10 * 2048 * 2  # split over the ranks by channel
    assert layout.bytes_per_token(1, 2) == 6 * 2 * 8 * 64 * 2
    assert layout.request_bytes(1024, 1, 2, 2048, padded=False) == (
        6 * 1024 * 2 * 8 * 64 * 2 + 81_920)


@pytest.mark.parametrize("name", ["minimax-m3", "minimax-m3-nvfp4"])
def test_minimax_m3_keeps_its_indexer_keys(name: str) -> None:
    """transformers 5.24's MiniMaxM3VLSparseCacheLayer: each of the 57 sparse layers
    (sparse_attention_freq) keeps, beside its 4 key/value heads of 128, the lightning indexer's
    key: one head of index_head_dim (128) per token, in the model's dtype, on every rank. It
    was left out: 60 x 2 x 4 x 128 x 2 = 122,880 bytes a token on one GPU, 30,720 on eight."""
    config = fixture(name)
    layout = kv_layout(config, shape_of(config))
    assert (layout.full_layers, layout.kv_heads, layout.head_dim) == (60, 4, 128)
    assert (layout.indexer_layers, layout.indexer_dim) == (57, 128)
    indexer = 57 * 128 * 2
    assert layout.bytes_per_token(1, 2) == 60 * 2 * 4 * 128 * 2 + indexer == 137_472
    assert layout.bytes_per_token(8, 2) == 60 * 2 * 1 * 128 * 2 + indexer == 45_312
    # a request grows by the indexer's keys with every token, whatever the GPUs
    for tp in (1, 8):
        growth = (layout.request_bytes(65_536, tp, 2, 2048)
                  - layout.request_bytes(32_768, tp, 2, 2048))
        assert growth == 32_768 * layout.bytes_per_token(tp, 2)


def test_minimax_m3_layer_types_name_the_indexed_layers() -> None:
    """A config transformers writes lists layer_types: its minimax_m3_sparse layers attend in
    full and keep the indexer's key (it was refused as an unknown layer type)."""
    config = fixture("minimax-m3-nvfp4")
    text = dict(config["text_config"])
    text["layer_types"] = ["full_attention"] * 10 + ["minimax_m3_sparse"] * 50
    layout = kv_layout({**config, "text_config": text})
    assert (layout.full_layers, layout.indexer_layers) == (60, 50)


def test_minimax_m3_serving_assumptions_name_the_indexer() -> None:
    """The serving answer says which layers keep the indexer's key and how wide it is."""
    config = fixture("minimax-m3")
    shape = shape_of(config)
    items = dict(assumption_items(shape, kv_layout(config, shape), ServingJob()))
    assert items["indexer"] == {"layers": 57, "width": 128}
