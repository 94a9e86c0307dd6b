"""The wording of "How we calculate": each engine term's title, formula and source, by key.

The engine (``app.engine.documentation.TERMS``) gives a term's key and the constants its
formula quotes; this table words them as English msgids with a placeholder per constant, so
a German reader gets the whole page in German with the numbers the German way, and the
English page says what the engine's own text said before. A test holds the
keys and placeholders of this table to the engine's terms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from app.html.forms import N_


@dataclass(frozen=True, slots=True)
class TermText:
    """A term's heading, its formula in words and where the formula comes from (msgids)."""

    title: str
    formula: str
    source: str


TERM_TEXTS: Final[dict[str, TermText]] = {
    "parameters": TermText(
        N_("Parameters"),
        N_("Counted per architecture from config.json exactly as transformers builds the "
           "model: attention q/k/v/o with grouped-query key/value heads and explicit head_dim, "
           "gated MLP (gate, up, down), norms, embeddings, lm_head (0 when tied), biases, "
           "experts and router; split into block linear layers, embeddings, lm_head, norms "
           "and other"),
        N_("Hugging Face transformers model code; checked against transformers' own counts "
           "for every seed model"),
    ),
    "full-zero": TermText(
        N_("Full fine-tuning, ZeRO accounting"),
        N_("%(weights)s (bf16 weights) + %(gradients)s (gradients) + %(master)s (fp32 master) "
           "+ %(moments)s (Adam moments) = %(total)s bytes per parameter"),
        N_("Rajbhandari et al., ZeRO, arXiv 1910.02054, section 3.1"),
    ),
    "full-hf": TermText(
        N_("Full fine-tuning, Hugging Face accounting"),
        N_("%(weights)s (fp32 weights + half-precision copy) + %(gradients)s (fp32 gradients) "
           "+ %(moments)s (Adam moments) = %(total)s bytes per parameter"),
        N_("Hugging Face docs, model training anatomy"),
    ),
    "optimizers": TermText(
        N_("Optimizer states"),
        N_("AdamW %(adamw)s, 8-bit AdamW %(adamw_8bit)s, SGD with momentum %(sgd)s bytes per "
           "trained parameter; paged variants the same bytes; Adafactor a factored second "
           "moment (rows + columns per matrix, fp32)"),
        N_("PyTorch AdamW; Dettmers et al., 8-bit optimizers, arXiv 2110.02861; Shazeer & "
           "Stern, Adafactor, arXiv 1804.04235"),
    ),
    "lora": TermText(
        N_("LoRA adapter"),
        N_("r x (m + n) trainable parameters per adapted m -> n layer; %(weights)s + "
           "%(gradients)s + %(moments)s = %(total)s bytes each with AdamW; frozen base "
           "%(frozen)s bytes per parameter (bf16)"),
        N_("Hu et al., LoRA, arXiv 2106.09685; PEFT (adapters kept in fp32)"),
    ),
    "qlora": TermText(
        N_("QLoRA base"),
        N_("block linear layers in NF4: %(nf4_dq_bits)s bits per parameter with double "
           "quantisation, %(nf4_bits)s without, plus the quantisation state per module; under "
           "mixed precision PEFT's prepare_model_for_kbit_training makes embeddings, lm_head, "
           "norms and biases fp32 (the residual stream and the MLP's intermediates fp32 too, "
           "lm_head cast to bf16 for its matmul), under pure bf16 and under FSDP (one dtype "
           "per flattened layer) they stay bf16; one layer "
           "dequantised to bf16 at a time; bitsandbytes 0.41-0.43.1 also kept every 4-bit "
           "layer's input (bnb_saves_inputs). A mixture of experts under moe_lora fused "
           "(transformers 5) keeps its fused expert tensors and routers 16-bit, fp32 after "
           "prepare_model_for_kbit_training: 4-bit loading packs only nn.Linear layers "
           "(tools/moe_qlora_layout.py); per-expert (transformers 4) packs them in NF4. PEFT "
           "merges each adapted fused expert tensor with its adapter on every forward and "
           "keeps the merged copy for the backward (LoRA and QLoRA). Measured with "
           "bitsandbytes 0.50 on a CPU (tools/calibrate/results/cpu-qlora.json, cpu-moe.json)"),
        N_("Dettmers et al., QLoRA, arXiv 2305.14314, section 3; PEFT "
           "prepare_model_for_kbit_training; bitsandbytes MatMul4Bit (commit 9e753741, "
           "0.43.2)"),
    ),
    "litgpt": TermText(
        N_("LitGPT (--framework litgpt)"),
        N_("a tied embedding becomes its own lm_head (vocabulary x hidden more parameters); "
           "under QLoRA lm_head is NF4 too and the largest 4-bit layer is held dequantised in "
           "fp16 and bf16 (%(dequantised)s bytes per parameter); the previous micro-step's "
           "logits (%(logits)s x vocabulary per token) stay until the next forward returns, "
           "and with bitsandbytes 0.41-0.43.1 every 4-bit input of its graph too (the "
           "attention output and lm_head's input among them): peak = max(the step's own "
           "moments, the end of the next forward); with FSDP and gradient accumulation each "
           "GPU holds the unsharded gradients of every block that trains (no_sync, "
           "use_orig_params); with one key/value head per query head attention saves the "
           "value as a view of the fused qkv output, which keeps its q and k parts "
           "(%(qkv)s x (q + k width) per token and layer)"),
        N_("read from litgpt (convert_hf_checkpoint.py, model.py, finetune/lora.py at e5493986 "
           "and 00af8b0d; lit-gpt 8641822), Lightning's bitsandbytes plugin and FSDP strategy, "
           "bitsandbytes 0.42.0 MatMul4Bit (ctx.tensors), PyTorch pull request 90546, "
           "issue 91167 and derivatives.yaml (scaled_dot_product_attention); held to "
           "LitGPT's published tables (tools/calibrate/external)"),
    ),
    "sharding": TermText(
        N_("Several GPUs"),
        N_("ZeRO-1 divides optimizer states by the number of GPUs, ZeRO-2 also gradients, "
           "ZeRO-3 (FSDP full shard) also parameters; beyond the shards each GPU holds the "
           "gathered layers (DeepSpeed: the computing layer, a prefetch of %(prefetch)s "
           "parameters and a %(bucket)s-element gradient bucket; FSDP: %(fsdp_units)s decoder "
           "layers plus its root unit, the embeddings, final norm and lm_head, whole in bf16 "
           "from the forward to the end of the backward), an fp32 base gathered in bf16 under "
           "FSDP's mixed precision, and bitsandbytes' 4-bit quantisation statistics whole (they "
           "are no parameters); offload moves optimizer states (and with ZeRO-3 parameters) to "
           "CPU memory, FSDP's pure-bf16 offload keeps a GPU copy of each gathered shard"),
        N_("ZeRO, arXiv 1910.02054, section 5; ZeRO-Offload, arXiv 2101.06840; "
           "ZeRO-Infinity, arXiv 2104.07857; DeepSpeedZeroConfig defaults; PyTorch FSDP "
           "_runtime_utils (_post_forward_reshard keeps the root) and FlatParamHandle; "
           "fsdp_qlora train.py (quant_state is not synced by FSDP)"),
    ),
    "layer-activations": TermText(
        N_("Activations per decoder layer"),
        N_("bytes per token: full fine-tuning (bf16) 8i + 20h + 4hkv + 4nh + 8; under "
           "autocast with fp32 weights 8i + 30h + ...; LoRA base 6i + 12h + 4hkv + 4nh + 8 "
           "plus (2 + m)w + 2r per adapted layer (m = 1 with dropout); eager attention adds "
           "%(eager_score)s x heads x sequence (+ %(softcap_score)s with Gemma 2's score "
           "soft-capping) and its causal masks (one per mask kind, in the activations' dtype; "
           "kept to the backward under checkpointing)"),
        N_("measured tensor by tensor on Hugging Face training steps (PyTorch MemTracker); "
           "tools/calibrate/ (71 cases; the How-we-calculate page lists each case's error)"),
    ),
    "hybrid-layers": TermText(
        N_("Linear-attention and Mamba layers (hybrid models)"),
        N_("a hybrid's layers are averaged: attention layers as above (Qwen's gated attention "
           "+ %(output_gate)s x q width), and per Gated DeltaNet layer %(deltanet_key)sK + "
           "%(deltanet_expanded_key)sKE + %(deltanet_value)sV + %(deltanet_head)sH + "
           "S/%(deltanet_state_divisor)s bytes per token (full fine-tuning + "
           "%(deltanet_full_value)sV), per Mamba-2 layer %(mamba_value)sV + %(mamba_key)sK + "
           "%(mamba_head)sH + %(mamba_expanded_key)sKE + "
           "%(mamba_state_num)sS/%(mamba_state_den)s (full + %(mamba_full_value)sV); K key "
           "width (Mamba: groups x state), KE the key width repeated for every value head "
           "(Mamba: heads x state), V value (inner) width, H heads, S heads x state per head"),
        N_("measured: every tensor one Qwen3NextGatedDeltaNet / NemotronHMamba2Mixer saves "
           "for its backward (transformers 5.24, PyTorch path, 14 geometries), held to whole "
           "training steps in tools/calibrate/results/cpu-hybrid.json; the optional "
           "flash-linear-attention and mamba_ssm kernels keep less"),
    ),
    "checkpointing": TermText(
        N_("Gradient checkpointing"),
        N_("keeps only each layer's input (%(bf16)sh bytes per token in bf16, %(amp)sh under "
           "fp32 autocast) and recomputes one layer at a time in backward; about 20-33 %% "
           "slower"),
        N_("Chen et al., arXiv 1604.06174; Hugging Face docs (about 20 %%); ZeRO paper "
           "(33 %%)"),
    ),
    "checkpointing-auto": TermText(
        N_("Gradient checkpointing, automatic"),
        N_("on for QLoRA, for models of %(params)s billion parameters and more and for "
           "sequences of %(seq)s tokens and more, off otherwise; the same rule for a catalog "
           "model, a pasted config.json and a Hugging Face repository (parameters counted from "
           "the config); On or Off overrides it"),
        N_("PEFT's prepare_model_for_kbit_training (use_gradient_checkpointing=True by "
           "default, called by every QLoRA recipe); torchtune's 70B configs "
           "(enable_activation_checkpointing: True); the QLoRA paper's 33B and 65B runs; the "
           "Hugging Face Trainer's default is off"),
    ),
    "loss-head": TermText(
        N_("Loss head"),
        N_("%(forward)s x vocabulary bytes per token in the forward (bf16 logits, fp32 copy, "
           "fp32 log-softmax), %(backward)s x vocabulary at the start of backward "
           "(+ %(softcap)s with Gemma 2's logit soft-capping); under fp32 autocast a tied "
           "lm_head gets its own bf16 copy; a chunked loss holds %(chunk_tokens)s tokens at a "
           "time"),
        N_("measured on Hugging Face's causal-LM loss (logits upcast to fp32); Liger Kernel, "
           "torchtune chunked loss"),
    ),
    "peak": TermText(
        N_("Peak over phases"),
        N_("max(end of forward, start of backward, end of backward, optimizer step), each "
           "the states alive then plus that moment's activations; never less than the states "
           "alive together (under the hf accounting autocast's bf16 copies are freed before "
           "the optimizer step, so 16 of the article's 18 bytes per parameter)"),
        N_("measured: adding every term overestimates by up to 25 %%"),
    ),
    "overhead": TermText(
        N_("Overhead: reserved memory and context"),
        N_("allocated = the peak above (max_memory_allocated); reserved "
           "(max_memory_reserved) = allocated + the cached blocks the peak cannot reuse: the "
           "bf16 logits freed before the loss backward (%(logits_bytes)s bytes per token per "
           "vocabulary entry) and %(layers)s layers' activations of segments "
           "(%(expandable_layers)s with expandable segments, --expandable-segments); under FSDP "
           "%(fsdp_pct)s %% of the step's tensors instead; at least the states plus a loss "
           "head in segments of its own; per GPU = reserved + CUDA context and workspaces "
           "%(context_mib)s MiB (%(context_stack)s; + %(nccl_gib)s GiB NCCL buffers with "
           "several GPUs), what nvidia-smi shows and what the card must hold"),
        N_("measured on 15 H200 training steps (max_memory_reserved and the memory outside "
           "the allocator, tests/fixtures/h200_steps/h200-steps.json); PyTorch's "
           "CUDACachingAllocator takes the smallest cached block that fits and never merges "
           "blocks of two segments; FSDP's share fitted on 27 published runs "
           "(tools/calibrate/external/reserved.json)"),
    ),
    "formats": TermText(
        N_("Low-precision formats"),
        N_("FP8 from compute capability %(fp8_cc)s; MXFP8 and NVFP4 Blackwell only, MXFP8 "
           "refused by Transformer Engine on 12.0 and above; no memory saving is credited"),
        N_("NVIDIA Transformer Engine README and support matrix"),
    ),
}
"""Every engine term's wording by key (English msgids, translated where shown)."""


CONTEXT_TEXTS: Final[dict[str, str]] = {
    "current": N_("15 training steps on one H200 (tests/fixtures/h200_steps/h200-steps.json): "
                  "685 to 777 MiB, the largest rounded up"),
    "lazy-bare": N_("PyTorch pull request 86509, which made PyTorch set lazy loading itself "
                    "from 1.13 on: memory in use after one small tensor"),
    "eager-bare": N_("the same pull request's measurement with CUDA_MODULE_LOADING=DEFAULT, "
                     "which loads eagerly before CUDA 12.2"),
    "eager-cuda": N_("a PyTorch maintainer in PyTorch issue 107667: before CUDA 11.7 every "
                     "kernel was loaded at start-up, more than 1000 MB"),
    "published-runs": N_("the top of the 0.3 to 1 GiB our activation findings give for the "
                         "context outside tensor trackers; taken off the published nvidia-smi "
                         "figures of the fms-acceleration benchmark, not used for sizing"),
}
"""Where each row of the CUDA context table comes from (``overhead.CUDA_CONTEXTS``), by key."""
CONTEXT_LOADING: Final[dict[str, str]] = {"lazy": N_("lazy"), "eager": N_("eager")}
"""How the stack loads its kernels (``CUDA_MODULE_LOADING``), worded."""
