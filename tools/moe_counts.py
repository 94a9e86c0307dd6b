"""Expected counts of the mixture-of-experts and MLA configs, as transformers and PEFT build them.

The companion of ``tools/model_counts.py`` for the families whose LoRA count depends on how the
experts are laid out (deepseek_v3 and its descendants, glm4_moe, glm4_moe_lite, glm_moe_dsa,
minimax_m2, gpt_oss, llama4). For each config named on the command line (a file under
``tests/fixtures/hf_configs/``) it builds the language model on the meta device (no memory,
nothing downloaded) with the installed transformers and writes, per slug:

* ``total``: ``sum(p.numel() for p in model.parameters())`` of the language model
  (``AutoModelForCausalLM`` of the config, or of its ``text_config`` for a multimodal
  checkpoint), tied weights once; ``embedding``, ``lm_head`` (0 when tied), ``norm`` (every
  parameter of a module whose class name contains ``Norm``);
* ``tower``: what the whole multimodal checkpoint (``AutoModelForImageTextToText``) holds
  beyond the language model (vision tower and projector); absent for a text-only config;
* ``active``: ``total`` less the parameters of the experts a token does not pass through: of
  every ``experts`` module (weights and biases, first dimension = experts), the share
  ``1 - num_experts_per_tok / experts`` (Gemma 4 names it ``top_k_experts``);
* ``lora_r16``: trainable parameters after ``get_peft_model(model, LoraConfig(r=16,
  target_modules="all-linear"))`` on the language model: what PEFT builds with transformers 5
  (fused expert tensors adapted as parameters, the fused gate/up at rank 2r, where PEFT's
  conversion table maps the model type; otherwise the experts are not adapted at all);
* ``lora_r16_per_expert``: the alternative convention, one linear layer per expert as
  transformers 4 built them: ``r * (in + out)`` for every ``nn.Linear`` of the blocks, every
  router weight, and every expert's gate, up and down projection (the fused gate/up tensor
  counted as two layers of half its width); on a model PEFT refuses "all-linear" for
  (Mamba hybrids, ``lora_note``), the layers it refuses are left out here too.

A multimodal checkpoint whose text model ``AutoModelForCausalLM`` does not map
(``qwen3_vl_moe``: transformers 5.25 registers its text config for no causal-LM class), or
whose ``text_config`` names no model type (MiniMax-M3's: the checkpoint's config class fills
it in), is built whole (``AutoModelForImageTextToText``) and every figure is taken from the
modules under ``language_model`` and ``lm_head`` (``lora_r16``: the trainable parameters PEFT
builds there when wrapping the whole checkpoint).

Model types transformers does not register but whose ``architectures`` it builds are mapped:
``kimi_k2`` (Kimi K2's own name for ``DeepseekV3ForCausalLM``) is built as ``deepseek_v3``;
``minimax_m3`` (MiniMax-M3's flat text config, ``MiniMaxM3ForCausalLM``) as
``minimax_m3_vl_text``, whose config class reads the same keys.
``quantization_config`` is dropped (the counts are of the bf16 module tree; gpt-oss's MXFP4
expert blocks hold the same number of parameters).

Run it where the ``calibrate`` extra is installed (torch, transformers, peft)::

    python -m tools.moe_counts tests/fixtures/hf_configs/gpt-oss-20b.json \
        --out tests/fixtures/hf_configs/expected_moe.json

An existing output file is updated: entries of configs not named are kept.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tools.model_counts import MAMBA_REFUSED, peft_all_linear

LORA_RANK = 16

# Model types whose checkpoints name an architecture transformers builds under another type.
BUILT_AS: dict[str, str] = {"kimi_k2": "deepseek_v3", "minimax_m3": "minimax_m3_vl_text"}


def _text_config(raw: dict[str, Any]) -> dict[str, Any] | None:
    text = raw.get("text_config")
    return dict(text) if isinstance(text, dict) else None


def _config(raw: dict[str, Any]) -> Any:
    from transformers import AutoConfig

    fields = {k: v for k, v in raw.items() if k not in ("quantization_config", "auto_map")}
    if isinstance(fields.get("text_config"), dict):
        text = dict(fields["text_config"])
        text.pop("quantization_config", None)
        text["model_type"] = BUILT_AS.get(text.get("model_type", ""), text.get("model_type"))
        fields["text_config"] = text
    model_type = BUILT_AS.get(fields.pop("model_type"), raw["model_type"])
    return AutoConfig.for_model(model_type, **fields)


def _language_model(raw: dict[str, Any]) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    text = _text_config(raw)
    config = _config(text if text is not None else raw)
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config)


def _whole_checkpoint(raw: dict[str, Any]) -> Any:
    import torch
    from transformers import AutoModelForImageTextToText

    with torch.device("meta"):
        return AutoModelForImageTextToText.from_config(_config(raw))


def unique_total(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def _is_language(name: str) -> bool:
    parts = name.split(".")
    return "language_model" in parts or parts[0] == "lm_head"


def _whole_counts(raw: dict[str, Any]) -> dict[str, Any]:
    """:func:`counts` of a multimodal checkpoint built whole, its language model's share."""
    from peft import LoraConfig, get_peft_model
    from torch import nn

    text = _text_config(raw) or {}
    model = _whole_checkpoint(raw)
    hidden = model.config.get_text_config().hidden_size
    per_token = int(text.get("num_experts_per_tok") or 0)
    params = dict(model.named_parameters())
    language = {n: p for n, p in params.items() if _is_language(n)}
    total = sum(p.numel() for p in language.values())
    inactive = sum(p.numel() * (p.shape[0] - per_token) // p.shape[0]
                   for n, p in language.items() if ".experts." in f".{n}" and p.dim() == 3)
    embedding = model.get_input_embeddings().weight
    tied = model.lm_head.weight is embedding
    norm = sum(p.numel() for n, m in model.named_modules() if _is_language(n)
               and "Norm" in type(m).__name__ for p in m.parameters(recurse=False))
    language_modules = [m for n, m in model.named_modules() if n.endswith("language_model")]
    per_expert = per_expert_lora(language_modules[0], hidden, LORA_RANK)
    result: dict[str, Any] = {
        "model_type": raw["model_type"],
        "built_as": type(model).__name__,
        "total": total,
        "embedding": embedding.numel(),
        "lm_head": 0 if tied else model.lm_head.weight.numel(),
        "norm": norm,
        "active": total - inactive,
        "lora_r16_per_expert": per_expert,
        "tower": unique_total(model) - total,
    }
    assert isinstance(model.lm_head, nn.Linear)
    peft_model = get_peft_model(model, LoraConfig(r=LORA_RANK, target_modules="all-linear"))
    result["lora_r16"] = sum(p.numel() for n, p in peft_model.named_parameters()
                             if p.requires_grad and "language_model" in n.split("."))
    return result


def per_expert_lora(model: Any, hidden: int, rank: int, refused: tuple[str, ...] = ()) -> int:
    """One adapter per expert: ``r * (in + out)`` for every linear layer of the blocks but
    those named in ``refused`` (what PEFT will not adapt on the model: a Mamba block's out_proj
    on nemotron_h), every router weight, every expert's gate, up and down projection."""
    from torch import nn

    total = 0
    for name, module in model.named_modules():
        if name.endswith("lm_head") or name.rsplit(".", 1)[-1] in refused:
            continue
        if isinstance(module, nn.Linear):
            total += rank * (module.in_features + module.out_features)
        elif name.rsplit(".", 1)[-1] in ("router", "gate") and not isinstance(module, nn.Linear):
            weight = getattr(module, "weight", None)
            if weight is not None and weight.dim() == 2:
                total += rank * (weight.shape[0] + weight.shape[1])
        elif name.rsplit(".", 1)[-1] == "experts":
            for pname, param in module.named_parameters(recurse=False):
                if param.dim() != 3:
                    continue
                experts, a, b = param.shape
                if pname == "gate_up_proj":  # two layers hidden -> width/2 each
                    total += rank * experts * (2 * hidden + (a + b - hidden))
                else:
                    total += rank * experts * (a + b)
    return total


def _per_token(text: dict[str, Any]) -> int:
    """The experts a token passes through: ``num_experts_per_tok``, Gemma 4's
    ``top_k_experts`` or Hunyuan's ``moe_topk`` (a number, or one per layer, all equal)."""
    chosen = (text.get("num_experts_per_tok") or text.get("top_k_experts")
              or text.get("moe_topk") or 0)
    return int(chosen[0] if isinstance(chosen, list) else chosen)


def _active(model: Any, per_token: int) -> int:
    inactive = 0
    for name, module in model.named_modules():
        if name.rsplit(".", 1)[-1] != "experts":
            continue
        for param in module.parameters(recurse=False):
            experts = param.shape[0]
            inactive += param.numel() * (experts - per_token) // experts
    return unique_total(model) - inactive


def counts(raw: dict[str, Any]) -> dict[str, Any]:
    text = _text_config(raw) or raw
    if _text_config(raw) is not None and "model_type" not in text:  # MiniMax-M3's text_config
        return _whole_counts(raw)
    try:
        model = _language_model(raw)
    except ValueError as refusal:
        if "Unrecognized configuration class" not in str(refusal):
            raise
        return _whole_counts(raw)
    config = model.config
    embedding = model.get_input_embeddings().weight.numel()
    tied = model.lm_head.weight is model.get_input_embeddings().weight
    norm = sum(
        p.numel() for m in model.modules() if "Norm" in type(m).__name__
        for p in m.parameters(recurse=False)
    )
    result: dict[str, Any] = {
        "model_type": raw["model_type"],
        "built_as": type(model).__name__,
        "total": unique_total(model),
        "embedding": embedding,
        "lm_head": 0 if tied else model.lm_head.weight.numel(),
        "norm": norm,
        "active": _active(model, _per_token(text)),
        "lora_r16_per_expert": per_expert_lora(model, config.hidden_size, LORA_RANK),
    }
    peft_model, note = peft_all_linear(model, lambda: _language_model(raw))
    if note is not None:  # a Mamba hybrid (nemotron_h): PEFT refuses out_proj and conv1d
        result["lora_note"] = note
        result["lora_r16_per_expert"] = per_expert_lora(
            _language_model(raw), config.hidden_size, LORA_RANK, MAMBA_REFUSED)
    result["lora_r16"] = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    if _text_config(raw) is not None:
        result["tower"] = unique_total(_whole_checkpoint(raw)) - result["total"]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)


    existing = json.loads(args.out.read_text()) if args.out.exists() else {}
    models = dict(existing.get("models", {}))
    for path in args.configs:
        raw = json.loads(path.read_text())
        models[path.stem] = counts(raw)
        print(path.stem, models[path.stem], file=sys.stderr)
        # written after each model: a long run keeps what it has counted
        write_counts(args.out, "tools/moe_counts.py", models)
    return 0


def write_counts(out: Path, tool: str, models: dict[str, Any]) -> None:
    """The truth file: the versions that counted, the LoRA setting, one entry per model."""
    import peft
    import torch
    import transformers

    document = {
        "about": f"Written by {tool} (see its docstring for each figure).",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "peft": peft.__version__},
        "lora": {"r": LORA_RANK, "target_modules": "all-linear"},
        "models": dict(sorted(models.items())),
    }
    out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
