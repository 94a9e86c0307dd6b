"""Expected parameter counts of real ``config.json`` files, as transformers and PEFT build them.

For every config under ``tests/fixtures/hf_configs/`` (or the ones named with ``--only``) this
builds the model on the meta device (no memory, nothing downloaded) with the installed
transformers, counts its parameters, wraps it with PEFT LoRA (``r=16``,
``target_modules="all-linear"``, as ``LoraConfig`` documents it) and counts the adapters, and
writes one JSON object per config:

* ``total``: ``sum(p.numel() for p in model.parameters())``, tied weights once, of the whole
  checkpoint as ``AutoModelForCausalLM`` (or, for an image-text checkpoint that it does not
  map, ``AutoModelForImageTextToText``) builds it;
* ``text_total``: the language model alone (decoder and lm_head), without the vision or audio
  tower and their projector; ``tower``: the difference; ``audio_tower``: of it, the audio
  encoder and its embedder (modules named ``audio_tower``/``embed_audio``; Gemma 4 E2B, E4B),
  written only where there is one;
* ``linear``: weights of the ``nn.Linear`` layers of the language model, lm_head excluded
  (what bitsandbytes stores in 4 bit): those of the decoder blocks and any beside them, such
  as Gemma 4's ``per_layer_model_projection``; ``expert_tensors``: parameters of the
  fused 3-D expert tensors transformers 5 builds for mixtures of experts;
  ``routers``: router weights that are parameters rather than ``nn.Linear`` (transformers 5);
* ``lora_r16``: trainable parameters after ``get_peft_model`` on the whole checkpoint;
  ``lora_r16_text``: those of them inside the language model (what adapting the text model
  alone trains; the engine's figure, the tower staying frozen).

The engine is held to these numbers by ``tests/engine/test_hf_configs.py``. Run it where the
``calibrate`` extra is installed (torch, transformers, peft)::

    python -m tools.model_counts --only qwen3-next-80b-a3b-instruct \
        --out tests/fixtures/hf_configs/expected_hybrid.json

An existing output file is updated (entries of other configs are kept), so helpers working on
different families can each keep their own expected file or share one.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

CONFIG_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "hf_configs"
LORA_RANK = 16
# PEFT's _check_lora_target_modules_mamba: modules it will not adapt on Mamba-based models.
MAMBA_REFUSED = ("out_proj", "conv1d")

# Module names, below the top model, that hold the language model of a multimodal checkpoint
# (transformers 5: ``model.language_model`` beside ``model.vision_tower`` / ``model.visual``).
LANGUAGE_MODEL_NAMES = ("language_model",)
# Modules holding an audio encoder and its projection into the text width (Gemma 4).
AUDIO_MODULE_NAMES = ("audio_tower", "embed_audio")


def _build(raw: dict[str, Any]) -> Any:
    import torch
    from transformers import (
        AutoConfig,
        AutoModelForCausalLM,
        AutoModelForImageTextToText,
    )

    config = AutoConfig.for_model(**raw)
    with torch.device("meta"):
        if "vision_config" in raw:  # the whole checkpoint, tower included
            return AutoModelForImageTextToText.from_config(config)
        return AutoModelForCausalLM.from_config(config)


def peft_all_linear(model: Any, rebuild: Callable[[], Any]) -> tuple[Any, str | None]:
    """``get_peft_model`` with LoRA r16 on ``"all-linear"``, and a note where PEFT refuses it.

    PEFT refuses "all-linear" on Mamba models (``_check_lora_target_modules_mamba``: out_proj,
    conv1d); every other linear leaf name is what a user has to list instead, counted on a
    fresh model from ``rebuild`` (the refused call has already wrapped some layers)."""
    import torch
    from peft import LoraConfig, get_peft_model

    try:
        return get_peft_model(
            model, LoraConfig(r=LORA_RANK, lora_alpha=2 * LORA_RANK, target_modules="all-linear")
        ), None
    except ValueError as refusal:
        if "incompatible with Mamba" not in str(refusal):
            raise
    model = rebuild()
    names = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules()
                    if isinstance(m, torch.nn.Linear)} - {"lm_head", *MAMBA_REFUSED})
    peft_model = get_peft_model(
        model, LoraConfig(r=LORA_RANK, lora_alpha=2 * LORA_RANK, target_modules=names))
    return peft_model, f"all-linear refused by PEFT; counted with target_modules={names}"


def _unique_params(module: Any) -> dict[int, tuple[str, Any]]:
    seen: dict[int, tuple[str, Any]] = {}
    for name, param in module.named_parameters(remove_duplicate=True):
        seen.setdefault(id(param), (name, param))
    return seen


def _is_language(name: str) -> bool:
    parts = name.split(".")
    return any(part in LANGUAGE_MODEL_NAMES for part in parts) or parts[0] == "lm_head"


def _multimodal(model: Any) -> bool:
    return any(_is_language(n) and n.split(".")[0] != "lm_head"
               for n, _ in model.named_parameters())


def counts(raw: dict[str, Any]) -> dict[str, Any]:
    """The figures of one config (module docstring)."""
    import torch

    model = _build(raw)
    params = _unique_params(model)
    total = sum(p.numel() for _, p in params.values())
    multimodal = _multimodal(model)
    text_total = (
        sum(p.numel() for n, p in params.values() if _is_language(n)) if multimodal else total
    )
    linear = 0
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear) or name.split(".")[-1] == "lm_head":
            continue
        if multimodal and not _is_language(name):
            continue
        linear += module.weight.numel()
    experts = sum(
        p.numel() for n, p in params.values()
        if p.dim() == 3 and ".experts." in f".{n}" and (not multimodal or _is_language(n))
    )
    linear_weights = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Linear)}
    routers = sum(
        p.numel() for n, p in params.values()
        if p.dim() == 2 and id(p) not in linear_weights
        and n.endswith(("gate.weight", "router.weight"))
        and (not multimodal or _is_language(n))
    )
    peft_model, note = peft_all_linear(model, lambda: _build(raw))
    lora = 0
    lora_text = 0
    for name, param in peft_model.named_parameters():
        if not param.requires_grad:
            continue
        lora += param.numel()
        if not multimodal or any(part in LANGUAGE_MODEL_NAMES for part in name.split(".")):
            lora_text += param.numel()
    import peft
    import transformers

    audio = sum(p.numel() for n, p in params.values()
                if any(part in AUDIO_MODULE_NAMES for part in n.split(".")))
    return {
        "model_type": raw.get("model_type"),
        "class": type(model).__name__,
        "total": total,
        "text_total": text_total,
        "tower": total - text_total,
        **({"audio_tower": audio} if audio else {}),
        "linear": linear,
        "expert_tensors": experts,
        "routers": routers,
        "lora_r16": lora,
        "lora_r16_text": lora_text,
        "lora_note": note,
        "versions": {"transformers": transformers.__version__, "peft": peft.__version__,
                     "torch": torch.__version__},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=Path, default=CONFIG_DIR)
    parser.add_argument("--only", default="", help="comma-separated slugs (file names less .json)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    slugs = [s.strip() for s in args.only.split(",") if s.strip()]
    paths = [args.configs / f"{slug}.json" for slug in slugs] if slugs else sorted(
        p for p in args.configs.glob("*.json") if not p.name.startswith("expected")
    )
    expected: dict[str, Any] = (
        json.loads(args.out.read_text()) if args.out.exists() else {}
    )
    failed = 0
    for path in paths:
        raw = json.loads(path.read_text())
        try:
            expected[path.stem] = counts(raw)
        except Exception as error:  # report and go on: one unsupported config is not the run
            failed += 1
            print(f"{path.stem}: {type(error).__name__}: {error}", file=sys.stderr)
            continue
        print(f"{path.stem}: {expected[path.stem]['total']:,} params", file=sys.stderr)
    args.out.write_text(json.dumps(dict(sorted(expected.items())), indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
