"""Mixture-of-experts and hybrid families of 2025 releases the engine did not count (issue 29,
point 5): Granite 4.0's hybrids (``granitemoehybrid``) and ERNIE 4.5's mixture of experts
(``ernie4_5_moe``), Falcon-H1 (``falcon_h1``), Hunyuan (``hunyuan_v1_dense``,
``hunyuan_v1_moe``), EXAONE's MoE (``exaone_moe``), Arcee's AFMoE (``afmoe``) and poolside's
Laguna (``laguna``) went the approximate path as unknown types.

The truth is transformers and PEFT on the meta device (``expected_newer_moe.json``, written by
``tools/newer_moe_counts.py``; its ``versions``: transformers 5.24.0, PEFT 0.21.2, torch
2.13.0): each case's config (a config class's defaults, or a release's sizes as quoted in a
public note, the rest the class's defaults; the tool names which) built with
``AutoModelForCausalLM.from_config`` and counted, total, embedding, lm_head, norms and active
parameters, the linear split QLoRA packs (``nn.Linear`` weights beside fused expert tensors
and parameter routers), then LoRA r16 ``all-linear`` as PEFT builds it (``lora_r16``) and one
adapter per expert (``lora_r16_per_expert``, ``tools/moe_counts.py``'s convention)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine import parse_config
from app.engine.architectures.approximate import shape_of
from app.engine.errors import EngineError
from app.engine.serving_kv import kv_layout
from app.engine.shapes import ModelShape
from app.engine.states import LoraSetup, lora_trainable_params, packed_specs

EXPECTED: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
     / "expected_newer_moe.json").read_text())


def test_the_counts_are_transformers_5_24_s() -> None:
    assert EXPECTED["versions"]["transformers"] == "5.24.0"
    assert EXPECTED["versions"]["peft"] == "0.21.2"


@pytest.mark.parametrize("name", sorted(EXPECTED["models"]))
def test_parameters_equal_transformers(name: str) -> None:
    case = EXPECTED["models"][name]
    shape = shape_of(case["config"])
    assert shape.approximation is None, name
    assert shape.total_params == case["total"]
    assert shape.split.embedding == case["embedding"]
    assert shape.split.lm_head == case["lm_head"]
    assert shape.split.norm == case["norm"]
    assert shape.active_params == case["active"]


@pytest.mark.parametrize("name", sorted(EXPECTED["models"]))
def test_the_4bit_split_is_what_load_in_4bit_packs(name: str) -> None:
    """``split.linear``: every block linear layer, fused expert tensors and parameter routers
    included; of it QLoRA packs the ``nn.Linear`` weights (lm_head aside) and nothing else."""
    case = EXPECTED["models"][name]
    shape = parse_config(case["config"])
    assert shape.split.linear == case["linear"] + case["expert_tensors"] + case["routers"]
    assert sum(spec.weight_params for spec in packed_specs(shape)) == case["linear"]


@pytest.mark.parametrize("name", sorted(EXPECTED["models"]))
def test_lora_r16_equals_peft_and_one_adapter_per_expert(name: str) -> None:
    case = EXPECTED["models"][name]
    shape = parse_config(case["config"])
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == case["lora_r16"]
    per_expert = LoraSetup(rank=16, moe_lora="per-expert")
    # without experts both conventions are PEFT's (the tool's per-expert figure would add the
    # Mamba out_proj PEFT refuses on falcon_h1)
    expected = case["lora_r16_per_expert"] if shape.is_moe else case["lora_r16"]
    assert lora_trainable_params(shape, per_expert) == expected


def test_granite_4_h_small_is_32_billion_with_9_billion_active() -> None:
    shape = parse_config(EXPECTED["models"]["granite-4.0-h-small-sizes"]["config"])
    assert shape.total_params == 32_207_337_984
    assert shape.active_params == 8_803_121_664


def test_granite_hybrid_caches_keys_in_its_attention_layers_only() -> None:
    """36 Mamba-2 layers hold a fixed state per request (128 heads x 64 x 128 and a
    3-token convolution over x, B and C), the 4 attention layers 8 kv heads of 128."""
    config = EXPECTED["models"]["granite-4.0-h-small-sizes"]["config"]
    layout = kv_layout(config, parse_config(config))
    assert (layout.full_layers, layout.sliding_layers, layout.linear_layers) == (4, 0, 36)
    assert (layout.kv_heads, layout.head_dim) == (8, 128)
    conv_width = 8192 + 2 * 1 * 128
    assert layout.state_elements == 128 * 64 * 128 + 3 * conv_width


def test_granite_hybrid_without_layer_types_is_all_mamba() -> None:
    config = EXPECTED["models"]["granitemoehybrid-defaults"]["config"]
    layout = kv_layout(config, parse_config(config))
    assert (layout.full_layers, layout.linear_layers) == (0, 32)
    assert layout.state_elements == 128 * 64 * 256 + 3 * (8192 + 2 * 256)


def test_ernie_4_5_21b_is_21_8_billion_with_3_4_billion_active() -> None:
    shape = parse_config(EXPECTED["models"]["ernie-4.5-21b-a3b"]["config"])
    assert shape.total_params == 21_825_437_888
    assert shape.active_params == 3_352_150_208


@pytest.mark.parametrize(
    ("schedule", "sparse"),
    [({}, 27), ({"moe_layer_start_index": 0}, 28), ({"moe_layer_end_index": 13}, 13),
     ({"moe_layer_interval": 2}, 14), ({"moe_layer_interval": 3, "moe_layer_start_index": 4}, 8),
     ({"moe_layer_start_index": 20, "moe_layer_end_index": 10}, 0)],
)
def test_ernie_experts_sit_where_transformers_puts_them(schedule: dict[str, int],
                                                        sparse: int) -> None:
    """``Ernie4_5_MoeDecoderLayer``: layer i routes when (i + 1) % interval == 0 and start <= i
    <= end; counted here layer by layer against the closed form."""
    config = EXPECTED["models"]["ernie-4.5-21b-a3b"]["config"] | schedule
    start = schedule.get("moe_layer_start_index", 1)
    end = schedule.get("moe_layer_end_index", 27)
    interval = schedule.get("moe_layer_interval", 1)
    rule = sum(1 for i in range(28) if (i + 1) % interval == 0 and start <= i <= end)
    assert rule == sparse
    routers = [s.layers for s in parse_config(config).linears if s.role == "router"]
    assert sum(routers) == sparse


def test_ernie_caches_every_layer_at_its_kv_heads() -> None:
    config = EXPECTED["models"]["ernie-4.5-21b-a3b"]["config"]
    layout = kv_layout(config, parse_config(config))
    assert (layout.full_layers, layout.kv_heads, layout.head_dim) == (28, 4, 128)


def test_falcon_h1_caches_keys_and_a_mamba_state_in_every_layer() -> None:
    """FalconH1Config's defaults: 32 layers of 8 kv heads of 128 (4096 / 32), and per layer a
    Mamba state of 128 heads x 8 x 256 plus 3 tokens of the convolution over 1024 + 2 x 256."""
    config = EXPECTED["models"]["falcon_h1-defaults"]["config"]
    layout = kv_layout(config, parse_config(config))
    assert (layout.full_layers, layout.linear_layers) == (32, 32)
    assert (layout.kv_heads, layout.head_dim) == (8, 128)
    assert layout.state_elements == 128 * 8 * 256 + 3 * (1024 + 2 * 256)


def test_falcon_h1_lora_leaves_out_the_mamba_out_proj_peft_refuses() -> None:
    case = EXPECTED["models"]["falcon_h1-defaults"]
    assert "out_proj" not in case["lora_note"]
    shape = parse_config(case["config"])
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == case["lora_r16"] == 45_416_448


@pytest.mark.parametrize("name", sorted(EXPECTED["models"]))
def test_a_training_and_a_serving_estimate_answer(name: str) -> None:
    """Each case sizes end to end: a LoRA and a QLoRA step on an H200, and serving on one."""
    from app.engine import GpuSpec, Job, estimate
    from app.engine.serving import ServingGpu, ServingJob, serving_estimate

    config = EXPECTED["models"][name]["config"]
    shape = parse_config(config)
    card = GpuSpec("h200", "H200", 141 * 10**9, "9.0")
    for method in ("lora", "qlora"):
        result = estimate(shape, Job(seq_len=1024, method=method), [card])
        assert result.params.total == EXPECTED["models"][name]["total"]
    gpu = ServingGpu("h200", "H200", 141 * 10**9, "9.0")
    serving = serving_estimate(shape, kv_layout(config, shape), ServingJob(context=2048), [gpu])
    assert serving.fits


def test_hunyuan_moe_topk_per_layer_must_be_one_number() -> None:
    """transformers' gate reads ``moe_topk[layer_idx]``; the engine holds one count of active
    experts, so a list that varies is refused naming the field, a uniform one read."""
    from app.engine.shapes import ShapeError

    config = EXPECTED["models"]["hunyuan_v1_moe-gqa-biases"]["config"]
    assert parse_config(config).experts_per_token == 8
    with pytest.raises(ShapeError) as caught:
        parse_config(config | {"moe_topk": [8, 4] * 4})
    assert caught.value.field == "moe_topk"
    with pytest.raises(ShapeError) as caught:
        parse_config(config | {"moe_topk": [80] * 8})
    assert caught.value.field == "moe_topk"


def test_hunyuan_lora_skips_the_shared_mlp_as_peft_does() -> None:
    """Hunyuan MoE defaults: PEFT adapts attention, the router and the fused experts (gate/up
    at 2r) in 32 layers, 294,653,952 at r16; its shared MLP only per expert."""
    shape = parse_config(EXPECTED["models"]["hunyuan_v1_moe-defaults"]["config"])
    per_layer = 4 * 16 * (4096 + 4096) + 16 * (4096 + 8) + 8 * 32 * (4096 + 22016) \
        + 8 * 16 * (11008 + 4096)
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == 32 * per_layer == 294_653_952


def test_exaone_moe_slides_three_of_four_layers_by_default() -> None:
    """ExaoneMoeConfig: sliding_window 4096, sliding_window_pattern 4 (layers 3, 7, ... full)."""
    config = EXPECTED["models"]["exaone_moe-defaults"]["config"]
    layout = kv_layout(config, parse_config(config))
    assert (layout.full_layers, layout.sliding_layers, layout.window) == (8, 24, 4096)
    unwindowed = kv_layout(config | {"sliding_window": None}, parse_config(config))
    assert (unwindowed.full_layers, unwindowed.sliding_layers) == (32, 0)


def test_exaone_moe_reads_its_listed_mlp_kinds() -> None:
    """The listed variant: 5 sparse layers of 8 (``mlp_layer_types``), 3 dense."""
    shape = parse_config(EXPECTED["models"]["exaone_moe-gqa-listed"]["config"])
    routers = [s.layers for s in shape.linears if s.role == "router"]
    assert routers == [5]


def test_afmoe_lora_leaves_the_attention_gate_to_the_per_expert_convention() -> None:
    """PEFT renames every gate_proj onto the experts, the attention's output gate too: fused
    LoRA is attention q/k/v/o, the router and the experts (32 layers, 31 sparse), 427,949,056
    at r16; per expert adds the gate, the dense and the shared MLPs."""
    shape = parse_config(EXPECTED["models"]["afmoe-defaults"]["config"])
    attention = 32 * 4 * 16 * (2048 + 2048)
    routed = 31 * (16 * (2048 + 64) + 64 * 32 * (2048 + 2816) + 64 * 16 * (1408 + 2048))
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == attention + routed == 427_949_056


def test_afmoe_attends_in_full_every_fourth_layer_by_default() -> None:
    config = EXPECTED["models"]["afmoe-defaults"]["config"]
    layout = kv_layout(config, parse_config(config))
    assert (layout.full_layers, layout.sliding_layers, layout.window) == (8, 24, 1024)
    every_eighth = kv_layout(config | {"global_attn_every_n_layers": 8}, parse_config(config))
    assert (every_eighth.full_layers, every_eighth.sliding_layers) == (4, 28)


def test_laguna_lora_adapts_every_nn_linear_and_no_expert() -> None:
    """LagunaConfig's defaults: PEFT has no conversion for laguna, so all-linear adapts
    q/k/v/o and the per-head gate g_proj in 40 layers, layer 0's dense MLP and 39 shared
    experts, not the parameter router nor the fused experts: 21,043,200 at r16. Per expert adds
    the 256 experts and the router of each sparse layer."""
    shape = parse_config(EXPECTED["models"]["laguna-defaults"]["config"])
    attention = 40 * 16 * ((2048 + 6144) * 2 + (2048 + 1024) * 2 + (2048 + 48))
    mlps = 16 * 3 * (2048 + 8192) + 39 * 16 * 3 * (2048 + 512)
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == attention + mlps == 21_043_200
    experts = 39 * (256 * 16 * 3 * (2048 + 512) + 16 * (2048 + 256))
    per_expert = lora_trainable_params(shape, LoraSetup(rank=16, moe_lora="per-expert"))
    assert per_expert == 21_043_200 + experts == 1_249_314_816


def widths(shape: ModelShape, name: str) -> list[tuple[int, int]]:
    """Each output width of the linears called ``name`` and in how many layers."""
    return sorted((s.out_features, s.layers) for s in shape.linears if s.name == name)


def test_laguna_counts_each_layers_query_heads() -> None:
    """num_attention_heads_per_layer [8, 8, 4, 4, 8, 4]: three layers of 8 query heads and
    three of 4, each with a per-channel gate (gating "per-element"); a list that does not name
    every layer, or a head count keys and values cannot divide, is refused."""
    config = EXPECTED["models"]["laguna-heads-per-layer"]["config"]
    shape = parse_config(config)
    assert widths(shape, "q_proj") == widths(shape, "g_proj") == [(4 * 64, 3), (8 * 64, 3)]
    for heads in ([8] * 5, [8, 8, 4, 4, 8, 3]):
        with pytest.raises(EngineError) as refused:
            parse_config(config | {"num_attention_heads_per_layer": heads})
        assert refused.value.field == "num_attention_heads_per_layer"


def test_laguna_serves_its_listed_sliding_layers() -> None:
    """layer_types decides (3 of 6 slide over 256 tokens); without it every layer attends in
    full, whatever sliding_window LagunaConfig defaults to (512)."""
    config = EXPECTED["models"]["laguna-heads-per-layer"]["config"]
    layout = kv_layout(config, parse_config(config))
    assert (layout.full_layers, layout.sliding_layers, layout.window) == (3, 3, 256)
    unlisted = {k: v for k, v in config.items() if k != "layer_types"}
    layout = kv_layout(unlisted, parse_config(unlisted))
    assert (layout.full_layers, layout.sliding_layers) == (6, 0)


def test_step3p7_counts_its_vision_tower_frozen_beside_the_language_model() -> None:
    """Step3p7Config's defaults: 47 encoder layers 1,536 wide (an MLP of int(1536 x 8960/1536)
    = 8,960, two layer scales), 52 x 52 learned positions, two 3 x 3 downsamplers to 4 x 1,536
    and the projector to 4,096: 1,981,014,784, beside the language model, not in it. PEFT's
    all-linear on the whole checkpoint adapts the tower's linears too; the engine trains the
    language model's alone."""
    case = EXPECTED["models"]["step3p7-defaults"]
    shape = parse_config(case["config"])
    width, inner = 1536, 8960
    layer = 4 * (width * width + width) + 2 * width * inner + inner + width + 6 * width
    downsample = 2 * width * width * 9 + 2 * width + 8 * width * width * 9 + 4 * width
    embedding = 3 * 14 * 14 * width + 52 * 52 * width + 2 * width
    tower = embedding + 47 * layer + downsample + 4 * width * 4096
    assert shape.tower_params == tower == case["tower"] == 1_981_014_784
    assert case["lora_r16_tower"] > 0
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == case["lora_r16"] == 41_112_576


def test_step3p7_lora_adapts_every_nn_linear_and_no_expert() -> None:
    """No PEFT conversion for step3p7: all-linear adapts q/k/v/o and the per-head gate in 45
    layers, three dense MLPs and 42 shared experts; not the router nor the 288 fused experts,
    which per expert adds."""
    shape = parse_config(EXPECTED["models"]["step3p7-defaults"]["config"])
    attention = 45 * 16 * ((4096 + 8192) * 2 + (4096 + 1024) * 2 + (4096 + 64))
    mlps = 3 * 16 * 3 * (4096 + 11264) + 42 * 16 * 3 * (4096 + 1280)
    assert lora_trainable_params(shape, LoraSetup(rank=16)) == attention + mlps == 41_112_576
    experts = 42 * (288 * 16 * 3 * (4096 + 1280) + 16 * (4096 + 288))
    per_expert = lora_trainable_params(shape, LoraSetup(rank=16, moe_lora="per-expert"))
    assert per_expert == 41_112_576 + experts == 3_165_407_232
    assert (shape.total_params, shape.active_params) == (195_843_833_088, 10_875_026_688)


def test_step3p7_reads_a_hub_configs_legacy_keys() -> None:
    """attention_other_setting gives the 3 sliding layers 4 query heads (the full ones 8, each
    with a per-channel gate: gating false); moe_layers_enum "1,2,4,5,6" makes 4 of 6 layers
    sparse (6 is the MTP layer); layer_types padded with the MTP layer is cut to 6."""
    config = EXPECTED["models"]["step3p7-legacy-sliding"]["config"]
    shape = parse_config(config)
    assert widths(shape, "q_proj") == widths(shape, "g_proj") == [(4 * 64, 3), (8 * 64, 3)]
    assert widths(shape, "gate") == [(16, 4)]
    text = config["text_config"]
    for field, value in (("layer_types", ["full_attention"] * 5),
                         ("mlp_layer_types", ["dense"] * 6 + ["sparse"] * 2)):
        with pytest.raises(EngineError) as refused:
            parse_config(config | {"text_config": text | {field: value}})
        assert refused.value.field == field


@pytest.mark.parametrize("listed", ["1,2,\u00b2", "1," + "9" * 5000, ",".join(["1"] * 8),
                                    [1, 2, "x"]])
def test_step3p7_refuses_a_moe_layers_enum_it_cannot_read(listed: object) -> None:
    """A superscript digit (``str.isdigit`` says yes, ``int`` no), a digit run past ``int``'s
    limit and more entries than the layers and MTP layers (7) are field errors, not crashes."""
    config = EXPECTED["models"]["step3p7-legacy-sliding"]["config"]
    text = config["text_config"] | {"moe_layers_enum": listed}
    with pytest.raises(EngineError) as refused:
        parse_config(config | {"text_config": text})
    assert refused.value.field == "moe_layers_enum"


def test_step3p7_caches_keys_and_values_per_layer_as_its_dynamic_cache() -> None:
    """transformers 5.24's DynamicCache of the small checkpoint after 100 tokens holds 307,200
    bf16 bytes: 6 layers x 2 x 2 kv heads x 64 x 2 bytes a token, the 3 sliding ones within
    their 256-token window; the defaults' 45 full layers of 8 x 128: 184,320 bytes a token."""
    config = EXPECTED["models"]["step3p7-legacy-sliding"]["config"]
    layout = kv_layout(config, parse_config(config))
    assert (layout.full_layers, layout.sliding_layers, layout.window) == (3, 3, 256)
    assert 100 * layout.bytes_per_token(tp=1, dtype_bytes=2) == 307_200
    defaults = EXPECTED["models"]["step3p7-defaults"]["config"]
    layout = kv_layout(defaults, parse_config(defaults))
    assert (layout.full_layers, layout.sliding_layers) == (45, 0)
    assert layout.bytes_per_token(tp=1, dtype_bytes=2) == 2 * 45 * 8 * 128 * 2 == 184_320
