"""What ``load_in_4bit`` really packs in a mixture-of-experts model, and what PEFT casts after.

Issue 16: transformers 5 keeps a mixture's experts as fused 3-D ``nn.Parameter`` tensors
(``gate_up_proj`` [E, 2I, H] and ``down_proj`` [E, H, I]; gpt-oss with biases), and its
bitsandbytes integration (``integrations/bitsandbytes.py``, ``replace_with_bnb_linear``) swaps
only ``nn.Linear`` (and GPT-2's ``Conv1D``) for ``bnb.nn.Linear4bit``. The question this script
answers by measurement, not by reading: which parameters does a QLoRA load leave packed in NF4,
which stay 16-bit, and what does ``peft.prepare_model_for_kbit_training`` (0.21.2,
``peft/utils/other.py``: "cast all non INT8 parameters to fp32") turn them into.

For each tiny random config below (the real model types, scaled down; nothing is downloaded) it
builds the bf16 model, saves it, loads it back with ``BitsAndBytesConfig(load_in_4bit=True,
bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=bfloat16)``
as the QLoRA recipes do, and records per class of parameter (experts, router, other block
weights, embeddings/head/norms):

* ``packed``: parameters stored as bitsandbytes ``Params4bit`` (counted by the shape their
  ``quant_state`` stands for), and ``linear4bit_modules``;
* ``unpacked``: the rest, by dtype, before and after ``prepare_model_for_kbit_training``;
* ``lora_r16``: what ``get_peft_model(LoraConfig(r=16, target_modules="all-linear"))`` trains
  on the prepared 4-bit model (the fused experts adapted as parameters where PEFT maps them).

Run it where torch 2.13, transformers, peft and bitsandbytes (0.50.x runs NF4 on a CPU) are
installed (the ``calibrate`` extra plus bitsandbytes)::

    python -m tools.moe_qlora_layout --out tests/fixtures/moe_qlora_layout.json

It takes about a minute on one CPU core. ``tests/engine/test_moe_qlora_layout.py`` holds the
engine's QLoRA base to the figures written here.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

LORA_RANK = 16

_ATTENTION = {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
              "hidden_size": 64, "vocab_size": 512, "max_position_embeddings": 4096,
              "tie_word_embeddings": False}

CONFIGS: dict[str, dict[str, Any]] = {
    "qwen3_moe": {**_ATTENTION, "model_type": "qwen3_moe", "num_hidden_layers": 2,
                  "intermediate_size": 96, "moe_intermediate_size": 32, "num_experts": 4,
                  "num_experts_per_tok": 2, "decoder_sparse_step": 1, "mlp_only_layers": [1]},
    "mixtral": {**_ATTENTION, "model_type": "mixtral", "num_hidden_layers": 2,
                "intermediate_size": 32, "num_local_experts": 4, "num_experts_per_tok": 2},
    "gpt_oss": {**_ATTENTION, "model_type": "gpt_oss", "num_hidden_layers": 2,
                "intermediate_size": 32, "num_local_experts": 4, "num_experts_per_tok": 2,
                "experts_per_token": 2, "sliding_window": 128,
                "layer_types": ["sliding_attention", "full_attention"]},
    "deepseek_v3": {**_ATTENTION, "model_type": "deepseek_v3", "num_hidden_layers": 2,
                    "num_key_value_heads": 4, "intermediate_size": 96,
                    "moe_intermediate_size": 32, "n_routed_experts": 4, "n_shared_experts": 1,
                    "num_experts_per_tok": 2, "first_k_dense_replace": 1, "n_group": 1,
                    "topk_group": 1, "q_lora_rank": 48, "kv_lora_rank": 32,
                    "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16},
    "glm4_moe": {**_ATTENTION, "model_type": "glm4_moe", "num_hidden_layers": 2,
                 "intermediate_size": 96, "moe_intermediate_size": 32, "n_routed_experts": 4,
                 "n_shared_experts": 1, "num_experts_per_tok": 2, "first_k_dense_replace": 1,
                 "n_group": 1, "topk_group": 1, "attention_bias": True},
    "minimax_m2": {**_ATTENTION, "model_type": "minimax_m2", "num_hidden_layers": 2,
                   "intermediate_size": 32, "num_local_experts": 4, "num_experts_per_tok": 2},
    "llama4_text": {**_ATTENTION, "model_type": "llama4_text", "num_hidden_layers": 2,
                    "intermediate_size": 32, "intermediate_size_mlp": 96,
                    "num_local_experts": 4, "num_experts_per_tok": 1,
                    "interleave_moe_layer_step": 2},
    "gemma4_text": {"model_type": "gemma4_text", "num_hidden_layers": 2, "hidden_size": 64,
                    "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
                    "head_dim": 16, "global_head_dim": 32, "num_global_key_value_heads": 1,
                    "attention_k_eq_v": True, "enable_moe_block": True, "num_experts": 4,
                    "top_k_experts": 2, "moe_intermediate_size": 32,
                    "hidden_size_per_layer_input": 0, "num_kv_shared_layers": 0,
                    "vocab_size": 512, "vocab_size_per_layer_input": 512,
                    "sliding_window": 128, "final_logit_softcapping": 30.0,
                    "max_position_embeddings": 4096, "tie_word_embeddings": True,
                    "layer_types": ["sliding_attention", "full_attention"]},
    # An nn.Linear router (``router.classifier``) over real and identity experts (issue 29).
    "longcat_flash": {"model_type": "longcat_flash", "num_layers": 1, "hidden_size": 64,
                      "ffn_hidden_size": 96, "expert_ffn_hidden_size": 32,
                      "n_routed_experts": 4, "zero_expert_num": 2, "moe_topk": 2,
                      "num_attention_heads": 4, "q_lora_rank": 48, "kv_lora_rank": 32,
                      "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16,
                      "vocab_size": 512, "max_position_embeddings": 4096},
}


def _kind(name: str, param: Any) -> str:
    """experts (the fused 3-D tensors and their biases), router, block (other decoder-layer
    weights and biases), rest (embeddings, lm_head, norms)."""
    leaf = name.rsplit(".", 2)
    if ".experts." in name and "shared" not in name:
        return "experts"
    if len(leaf) >= 2 and leaf[-2] in ("gate", "router") and param.dim() <= 2:
        return "router"
    if ".router.classifier." in name:  # LongCat-Flash's nn.Linear router
        return "router"
    if ".layers." in name and "norm" not in name:
        return "block"
    return "rest"


def _census(model: Any) -> dict[str, Any]:
    """Parameters per kind: packed (NF4, the params they stand for, with the bytes of the
    packed codes and of the quantisation state) and unpacked by dtype."""
    import torch

    from tools.calibrate.harness import quant_state_tensors

    out: dict[str, Any] = {}
    for name, param in model.named_parameters():
        entry = out.setdefault(_kind(name, param), {"packed": 0, "packed_bytes": 0,
                                                     "quant_state_bytes": 0, "unpacked": {}})
        state = getattr(param, "quant_state", None)
        if state is not None:
            entry["packed"] += int(torch.Size(state.shape).numel())
            entry["packed_bytes"] += param.numel() * param.element_size()
            entry["quant_state_bytes"] += sum(t.untyped_storage().nbytes()
                                              for t in quant_state_tensors(param))
        else:
            key = str(param.dtype).replace("torch.", "")
            entry["unpacked"][key] = entry["unpacked"].get(key, 0) + param.numel()
    return dict(sorted(out.items()))


def measure(raw: dict[str, Any]) -> dict[str, Any]:
    import bitsandbytes as bnb
    import torch
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    from transformers import AutoConfig, AutoModelForCausalLM, BitsAndBytesConfig

    fields = {k: v for k, v in raw.items() if k != "model_type"}
    config = AutoConfig.for_model(raw["model_type"], **fields)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    total = sum(p.numel() for p in model.parameters())
    qcfg = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                              bnb_4bit_use_double_quant=True,
                              bnb_4bit_compute_dtype=torch.bfloat16)
    with tempfile.TemporaryDirectory(prefix="moe-qlora-") as tmp:
        model.save_pretrained(tmp)
        del model
        loaded = AutoModelForCausalLM.from_pretrained(tmp, quantization_config=qcfg,
                                                      dtype=torch.bfloat16)
    result: dict[str, Any] = {
        "built_as": type(loaded).__name__,
        "total": total,
        "experts_classes": sorted({type(m).__name__ for n, m in loaded.named_modules()
                                   if n.endswith(".experts")}),
        "linear4bit_modules": sum(isinstance(m, bnb.nn.Linear4bit) for m in loaded.modules()),
        "loaded": _census(loaded),
    }
    prepared = prepare_model_for_kbit_training(loaded, use_gradient_checkpointing=False)
    result["prepared"] = _census(prepared)
    peft_model = get_peft_model(prepared, LoraConfig(r=LORA_RANK, target_modules="all-linear"))
    result["lora_r16"] = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    import bitsandbytes
    import peft
    import torch
    import transformers

    torch.set_num_threads(1)
    models: dict[str, Any] = {}
    for slug, raw in CONFIGS.items():
        models[slug] = {"config": raw, **measure(raw)}
        print(slug, json.dumps(models[slug]["prepared"]), file=sys.stderr)
    document = {
        "about": "Written by tools/moe_qlora_layout.py (see its docstring for each figure).",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "peft": peft.__version__, "bitsandbytes": bitsandbytes.__version__},
        "quantization": {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                         "bnb_4bit_use_double_quant": True,
                         "bnb_4bit_compute_dtype": "bfloat16"},
        "lora": {"r": LORA_RANK, "target_modules": "all-linear"},
        "models": models,
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
