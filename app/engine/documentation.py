"""Every term of an estimate with its formula and source, built from the engine's constants.

The "How we calculate" page renders :data:`TERMS`; because the formulas are written from the
same constants the arithmetic uses, the page cannot drift from the code.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine import activations, capabilities, overhead, sharding, states
from app.engine import activations_hybrid as _hybrid
from app.engine import framework_litgpt as _litgpt
from app.engine.estimate import ENGINE_VERSION


@dataclass(frozen=True, slots=True)
class Term:
    key: str
    title: str
    formula: str
    source: str
    module: str


def _bits(quant: states.Quant) -> str:
    return f"{states.NF4_BITS[quant]:.3f}"


_zero_w, _zero_g = states.FULL_WEIGHT_GRAD_BYTES["zero"]
_hf_w, _hf_g = states.FULL_WEIGHT_GRAD_BYTES["hf"]
_adam = states.OPTIMIZER_MOMENT_BYTES["adamw"]
_adam8 = states.OPTIMIZER_MOMENT_BYTES["adamw_8bit"]
_ckpt = activations.CHECKPOINT_INPUT_BYTES
_loss_backward = (
    activations.LOSS_SAVED_BYTES_PER_VOCAB + activations.LOSS_BACKWARD_EXTRA_BYTES_PER_VOCAB
)

TERMS: tuple[Term, ...] = (
    Term(
        "parameters", "Parameters",
        "Counted per architecture from config.json exactly as transformers builds the model: "
        "attention q/k/v/o with grouped-query key/value heads and explicit head_dim, gated MLP "
        "(gate, up, down), norms, embeddings, lm_head (0 when tied), biases, experts and "
        "router; split into block linear layers, embeddings, lm_head, norms and other",
        "Hugging Face transformers model code; checked against transformers' own counts for "
        "every seed model", "app/engine/shapes.py",
    ),
    Term(
        "full-zero", "Full fine-tuning, ZeRO accounting",
        f"{_zero_w} (bf16 weights) + {_zero_g} (gradients) + {states.ZERO_MASTER_BYTES} "
        f"(fp32 master) + {_adam} (Adam moments) = "
        f"{_zero_w + _zero_g + states.ZERO_MASTER_BYTES + _adam} bytes per parameter",
        "Rajbhandari et al., ZeRO, arXiv 1910.02054, section 3.1", "app/engine/states.py",
    ),
    Term(
        "full-hf", "Full fine-tuning, Hugging Face accounting",
        f"{_hf_w} (fp32 weights + half-precision copy) + {_hf_g} (fp32 gradients) + {_adam} "
        f"(Adam moments) = {_hf_w + _hf_g + _adam} bytes per parameter",
        "Hugging Face docs, model training anatomy", "app/engine/states.py",
    ),
    Term(
        "optimizers", "Optimizer states",
        f"AdamW {_adam}, 8-bit AdamW {_adam8}, SGD with momentum "
        f"{states.OPTIMIZER_MOMENT_BYTES['sgd']} bytes per trained parameter; paged variants "
        "the same bytes; Adafactor a factored second moment (rows + columns per matrix, fp32)",
        "PyTorch AdamW; Dettmers et al., 8-bit optimizers, arXiv 2110.02861; Shazeer & Stern, "
        "Adafactor, arXiv 1804.04235", "app/engine/states.py",
    ),
    Term(
        "lora", "LoRA adapter",
        "r x (m + n) trainable parameters per adapted m -> n layer; "
        f"{states.ADAPTER_WEIGHT_BYTES} + {states.ADAPTER_GRAD_BYTES} + {_adam} = "
        f"{states.ADAPTER_WEIGHT_BYTES + states.ADAPTER_GRAD_BYTES + _adam} bytes each with "
        f"AdamW; frozen base {states.BF16_BYTES} bytes per parameter (bf16)",
        "Hu et al., LoRA, arXiv 2106.09685; PEFT (adapters kept in fp32)",
        "app/engine/states.py",
    ),
    Term(
        "qlora", "QLoRA base",
        f"block linear layers in NF4: {_bits('nf4-dq')} bits per parameter with double "
        f"quantisation, {_bits('nf4')} without, plus the quantisation state per module; "
        "under mixed precision PEFT's prepare_model_for_kbit_training makes embeddings, "
        "lm_head, norms and biases fp32 (the residual stream and the MLP's intermediates fp32 "
        "too, lm_head cast to bf16 for its matmul), under pure bf16 and under FSDP (one dtype "
        "per flattened layer) they stay bf16; one layer "
        "dequantised to bf16 at a time; bitsandbytes 0.41-0.43.1 also kept every 4-bit "
        "layer's input (bnb_saves_inputs). A mixture of experts under moe_lora fused "
        "(transformers 5) keeps its fused expert tensors and routers 16-bit, fp32 after "
        "prepare_model_for_kbit_training: 4-bit loading packs only nn.Linear layers "
        "(tools/moe_qlora_layout.py); per-expert (transformers 4) packs them in NF4. PEFT "
        "merges each adapted fused expert tensor with its adapter on every forward and keeps "
        "the merged copy for the backward (LoRA and QLoRA). Measured with bitsandbytes 0.50 "
        "on a CPU (tools/calibrate/results/cpu-qlora.json, cpu-moe.json)",
        "Dettmers et al., QLoRA, arXiv 2305.14314, section 3; PEFT prepare_model_for_kbit_"
        "training; bitsandbytes MatMul4Bit (commit 9e753741, 0.43.2)",
        "app/engine/states.py, app/engine/activations.py",
    ),
    Term(
        "litgpt", "LitGPT (--framework litgpt)",
        "a tied embedding becomes its own lm_head (vocabulary x hidden more parameters); under "
        "QLoRA lm_head is NF4 too and the largest 4-bit layer is held dequantised in fp16 and "
        f"bf16 ({_litgpt.DEQUANTISED_BYTES_PER_PARAM} bytes per parameter); the previous "
        f"micro-step's logits ({_litgpt.LOGIT_BYTES} x vocabulary per token) stay until the "
        "next forward returns, and with bitsandbytes 0.41-0.43.1 every 4-bit input of its "
        "graph too (the attention output and lm_head's input among them): peak = max(the "
        "step's own moments, the end of the next forward); with FSDP and gradient "
        "accumulation each GPU holds the unsharded gradients of every block that trains "
        "(no_sync, use_orig_params)",
        "read from litgpt (convert_hf_checkpoint.py, model.py, finetune/lora.py at e5493986 "
        "and 00af8b0d; lit-gpt 8641822), Lightning's bitsandbytes plugin and FSDP strategy, "
        "bitsandbytes 0.42.0 MatMul4Bit (ctx.tensors), PyTorch pull request 90546 and issue "
        "91167; held to LitGPT's published tables (tools/calibrate/external)",
        "app/engine/framework_litgpt.py",
    ),
    Term(
        "sharding", "Several GPUs",
        "ZeRO-1 divides optimizer states by the number of GPUs, ZeRO-2 also gradients, ZeRO-3 "
        "(FSDP full shard) also parameters; beyond the shards each GPU holds the gathered "
        "layers (DeepSpeed: the computing layer, a prefetch of "
        f"{sharding.DS_PREFETCH_BUCKET_SIZE:.0e} parameters and a "
        f"{sharding.DS_REDUCE_BUCKET_SIZE:.0e}-element gradient bucket; FSDP: "
        f"{sharding.FSDP_LIVE_UNITS} decoder layers plus its root unit, the embeddings, final "
        "norm and lm_head, whole in bf16 from the forward to the end of the backward), an fp32 "
        "base gathered in bf16 under FSDP's mixed precision, and bitsandbytes' 4-bit "
        "quantisation statistics whole (they are no parameters); offload moves optimizer "
        "states (and with ZeRO-3 parameters) to CPU memory, FSDP's pure-bf16 offload keeps a GPU "
        "copy of each gathered shard",
        "ZeRO, arXiv 1910.02054, section 5; ZeRO-Offload, arXiv 2101.06840; ZeRO-Infinity, "
        "arXiv 2104.07857; DeepSpeedZeroConfig defaults; PyTorch FSDP _runtime_utils "
        "(_post_forward_reshard keeps the root) and FlatParamHandle; fsdp_qlora train.py "
        "(quant_state is not synced by FSDP)", "app/engine/states.py, app/engine/sharding.py",
    ),
    Term(
        "layer-activations", "Activations per decoder layer",
        "bytes per token: full fine-tuning (bf16) 8i + 20h + 4hkv + 4nh + 8; under autocast with "
        "fp32 weights 8i + 30h + ...; LoRA base 6i + 12h + 4hkv + 4nh + 8 plus (2 + m)w + 2r per "
        "adapted layer (m = 1 with dropout); eager attention adds "
        f"{activations.EAGER_SCORE_BYTES} x heads x sequence "
        f"(+ {activations.SOFTCAP_SCORE_BYTES} with Gemma 2's score soft-capping) and its "
        "causal masks (one per mask kind, in the activations' dtype; kept to the backward "
        "under checkpointing)",
        "measured tensor by tensor on Hugging Face training steps (PyTorch MemTracker); "
        "tools/calibrate/ (71 cases; the How-we-calculate page lists each case's error)",
        "app/engine/activations.py",
    ),
    Term(
        "hybrid-layers", "Linear-attention and Mamba layers (hybrid models)",
        "a hybrid's layers are averaged: attention layers as above (Qwen's gated attention "
        f"+ {_hybrid.OUTPUT_GATE_BYTES} x q width), and per Gated DeltaNet layer "
        f"{_hybrid.DELTANET_KEY}K + {_hybrid.DELTANET_EXPANDED_KEY_HALVES / 2}KE + "
        f"{_hybrid.DELTANET_VALUE}V + {_hybrid.DELTANET_HEAD}H + S/"
        f"{_hybrid.DELTANET_STATE_DIVISOR} bytes per token (full fine-tuning + "
        f"{_hybrid.DELTANET_FULL_VALUE_EXTRA}V), per Mamba-2 layer {_hybrid.MAMBA_VALUE}V + "
        f"{_hybrid.MAMBA_KEY}K + {_hybrid.MAMBA_HEAD}H + {_hybrid.MAMBA_EXPANDED_KEY}KE + "
        f"{_hybrid.MAMBA_STATE_NUM}S/{_hybrid.MAMBA_STATE_DEN} (full + "
        f"{_hybrid.MAMBA_FULL_VALUE_EXTRA}V); K key width (Mamba: groups x state), KE the key "
        "width repeated for every value head (Mamba: heads x state), "
        "V value (inner) width, H heads, S heads x state per head",
        "measured: every tensor one Qwen3NextGatedDeltaNet / NemotronHMamba2Mixer saves for "
        "its backward (transformers 5.24, PyTorch path, 14 geometries), held to whole training "
        "steps in tools/calibrate/results/cpu-hybrid.json; the optional flash-linear-attention "
        "and mamba_ssm kernels keep less",
        "app/engine/activations_hybrid.py",
    ),
    Term(
        "checkpointing", "Gradient checkpointing",
        f"keeps only each layer's input ({_ckpt['bf16']}h bytes per token in bf16, "
        f"{_ckpt['amp']}h under fp32 autocast) and recomputes one layer at a time in backward; "
        "about 20-33 % slower",
        "Chen et al., arXiv 1604.06174; Hugging Face docs (about 20 %); ZeRO paper (33 %)",
        "app/engine/activations.py",
    ),
    Term(
        "loss-head", "Loss head",
        f"{activations.LOSS_FORWARD_BYTES_PER_VOCAB} x vocabulary bytes per token in the forward "
        "(bf16 logits, fp32 copy, fp32 log-softmax), "
        f"{_loss_backward} x vocabulary at the start of backward (+ "
        f"{activations.SOFTCAP_LOGIT_BYTES_PER_VOCAB} with Gemma 2's logit soft-capping); "
        "under fp32 autocast a tied lm_head gets its own bf16 copy; a chunked loss holds "
        f"{activations.CHUNKED_LOSS_TOKENS} tokens at a time",
        "measured on Hugging Face's causal-LM loss (logits upcast to fp32); Liger Kernel, "
        "torchtune chunked loss", "app/engine/activations.py",
    ),
    Term(
        "peak", "Peak over phases",
        "max(end of forward, start of backward, end of backward, optimizer step), each the "
        "states alive then plus that moment's activations; never less than the states alive "
        "together (under the hf accounting autocast's bf16 copies are freed before the "
        "optimizer step, so 16 of the article's 18 bytes per parameter)",
        "measured: adding every term overestimates by up to 25 %", "app/engine/fit.py",
    ),
    Term(
        "overhead", "Overhead: reserved memory and context",
        "allocated = the peak above (max_memory_allocated); reserved = allocated + the caching "
        f"allocator's reserve, {overhead.ALLOCATOR_RESERVE_FRACTION:.1%} of the step's own "
        f"tensors ({overhead.EXPANDABLE_SEGMENTS_RESERVE_FRACTION:.0%} with expandable segments, "
        "--expandable-segments); per GPU = reserved + CUDA context and workspaces "
        f"{overhead.CUDA_CONTEXT_BYTES / overhead.GIB:.1f} GiB "
        f"(+ {overhead.NCCL_BUFFER_BYTES / overhead.GIB:.1f} GiB NCCL buffers with several "
        "GPUs), what nvidia-smi shows and what the card must hold",
        "reserve fitted on published runs reporting both max_memory_allocated and nvidia-smi "
        "(fms-acceleration A100-80GB benchmark, tools/calibrate/external/reserved.json); "
        "PyTorch's CUDACachingAllocator rounds blocks to 512 B and segments to 2 or 20 MiB, "
        "under 1 % of a step; context: observed 0.3-1 GiB", "app/engine/overhead.py",
    ),
    Term(
        "formats", "Low-precision formats",
        f"FP8 from compute capability {capabilities.FP8_MIN_CC[0]}.{capabilities.FP8_MIN_CC[1]}; "
        "MXFP8 and NVFP4 Blackwell only, MXFP8 refused by Transformer Engine on 12.0 and above; "
        "no memory saving is credited",
        "NVIDIA Transformer Engine README and support matrix", "app/engine/capabilities.py",
    ),
)

__all__ = ["ENGINE_VERSION", "TERMS", "Term"]
