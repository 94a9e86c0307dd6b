"""What an estimate takes for granted: each assumption a key with the values its wording takes
(pages translate by key) and its English wording (the API's and the CLI's)."""

from __future__ import annotations

from app.engine.architectures.deepseek import MLA_MODEL_TYPES
from app.engine.architectures.gemma4 import GEMMA4_MODEL_TYPES
from app.engine.architectures.longcat import IDENTITY_EXPERT_TYPES, routed_picks
from app.engine.architectures.moe import SINK_MODEL_TYPES
from app.engine.job import Job, fsdp_gathers_bf16, fsdp_sharded, prepares_kbit
from app.engine.overhead import layer_segments, reserve_fraction
from app.engine.shapes import ModelShape
from app.engine.sharding import fsdp_root_params
from app.engine.states import merged_parameter_params, packed_specs, quant_state_bytes

MEASURED_WITHIN_PERCENT = 6
"""The largest error, in per cent, of the MLA and attention-sink steps the engine was held to
(tools/calibrate/results/cpu-moe.json; tests/engine/test_calibration_moe.py keeps it true)."""

Assumption = tuple[str, dict[str, str | int | float]]
"""An assumption's key in :data:`ASSUMPTION_TEXTS` and the values its wording takes."""

APPROXIMATE_PART_TEXTS: dict[str, str] = {
    "approximate_tower": "approximate: the config has a vision or audio tower "
    "(vision_config), which is not counted: the checkpoint holds more "
    "parameters than shown",
    "approximate_experts": "approximate: the config names experts but not how many a token "
    "uses (num_experts_per_tok), so they are not counted: the model is"
    " larger than shown",
    "approximate_tie": "approximate: the config does not say whether the output layer shares "
    "the embedding (tie_word_embeddings); it is counted as separate",
}
"""What an approximate shape names as not counted (``Approximation.missing``), by assumption
key; the serving engine says the same."""

ASSUMPTION_TEXTS: dict[str, str] = {
    **APPROXIMATE_PART_TEXTS,
    "approximate": "approximate: model type '%(model_type)s' is not one the engine counts "
    "exactly; it is counted as a dense decoder of the Llama layout (separate q/k/v/o "
    "projections, gated MLP, RMSNorm; experts when the config names them) from %(fields)s",
    "units": "GB = 10^9 bytes; every figure is per GPU",
    "tower": "multimodal checkpoint: the language model is sized and trained; its vision tower "
    "and projector (%(params)s parameters) are loaded beside it, frozen in bf16, never adapted",
    "tower_audio": "multimodal checkpoint: the language model is sized and trained; its vision "
    "and audio towers and their projectors (%(params)s parameters, %(audio)s of them the audio "
    "tower's) are loaded beside it, frozen in bf16, never adapted",
    "tower_lora": "LoRA targets the language model only: PEFT's all-linear on the whole "
    "multimodal checkpoint adapts the vision tower's linear layers too (about 9 million more "
    "parameters at rank 16); name the language model's modules to train what is sized here",
    "mamba_lora": "PEFT refuses all-linear on a Mamba hybrid (it will not adapt a Mamba "
    "block's out_proj): all-linear here is every other linear layer, the list to give PEFT",
    "hybrid_layers": "hybrid model: %(mixers)s of its %(layers)s layers are %(kind)s, not "
    "attention; their activations are those of transformers' PyTorch path, measured (the "
    "optional flash-linear-attention or mamba_ssm kernels keep less)",
    "states_zero": "model states by the 'zero' accounting "
    "(2 + 2 + 12 bytes per trained param, ZeRO paper)",
    "states_hf": "model states by the 'hf' accounting "
    "(6 + 4 + 8 bytes per trained param, Hugging Face docs)",
    "activations": "activations from per-token tensor counts measured on Hugging Face training "
    "steps; the peak is the largest phase, not the sum of all terms",
    "attention_eager": "attention: %(attention)s (quadratic score matrices)",
    "attention_linear": "attention: %(attention)s (linear in sequence)",
    "loss_standard": "loss head: logits upcast to fp32 by Hugging Face's causal-LM loss",
    "loss_chunked": "loss head: chunked cross-entropy (1,024 tokens)",
    "overhead": "overhead: CUDA context and workspaces plus a fragmentation margin on per-step "
    "tensors",
    "reserve_default": "reserved: PyTorch's caching allocator keeps blocks the peak cannot "
    "reuse, the freed bf16 logits and %(layers)s layers' activations of segments, and at least "
    "the states plus a loss head of its own (expandable segments off, PyTorch's default; "
    "measured on 15 H200 steps)",
    "reserve_fsdp": "reserved: under FSDP PyTorch's caching allocator keeps %(percent)s %% of "
    "the step's own tensors beyond the live-tensor peak (expandable segments off; fitted on 27 "
    "published FSDP runs)",
    "reserve_expandable": "reserved: with expandable segments the caching allocator keeps the "
    "freed bf16 logits and %(layers)s layers' activations of blocks the peak cannot reuse "
    "(measured on 2 H200 steps)",
    "lora": "LoRA rank %(rank)s on %(targets)s, adapters in fp32 (PEFT default), 16 bytes per "
    "trainable param with AdamW",
    "nf4_dq": "NF4 base (with double quantisation)",
    "nf4": "NF4 base (without double quantisation)",
    "qlora_prepared": "QLoRA as PEFT's prepare_model_for_kbit_training leaves the model: "
    "embeddings, lm_head and norms in fp32, so the residual stream is fp32 too, and lm_head is "
    "cast to bf16 for its matmul",
    "qlora_base_dtype": "embeddings, lm_head and norms stay in the base dtype (pure bf16 does "
    "not run prepare_model_for_kbit_training)",
    "qlora_fsdp_unprepared": "QLoRA under FSDP: prepare_model_for_kbit_training is not run (FSDP "
    "flattens each layer's norms and 4-bit weights into one tensor of one dtype; TRL skips it "
    "for sharded QLoRA), so embeddings, lm_head and norms stay in the base dtype",
    "bnb_current": "bitsandbytes 0.43.2 or later: a 4-bit layer keeps no copy of its input for "
    "the backward",
    "bnb_saves_inputs": "bitsandbytes 0.41 to 0.43.1: every 4-bit layer keeps its input until "
    "its backward, as in the QLoRA figures published in 2023 and early 2024",
    "moe": "mixture of experts: every expert is held in memory; activations follow the "
    "%(experts)s experts each token is routed to",
    "moe_lora_fused": "LoRA on the experts as PEFT 0.21 builds it on transformers 5: one "
    "adapter per fused expert tensor and expert, the fused gate/up at rank 2r; what PEFT "
    "remaps onto the experts (dense and shared-expert MLPs) is not adapted (moe_lora fused)",
    "moe_lora_per_expert": "LoRA on the experts as one linear layer per expert (transformers 4 "
    "modules, most training stacks): rank r on every expert's gate, up and down projection, "
    "the router and every other block linear layer (moe_lora per-expert)",
    "moe_lora_merged": "PEFT adapts each fused expert tensor by merging it with its adapter "
    "on every forward (W + BA) and keeps that merged copy for the backward: one more copy of "
    "the adapted experts in the base's dtype, one layer's with checkpointing (measured)",
    "qlora_fused_experts_16bit": "QLoRA on fused experts as transformers 5 loads them: 4-bit "
    "loading packs only linear layers, so the fused expert tensors and the routers stay 16-bit, "
    "and prepare_model_for_kbit_training makes them fp32 (measured with bitsandbytes 0.50.2); "
    "moe_lora per-expert counts them in NF4 as transformers 4 did",
    "qlora_per_expert_nf4": "QLoRA with one linear layer per expert (transformers 4 modules): "
    "the experts and routers in NF4 (moe_lora per-expert)",
    "mla": "multi-head latent attention: activations of q, the keys and values expanded per "
    "head and the latent RMSNorms of the compressed q and kv, measured on whole training steps "
    "of a tiny DeepSeek-V3 (within %(within)s %%, tools/calibrate/results/cpu-moe.json)",
    "routers_fp32": "transformers keeps this model's routers in fp32 whatever dtype it is "
    "loaded in (_keep_in_fp32_modules_strict): %(params)s parameters at 4 bytes in the frozen "
    "base",
    "identity_experts": "zero-computation experts: each token picks %(picks)s of the real and "
    "identity experts, %(real)s real ones on average, which the active parameters count; the "
    "parameters are the release's as transformers 5.25 builds them (transformers 5.17 to 5.24 "
    "also build a gate/up tensor for every identity expert, which a fine-tune on those "
    "versions holds on top)",
    "sinks": "attention sinks: transformers runs gpt-oss with eager attention (no SDPA path), "
    "which keeps every layer's score matrix, sliding-window layers included; the softmax over "
    "scores and sinks runs in fp32 under mixed precision, in bf16 on a bf16 base; measured on "
    "whole training steps of a tiny gpt-oss (within %(within)s %%, "
    "tools/calibrate/results/cpu-moe.json)",
    "gemma4": "Gemma 4: activations modelled with the sliding layers' heads and head width on "
    "every layer, without the per-layer-embedding inputs and the shared layers' wider MLP "
    "(approximate, not measured)",
    "gpus": "%(gpus)s GPUs, data parallel, sharding %(sharding)s",
    "sharded_deepspeed": "ZeRO-3 as DeepSpeed runs it: its default gradient bucket (5e8 "
    "elements, held all run) and prefetch beside the gathered layer on each GPU",
    "sharded_fsdp": "ZeRO-3 as PyTorch FSDP FULL_SHARD runs it: the computing layer and the "
    "prefetched next one gathered on each GPU, no standing gradient bucket",
    "fsdp_root": "FSDP's root unit (embeddings, final norm and lm_head, %(params)s parameters) "
    "is not resharded after the forward: each GPU holds it whole, in bf16, until the end of the "
    "backward",
    "fsdp_base_bf16": "the fp32 base is gathered in bf16 by FSDP's mixed precision (Accelerate's "
    "MixedPrecision(param_dtype=bfloat16)), so no layer is cast again for its matmul",
    "qlora_stats_whole": "bitsandbytes keeps the 4-bit quantisation statistics (absmax) outside "
    "the parameters, so FSDP and ZeRO-3 do not shard them: every GPU holds them whole, "
    "%(stats_bytes)s bytes",
    "precision_amp": "training precision: mixed (amp), fp32 master weights with bf16 autocast, "
    "as the Hugging Face Trainer's bf16=True",
    "precision_bf16": "training precision: pure bf16, weights, gradients and optimizer states in "
    "bf16 with no fp32 copy (torchtune, LitGPT bf16-true)",
    "lora_bf16": "LoRA rank %(rank)s on %(targets)s, adapters in bf16, 8 bytes per trainable "
    "param with AdamW",
    "base_fp32": "frozen base loaded in fp32 (4 bytes per param, cast to bf16 one layer at a "
    "time for its matmul); activations are those of a bf16 base (an fp32 residual stream is "
    "not modelled)",
    "framework_torchtune": "torchtune preset: dtypes as its recipe configs (dtype: bf16); its "
    "chunked loss and activation offload are the loss-head and activation-offload switches, "
    "torch.compile is not modelled",
    "framework_litgpt": "LitGPT preset: dtypes as its config-hub recipes (precision: "
    "bf16-true); LitGPT computes lm_head and the loss in chunks of 128 tokens "
    "(lm_head_chunk_size=128): set the loss head to chunked to model that",
    "litgpt_own_head": "LitGPT keeps its own output layer: converting the checkpoint copies "
    "the tied embedding into lm_head, %(params)s more parameters",
    "litgpt_qlora": "LitGPT QLoRA: Lightning's bitsandbytes plugin quantises lm_head to NF4 as "
    "well, from an fp16 copy, so each 4-bit matrix multiply holds the layer dequantised in "
    "fp16 and cast to bf16 (4 bytes per parameter of the largest layer, the output layer)",
    "litgpt_next_forward": "LitGPT keeps the previous micro-step's logits until the next "
    "forward returns; counted as a moment of its own",
    "litgpt_next_forward_bnb": "LitGPT keeps the previous micro-step's logits until the next "
    "forward returns, and through them every input bitsandbytes 0.41 to 0.43.1 saved: each "
    "step's peak is the end of the next forward with the previous step's 4-bit inputs still "
    "held",
    "litgpt_no_sync": "LitGPT accumulates gradients under FSDP's no_sync: each GPU holds the "
    "whole, unsharded gradients of every layer that trains anything, frozen weights included "
    "(use_orig_params), until the synchronising micro-step",
    "framework_unsloth": (
        "Unsloth as it runs: fp32 adapters under bf16 autocast (a full fine-tune in pure bf16),"
        " its fused cross-entropy without full logits (counted as the chunked loss), its LoRA "
        "kernels (a recomputed layer keeps its norms' outputs, q, k, v and the attention "
        "output, the residual, the MLP's gate and up outputs and one gradient of their width), "
        "embeddings, lm_head and norms left in bf16, expandable segments and, with gradient "
        "checkpointing, its checkpoints offloaded to CPU memory (three layer inputs stay on the"
        " GPU). Unsloth's published long-context figures are about a third higher per token: "
        "they were measured with its code of December 2024, which kept more (per-layer RoPE "
        "tables, an out-of-place LoRA product) and comes within 5 per cent of them"
    ),
}
"""The English wording of each assumption (the API's and the CLI's); pages translate by key."""


def assumption_items(shape: ModelShape, job: Job) -> tuple[Assumption, ...]:
    """What the figures take for granted, as keys and values a page can translate: the model's
    own, those every estimate makes, the method's and framework's, the experts', the cards'."""
    return tuple(_model_items(shape, job) + _common_items(job) + _method_items(shape, job)
                 + _expert_items(shape, job) + _gpu_items(shape, job))


def _model_items(shape: ModelShape, job: Job) -> list[Assumption]:
    """How the model was counted: approximately, with towers, hybrid layers."""
    items: list[Assumption] = []
    if shape.approximation is not None:
        items.append(("approximate", {"model_type": shape.approximation.model_type,
                                      "fields": ", ".join(shape.approximation.fields)}))
        items += [(f"approximate_{part}", {}) for part in shape.approximation.missing]
    if shape.audio_tower_params:
        items.append(("tower_audio", {"params": shape.tower_params,
                                      "audio": shape.audio_tower_params}))
    elif shape.tower_params:
        items.append(("tower", {"params": shape.tower_params}))
    if shape.tower_params and job.method != "full" and job.lora_targets == "all-linear":
        items.append(("tower_lora", {}))
    if shape.mixer is not None and shape.mixer.kind == "mamba2" and job.method != "full" \
            and job.lora_targets == "all-linear":
        items.append(("mamba_lora", {}))
    if shape.mixer is not None:
        items.append(("hybrid_layers", {
            "mixers": shape.mixer.layers, "layers": shape.num_layers,
            "kind": "Gated DeltaNet" if shape.mixer.kind == "gated_deltanet" else "Mamba-2",
        }))
    return items


def _common_items(job: Job) -> list[Assumption]:
    """What every estimate assumes: units, states, activations, overhead."""
    return [
        ("units", {}),
        ("states_zero" if job.accounting == "zero" else "states_hf", {}),
        ("activations", {}),
        ("attention_eager" if job.attention == "eager" else "attention_linear",
         {"attention": job.attention}),
        ("loss_standard" if job.loss_head == "standard" else "loss_chunked", {}),
        ("overhead", {}),
        _reserve_item(job),
    ]


def _method_items(shape: ModelShape, job: Job) -> list[Assumption]:
    """The precision, the framework, and what LoRA and QLoRA hold."""
    items: list[Assumption] = []
    dtypes = job.training_precision
    items.append(("precision_bf16" if dtypes.precision == "bf16" else "precision_amp", {}))
    if job.framework != "hf":
        items.append((f"framework_{job.framework}", {}))
    if job.framework == "litgpt":
        items += _litgpt_items(shape, job)
    if job.method != "full":
        items.append(("lora_bf16" if dtypes.adapter_dtype == "bf16" else "lora",
                      {"rank": job.lora_rank, "targets": _targets_text(job.lora_targets)}))
        if dtypes.base_dtype == "fp32":
            items.append(("base_fp32", {}))
    if job.method == "qlora":
        items.append(("nf4_dq" if job.effective_quant == "nf4-dq" else "nf4", {}))
        items.append(("qlora_prepared" if prepares_kbit(job) else
                      "qlora_fsdp_unprepared" if fsdp_sharded(job) and dtypes.precision == "amp"
                      else "qlora_base_dtype", {}))
        items.append(("bnb_saves_inputs" if job.bnb_saves_inputs else "bnb_current", {}))
    return items


def _expert_items(shape: ModelShape, job: Job) -> list[Assumption]:
    """Mixtures of experts, MLA, attention sinks and Gemma 4."""
    items: list[Assumption] = []
    if shape.is_moe:
        items.append(("moe", {"experts": shape.experts_per_token}))
        if job.method != "full":
            items.append(("moe_lora_fused" if job.moe_lora == "fused" else "moe_lora_per_expert",
                          {}))
        if job.lora is not None and merged_parameter_params(shape, job.lora)[0]:
            items.append(("moe_lora_merged", {}))
    if job.method == "qlora" and len(packed_specs(shape, job.moe_lora)) < len(shape.linears):
        items.append(("qlora_fused_experts_16bit", {}))
    elif job.method == "qlora" and shape.is_moe:
        items.append(("qlora_per_expert_nf4", {}))
    if shape.model_type in MLA_MODEL_TYPES:
        items.append(("mla", {"within": MEASURED_WITHIN_PERCENT}))
    if shape.fp32_params and job.method != "full":
        items.append(("routers_fp32", {"params": shape.fp32_params}))
    if shape.model_type in IDENTITY_EXPERT_TYPES:
        items.append(("identity_experts", {"picks": shape.experts_per_token,
                                           "real": routed_picks(shape)}))
    if shape.model_type in SINK_MODEL_TYPES:
        items.append(("sinks", {"within": MEASURED_WITHIN_PERCENT}))
    if shape.model_type in GEMMA4_MODEL_TYPES:
        items.append(("gemma4", {}))
    return items


def _gpu_items(shape: ModelShape, job: Job) -> list[Assumption]:
    """More than one card, and what ZeRO-3 or FSDP add beyond the shards."""
    items: list[Assumption] = []
    if job.gpus > 1:
        items.append(("gpus", {"gpus": job.gpus, "sharding": job.sharding}))
        if job.sharding == "zero3":  # whose buffers sharding.py added (one card adds none)
            items += _sharded_items(shape, job)
    return items


def _sharded_items(shape: ModelShape, job: Job) -> list[Assumption]:
    """What ZeRO-3 or FSDP adds beyond the shards on more than one card (sharding.py)."""
    items: list[Assumption] = [(f"sharded_{job.sharding_impl}", {})]
    if job.sharding_impl == "fsdp":
        items.append(("fsdp_root", {"params": fsdp_root_params(shape)}))
        if fsdp_gathers_bf16(job):
            items.append(("fsdp_base_bf16", {}))
    if job.method == "qlora" and job.framework != "torchtune":
        items.append(("qlora_stats_whole",
                      {"stats_bytes": quant_state_bytes(shape, job.effective_quant, job.moe_lora)}))
    return items


def _litgpt_items(shape: ModelShape, job: Job) -> list[Assumption]:
    """What LitGPT holds beyond the shared model (framework_litgpt.py), for ``shape`` as the
    checkpoint ties it or not."""
    items: list[Assumption] = []
    if shape.tied_embeddings:
        items.append(("litgpt_own_head", {"params": shape.vocab_size * shape.hidden_size}))
    if job.method == "qlora":
        items.append(("litgpt_qlora", {}))
    old_bnb = job.method == "qlora" and job.bnb_saves_inputs
    items.append(("litgpt_next_forward_bnb" if old_bnb else "litgpt_next_forward", {}))
    if (job.sharding == "zero3" and job.sharding_impl == "fsdp" and job.gpus > 1
            and job.gradient_accumulation > 1):
        items.append(("litgpt_no_sync", {}))
    return items


def _reserve_item(job: Job) -> Assumption:
    """Which allocator reserve the total carries (overhead.reserve_terms)."""
    if job.expandable_segments:
        return "reserve_expandable", {"layers": layer_segments(expandable_segments=True)}
    if fsdp_sharded(job):
        return "reserve_fsdp", {"percent": round(100 * reserve_fraction(
            expandable_segments=False, fsdp=True), 1)}
    return "reserve_default", {"layers": layer_segments(expandable_segments=False)}


def assumptions(shape: ModelShape, job: Job) -> tuple[str, ...]:
    """What the figures take for granted, in words a customer can check (English)."""
    return tuple(ASSUMPTION_TEXTS[key] % values if values else ASSUMPTION_TEXTS[key]
                 for key, values in assumption_items(shape, job))


def _targets_text(targets: str | tuple[str, ...]) -> str:
    return targets if isinstance(targets, str) else ", ".join(targets)
