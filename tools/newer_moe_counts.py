"""Expected counts of the newer MoE and hybrid families, as transformers and PEFT build them.

The companion of ``tools/moe_counts.py`` for configurations written here rather than copied
from a release: each case below is a ``config.json`` as a release or transformers' own config
class spells it (fields left out take the config class's defaults, as ``from_pretrained`` does).
Every case is built on the meta device with ``AutoModelForCausalLM.from_config`` and counted as
``tools/moe_counts.py`` counts (``total``, ``embedding``, ``lm_head``, ``norm``, ``active``,
``lora_r16`` from PEFT's ``all-linear``, ``lora_r16_per_expert``); the config itself is stored
beside its counts. ``active``: the experts' tensors scaled by the share of experts a token
passes through, the config's ``num_experts_per_tok`` as transformers resolves it
(``moe_k`` on ERNIE 4.5).

Run it where the ``calibrate`` extra is installed (torch, transformers, peft)::

    python -m tools.newer_moe_counts --out tests/fixtures/hf_configs/expected_newer_moe.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools.model_counts import peft_all_linear
from tools.moe_counts import LORA_RANK, per_expert_lora, unique_total, write_counts

GRANITE_4_H_SMALL_LAYERS = ["mamba"] * 5 + ["attention"] + ["mamba"] * 9 + ["attention"] \
    + ["mamba"] * 9 + ["attention"] + ["mamba"] * 9 + ["attention"] + ["mamba"] * 4

CASES: dict[str, dict[str, Any]] = {
    # GraniteMoeHybridConfig's defaults: 32 Mamba-2 layers, 8 experts (2 active), a shared MLP;
    # the sizes every config names written out, the Mamba and MoE ones left to the class.
    "granitemoehybrid-defaults": {
        "model_type": "granitemoehybrid", "vocab_size": 32000, "hidden_size": 4096,
        "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
        "max_position_embeddings": 2048,
    },
    # Granite-4.0-H-Small's sizes as a public sizing note quotes its config.json (36 Mamba-2 and
    # 4 attention layers; where in the stack does not change a count), the rest class defaults.
    "granite-4.0-h-small-sizes": {
        "model_type": "granitemoehybrid", "hidden_size": 4096, "num_hidden_layers": 40,
        "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 72,
        "num_experts_per_tok": 10, "shared_intermediate_size": 1536, "intermediate_size": 768,
        "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_expand": 2,
        "tie_word_embeddings": True, "vocab_size": 100352,
        "layer_types": GRANITE_4_H_SMALL_LAYERS,
    },
    # The dense hybrid (Granite 4.0 H-Micro's shape: no experts, the shared MLP alone), with
    # biases on attention and the Mamba projections.
    "granitemoehybrid-dense-biases": {
        "model_type": "granitemoehybrid", "hidden_size": 2048, "num_hidden_layers": 8,
        "num_attention_heads": 16, "num_key_value_heads": 4, "num_local_experts": 0,
        "shared_intermediate_size": 8192, "vocab_size": 100352, "mamba_n_heads": 64,
        "mamba_d_state": 128, "attention_bias": True, "mamba_proj_bias": True,
        "mamba_conv_bias": False, "tie_word_embeddings": True,
        "layer_types": ["mamba", "mamba", "mamba", "attention"] * 2,
    },
    # Ernie4_5_MoeConfig's defaults are ERNIE-4.5-21B-A3B's (64 experts, 6 active, 2 shared,
    # layer 0 dense), the sizes as a public port quotes that release's config.json.
    "ernie-4.5-21b-a3b": {
        "model_type": "ernie4_5_moe", "hidden_size": 2560, "intermediate_size": 12288,
        "max_position_embeddings": 131072, "num_attention_heads": 20, "num_key_value_heads": 4,
        "num_hidden_layers": 28, "vocab_size": 103424, "use_bias": False,
        "tie_word_embeddings": True, "moe_num_experts": 64, "moe_layer_start_index": 1,
        "moe_intermediate_size": 1536, "moe_k": 6, "moe_num_shared_experts": 2,
    },
    # FalconH1Config's defaults (a 32-layer parallel hybrid: attention, Mamba-2 and a SwiGLU MLP
    # in every layer; the Mamba inner width mamba_d_ssm 1024), the sizes written out.
    "falcon_h1-defaults": {
        "model_type": "falcon_h1", "vocab_size": 128000, "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "max_position_embeddings": 8192,
    },
    # The Mamba width from mamba_expand (mamba_d_ssm null), its gated RMSNorm, biases, tied.
    "falcon_h1-norm-biases": {
        "model_type": "falcon_h1", "vocab_size": 65536, "hidden_size": 1024,
        "intermediate_size": 2048, "num_hidden_layers": 6, "num_attention_heads": 8,
        "num_key_value_heads": 2, "head_dim": 64, "mamba_d_ssm": None, "mamba_n_heads": 32,
        "mamba_d_head": 64, "mamba_n_groups": 2, "mamba_d_state": 128, "mamba_rms_norm": True,
        "attention_bias": True, "mlp_bias": True, "mamba_proj_bias": True,
        "projectors_bias": True, "mamba_conv_bias": False, "tie_word_embeddings": True,
    },
    # HunYuanMoEV1Config's defaults with the head width set (the class leaves head_dim None,
    # which its attention cannot build) and 8 experts, 2 a token (the class's 1 and 1 route
    # nothing); the sizes written out.
    "hunyuan_v1_moe-defaults": {
        "model_type": "hunyuan_v1_moe", "vocab_size": 290943, "hidden_size": 4096,
        "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
        "max_position_embeddings": 2048, "head_dim": 128, "num_experts": 8, "moe_topk": 2,
    },
    # Grouped-query attention with biases, 64 experts and moe_topk as a per-layer list (the
    # spelling Hunyuan's releases use), tied.
    "hunyuan_v1_moe-gqa-biases": {
        "model_type": "hunyuan_v1_moe", "vocab_size": 128167, "hidden_size": 2048,
        "intermediate_size": 1024, "num_hidden_layers": 8, "num_attention_heads": 16,
        "num_key_value_heads": 4, "head_dim": 128, "num_experts": 64, "moe_topk": [8] * 8,
        "attention_bias": True, "tie_word_embeddings": True,
    },
    # HunYuanDenseV1Config's defaults with the head width set, and a tied GQA variant.
    "hunyuan_v1_dense-defaults": {
        "model_type": "hunyuan_v1_dense", "vocab_size": 290943, "hidden_size": 4096,
        "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
        "max_position_embeddings": 2048, "head_dim": 128,
    },
    "hunyuan_v1_dense-gqa-tied": {
        "model_type": "hunyuan_v1_dense", "vocab_size": 128167, "hidden_size": 3072,
        "intermediate_size": 8192, "num_hidden_layers": 8, "num_attention_heads": 24,
        "num_key_value_heads": 8, "head_dim": 128, "attention_bias": True,
        "tie_word_embeddings": True,
    },
    # ExaoneMoeConfig's defaults (64 experts, 8 a token, one shared, layer 0 dense), the sizes
    # written out; and a GQA variant that lists its MLP kinds, two shared experts, tied.
    "exaone_moe-defaults": {
        "model_type": "exaone_moe", "vocab_size": 102400, "hidden_size": 4096,
        "intermediate_size": 16384, "num_hidden_layers": 32, "num_attention_heads": 32,
        "max_position_embeddings": 2048,
    },
    "exaone_moe-gqa-listed": {
        "model_type": "exaone_moe", "vocab_size": 102400, "hidden_size": 2048,
        "intermediate_size": 8192, "num_hidden_layers": 8, "num_attention_heads": 16,
        "num_key_value_heads": 4, "head_dim": 128, "num_experts": 32, "num_experts_per_tok": 4,
        "moe_intermediate_size": 512, "num_shared_experts": 2, "tie_word_embeddings": True,
        "mlp_layer_types": ["dense", "dense", "sparse", "sparse", "dense", "sparse", "sparse",
                            "sparse"],
    },
    # LagunaConfig's defaults (transformers 5.24; its docstring names poolside/laguna-XS.2): 40
    # layers of 48 heads, the first a dense SwiGLU MLP, then 256 experts (8 active) and a
    # shared expert, a softplus output gate per head; the sizes every config names written out.
    "laguna-defaults": {
        "model_type": "laguna", "vocab_size": 100352, "hidden_size": 2048,
        "intermediate_size": 8192, "num_hidden_layers": 40, "num_attention_heads": 48,
        "num_key_value_heads": 8, "max_position_embeddings": 131072,
    },
    # Heads per layer, a gate per channel, biases, two dense layers, sliding layers, tied.
    "laguna-heads-per-layer": {
        "model_type": "laguna", "vocab_size": 32000, "hidden_size": 512,
        "intermediate_size": 1536, "num_hidden_layers": 6, "num_attention_heads": 8,
        "num_key_value_heads": 2, "head_dim": 64,
        "num_attention_heads_per_layer": [8, 8, 4, 4, 8, 4],
        "gating": "per-element", "attention_bias": True, "tie_word_embeddings": True,
        "mlp_layer_types": ["dense", "sparse", "dense", "sparse", "sparse", "sparse"],
        "layer_types": ["sliding_attention", "full_attention"] * 3, "sliding_window": 256,
        "num_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 256,
        "shared_expert_intermediate_size": 384,
    },
    # Step3p7Config's defaults (transformers 5.24; its docstring names stepfun-ai/Step-3.7-Flash):
    # the whole checkpoint, Step3p7TextConfig's language model (45 layers, the first three dense,
    # then 288 experts, 8 active, and a shared expert; a sigmoid gate per head) beside
    # Step3p7VisionConfig's tower (47 layers) and its projector; no release config read.
    "step3p7-defaults": {"model_type": "step3p7"},
    # A small checkpoint in the legacy keys a hub config writes (moe_layers_enum,
    # attention_other_setting, per-layer lists padded with the MTP layers), sliding layers with
    # their own head count, a gate per channel, biases, tied; a small vision tower.
    "step3p7-legacy-sliding": {
        "model_type": "step3p7", "tie_word_embeddings": True, "projector_bias": True,
        "vision_config": {"width": 128, "layers": 2, "heads": 4, "image_size": 56,
                          "patch_size": 14},
        "text_config": {
            "vocab_size": 32000, "hidden_size": 512, "intermediate_size": 1536,
            "num_hidden_layers": 6, "num_attention_heads": 8, "num_key_value_heads": 2,
            "head_dim": 64, "gating": False, "attention_bias": True, "mlp_bias": True,
            "tie_word_embeddings": True, "num_nextn_predict_layers": 1,
            "layer_types": ["full_attention", "sliding_attention"] * 3 + ["full_attention"],
            "sliding_window": 256, "attention_other_setting": {"num_attention_heads": 4},
            "moe_layers_enum": "1,2,4,5,6", "n_routed_experts": 16, "num_experts_per_tok": 4,
            "moe_intermediate_size": 256, "share_expert_dim": 384,
        },
    },
    # AfmoeConfig's defaults (Arcee's AFMoE: gated attention, 64 experts, 6 a token, two shared,
    # one dense layer), the sizes written out; and a GQA variant with attention biases, three
    # dense layers, tied.
    "afmoe-defaults": {
        "model_type": "afmoe", "vocab_size": 200192, "hidden_size": 2048,
        "intermediate_size": 6144, "moe_intermediate_size": 1408, "num_hidden_layers": 32,
        "num_attention_heads": 16, "head_dim": 128, "max_position_embeddings": 16384,
    },
    "afmoe-gqa-biases": {
        "model_type": "afmoe", "vocab_size": 200192, "hidden_size": 1024,
        "intermediate_size": 3072, "moe_intermediate_size": 256, "num_hidden_layers": 8,
        "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,
        "num_experts": 32, "num_experts_per_tok": 4, "num_shared_experts": 1,
        "num_dense_layers": 3, "attention_bias": True, "tie_word_embeddings": True,
    },
    # Biases everywhere (lm_head's too), untied, experts every second layer from 2 to 9, and
    # no shared expert.
    "ernie4_5_moe-biases-interval": {
        "model_type": "ernie4_5_moe", "hidden_size": 1024, "intermediate_size": 3072,
        "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 128,
        "num_hidden_layers": 12, "vocab_size": 103424, "use_bias": True,
        "tie_word_embeddings": False, "moe_num_experts": 16, "moe_k": 4,
        "moe_intermediate_size": 512, "moe_num_shared_experts": 0,
        "moe_layer_start_index": 2, "moe_layer_end_index": 9, "moe_layer_interval": 2,
    },
}


def _everything(name: str) -> bool:
    return True


def module_split(model: Any, keep: Callable[[str], bool] = _everything) -> dict[str, int]:
    """Of the modules and parameters whose names ``keep`` takes: the norms, and as
    tools/model_counts.py the 4-bit split: ``nn.Linear`` weights but lm_head (what
    load_in_4bit packs), fused 3-D expert tensors, routers held as parameters."""
    from torch import nn

    named = {n: p for n, p in model.named_parameters() if keep(n)}
    modules = {n: m for n, m in model.named_modules() if keep(n)}
    linears = {n: m for n, m in modules.items() if isinstance(m, nn.Linear)}
    linear_weights = {id(m.weight) for m in linears.values()}
    return {
        "norm": sum(p.numel() for m in modules.values() if "Norm" in type(m).__name__
                    for p in m.parameters(recurse=False)),
        "linear": sum(m.weight.numel() for n, m in linears.items()
                      if n.split(".")[-1] != "lm_head"),
        "expert_tensors": sum(p.numel() for n, p in named.items()
                              if p.dim() == 3 and ".experts." in f".{n}"),
        "routers": sum(p.numel() for n, p in named.items()
                       if p.dim() == 2 and id(p) not in linear_weights
                       and n.endswith(("gate.weight", "router.weight"))),
    }


def _figures(raw: dict[str, Any], model: Any, total: int, inactive: int) -> dict[str, Any]:
    """The config, the class that built it, its total, embedding, lm_head and active count."""
    embedding = model.get_input_embeddings().weight
    tied = model.lm_head.weight is embedding
    return {"config": raw, "built_as": type(model).__name__, "total": total,
            "embedding": embedding.numel(),
            "lm_head": 0 if tied else model.lm_head.weight.numel(), "active": total - inactive}


def _language(name: str) -> bool:
    parts = name.split(".")
    return "language_model" in parts or parts[0] == "lm_head"


def whole_counts(raw: dict[str, Any]) -> dict[str, Any]:
    """:func:`counts` of a multimodal checkpoint no ``AutoModelForCausalLM`` maps (``step3p7``):
    built whole (``AutoModelForImageTextToText``), every figure of the modules under
    ``language_model`` and ``lm_head``; ``tower``: the rest (vision tower and projector);
    ``lora_r16``: what PEFT's ``all-linear`` on the whole checkpoint trains in the language
    model, ``lora_r16_tower``: what it trains beside it."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForImageTextToText

    fields = dict(raw)
    config = AutoConfig.for_model(fields.pop("model_type"), **fields)
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    text = config.get_text_config()
    per_token = int(text.num_experts_per_tok)
    language = {n: p for n, p in model.named_parameters() if _language(n)}
    total = sum(p.numel() for p in language.values())
    inactive = sum(p.numel() * (p.shape[0] - per_token) // p.shape[0]
                   for n, p in language.items() if ".experts." in f".{n}" and p.dim() == 3)
    root = next(m for n, m in model.named_modules() if n.endswith("language_model"))
    result: dict[str, Any] = {
        **_figures(raw, model, total, inactive),
        **module_split(model, _language),
        "lora_r16_per_expert": per_expert_lora(root, text.hidden_size, LORA_RANK),
        "tower": sum(p.numel() for p in model.parameters()) - total,
    }
    peft_model = get_peft_model(
        model, LoraConfig(r=LORA_RANK, lora_alpha=2 * LORA_RANK, target_modules="all-linear"))
    trained = {n: p.numel() for n, p in peft_model.named_parameters() if p.requires_grad}
    result["lora_r16"] = sum(v for n, v in trained.items() if "language_model" in n.split("."))
    result["lora_r16_tower"] = sum(trained.values()) - result["lora_r16"]
    return result


def counts(raw: dict[str, Any]) -> dict[str, Any]:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if raw["model_type"] == "step3p7":
        return whole_counts(raw)

    fields = dict(raw)
    config = AutoConfig.for_model(fields.pop("model_type"), **fields)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    per_token = getattr(config, "num_experts_per_tok", None) or getattr(config, "moe_topk", 0)
    per_token = int(per_token[0] if isinstance(per_token, list) else per_token or 0)
    inactive = 0
    for name, module in model.named_modules():
        if name.rsplit(".", 1)[-1] == "experts":
            for param in module.parameters(recurse=False):
                inactive += param.numel() * (param.shape[0] - per_token) // param.shape[0]
    total = unique_total(model)
    result: dict[str, Any] = {
        **_figures(raw, model, total, inactive),
        **module_split(model),
        "lora_r16_per_expert": per_expert_lora(model, config.hidden_size, LORA_RANK),
    }
    def rebuild() -> Any:
        with torch.device("meta"):
            return AutoModelForCausalLM.from_config(config)

    peft_model, note = peft_all_linear(model, rebuild)
    if note is not None:  # PEFT refuses "all-linear" on Mamba models (falcon_h1)
        result["lora_note"] = note
    result["lora_r16"] = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args(argv)


    existing = json.loads(args.out.read_text()) if args.out.exists() else {}
    models = dict(existing.get("models", {}))
    for name, raw in CASES.items():
        if args.only and name not in args.only:
            continue
        models[name] = counts(raw)
        print(name, {k: v for k, v in models[name].items() if k != "config"}, file=sys.stderr)
    write_counts(args.out, "tools/newer_moe_counts.py", models)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
