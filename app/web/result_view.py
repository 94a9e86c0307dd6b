"""Shape a Sizing for the page: verdict, rows, chart geometry, warnings.

Presentation only: every byte figure comes from the engine through the estimates service; this
module picks which card the headline names, lays out the SVG and turns the engine's warnings
into messages the catalogs translate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Final
from urllib.parse import quote_plus, urlencode

from app.catalog.schemas import Catalog, GpuRecord, ModelRecord, SystemRecord
from app.engine.estimate import (
    PAGED_OPTIMIZER_WARNING,
    UNIFIED_MEMORY_WARNING,
    ZERO3_WITHOUT_NVLINK_WARNING,
    CardFit,
    EstimateResult,
    Recommendation,
    Setup,
)
from app.engine.job import headroom_bytes
from app.engine.levers import LEVER_MAX_CARDS, Lever
from app.engine.speed import Training
from app.estimates.recommendations import StorefrontKey, storefront_key
from app.estimates.service import Sizing, SystemFit
from app.html.forms import N_, FieldError
from app.web.calculator_form import CalculatorInput

SYSTEM_NAMES = {
    ("workstation", False): N_("Workstation with %(count)s× %(gpu)s"),
    ("workstation", True): N_("Workstation with %(count)s× %(gpu)s and NVLink"),
    ("server", False): N_("Server with %(count)s× %(gpu)s"),
    ("server", True): N_("Server with %(count)s× %(gpu)s and NVLink"),
    ("appliance", False): N_("%(count)s× %(gpu)s, clustered"),
    ("appliance", True): N_("%(count)s× %(gpu)s, clustered"),
}
"""A system's name in the customer's language, from what it is: the
catalog's name is the staff's English wording; a single appliance keeps its product name."""


def system_name(system: SystemRecord, gpu: GpuRecord | None) -> FieldError:
    """What the storefront calls ``system`` (its catalog name where nothing fits)."""
    if gpu is None or (system.kind == "appliance" and system.gpu_count == 1):
        return FieldError(system.name)
    nvlink = "nvlink" in system.gpu_interconnect.lower()
    message = SYSTEM_NAMES.get((system.kind, nvlink))
    if message is None:
        return FieldError(system.name)
    return FieldError(message, {"count": system.gpu_count, "gpu": gpu.name})


STOCK_LABELS = {
    "in_stock": N_("In stock"), "on_order": N_("On order"), "on_request": N_("On request"),
}
LEVER_LABELS = {
    "chunked_loss": N_("Use a chunked cross-entropy loss"),
    "adamw_8bit": N_("Switch to 8-bit AdamW"),
    "gradient_checkpointing": N_("Turn on gradient checkpointing"),
    "accumulate": N_("Smaller micro-batch with gradient accumulation"),
    "lora": N_("Train LoRA adapters instead of every weight"),
    "qlora": N_("Use QLoRA (4-bit base)"),
    "offload_optimizer": N_("Offload optimizer states to CPU memory"),
    "shard_zero3": N_("Spread over %(gpus)s cards with ZeRO-3"),
}
LEVER_SPEEDS = {
    "chunked_loss": N_("about the same speed; needs a chunked or fused cross-entropy "
                       "(Liger Kernel, torchtune)"),
    "adamw_8bit": N_("about the same speed (bitsandbytes 8-bit Adam; 2 bytes of state per "
                     "parameter)"),
    "gradient_checkpointing": N_("about a fifth to a third slower: layers are recomputed in "
                                 "the backward pass"),
    "accumulate": N_("the same effective batch through gradient accumulation; lower GPU "
                     "utilisation"),
    "lora": N_("faster per step; trains an adapter instead of every weight (quality may "
               "differ)"),
    "qlora": N_("slower per step: 4-bit weights are dequantised for every matrix multiply"),
    "offload_optimizer": N_("a much slower optimizer step: the states live in CPU memory"),
    "shard_zero3": N_("more cards; ZeRO-3 moves 1.5 times the traffic of plain data "
                      "parallelism"),
}
"""What each lever costs in speed, in the customer's language (the engine's English note is
what the API and the CLI give, with its sources)."""
APPROXIMATE_PART_LABELS = {
    "approximate_tower": N_("approximate: the config has a vision or audio tower (vision_config),"
                            " which is not counted: the checkpoint holds more parameters than "
                            "shown"),
    "approximate_experts": N_("approximate: the config names experts but not how many a token "
                              "uses (num_experts_per_tok), so they are not counted: the model is "
                              "larger than shown"),
    "approximate_tie": N_("approximate: the config does not say whether the output layer shares "
                          "the embedding (tie_word_embeddings); it is counted as separate"),
}
"""What an approximate estimate names as not counted (both modes' pages)."""
ASSUMPTION_LABELS = {
    "approximate": N_("approximate: the model type %(model_type)s is not one we count exactly; "
                      "its parameters are counted as a Llama-style decoder (separate attention "
                      "projections, gated MLP, RMSNorm; experts when the config names them) "
                      "from %(fields)s"),
    **APPROXIMATE_PART_LABELS,
    "units": N_("GB = 10^9 bytes; every figure is per GPU"),
    "states_zero": N_("model states as the ZeRO paper counts them: 2 + 2 + 12 bytes per "
                      "trained parameter"),
    "states_hf": N_("model states as the Hugging Face docs count them: 6 + 4 + 8 bytes per "
                    "trained parameter"),
    "activations": N_("activations from per-token tensor counts measured on Hugging Face "
                      "training steps; the peak is the largest phase, not the sum of all terms"),
    "attention_eager": N_("attention: %(attention)s (score matrices grow with the square of "
                          "the sequence)"),
    "attention_linear": N_("attention: %(attention)s (linear in the sequence)"),
    "loss_standard": N_("loss: logits upcast to fp32 by Hugging Face's causal-LM loss"),
    "loss_chunked": N_("loss: chunked cross-entropy (1,024 tokens at a time)"),
    "overhead": N_("overhead: CUDA context and workspaces plus a fragmentation margin on the "
                   "step's tensors"),
    "reserve_default": N_("reserved: PyTorch's memory allocator keeps blocks the peak cannot "
                          "reuse, the freed bf16 logits and %(layers)s layers' activations of "
                          "segments, and at least the states plus a loss head of its own "
                          "(expandable segments off, PyTorch's default; measured on 15 H200 "
                          "steps)"),
    "reserve_fsdp": N_("reserved: under FSDP PyTorch's memory allocator keeps %(percent)s %% "
                       "of the step's own tensors beyond the live-tensor peak (expandable "
                       "segments off; fitted on 27 published FSDP runs)"),
    "reserve_expandable": N_("reserved: with expandable segments PyTorch's memory allocator "
                             "keeps the freed bf16 logits and %(layers)s layers' activations of "
                             "blocks the peak cannot reuse (measured on 2 H200 steps)"),
    "lora": N_("LoRA rank %(rank)s on %(targets)s, adapters in fp32 (PEFT's default), 16 bytes "
               "per trained parameter with AdamW"),
    "nf4_dq": N_("4-bit NF4 base with double quantisation"),
    "nf4": N_("4-bit NF4 base without double quantisation"),
    "qlora_prepared": N_("QLoRA as PEFT's prepare_model_for_kbit_training leaves the model: "
                         "embeddings, lm_head and norms in fp32, so the residual stream is fp32 "
                         "too, and lm_head is cast to bf16 for its matrix multiply"),
    "qlora_base_dtype": N_("embeddings, lm_head and norms stay in the base dtype (pure bf16 "
                           "does not run prepare_model_for_kbit_training)"),
    "qlora_fsdp_unprepared": N_("QLoRA under FSDP: prepare_model_for_kbit_training is not run "
                                "(FSDP joins each layer's norms and 4-bit weights into one "
                                "tensor of one type; TRL skips it for sharded QLoRA), so "
                                "embeddings, output layer and norms stay in the base precision"),
    "bnb_current": N_("bitsandbytes 0.43.2 or later: a 4-bit layer keeps no copy of its input "
                      "for the backward pass"),
    "bnb_saves_inputs": N_("bitsandbytes 0.41 to 0.43.1: every 4-bit layer keeps its input "
                           "until its backward pass, as in the QLoRA figures published in 2023 "
                           "and early 2024"),
    "moe": N_("mixture of experts: every expert is held in memory; activations follow the "
              "%(experts)s experts each token is routed to"),
    "moe_lora_fused": N_("LoRA on the experts as PEFT 0.21 builds it on transformers 5: one "
                         "adapter per fused expert tensor and expert, the fused gate/up at "
                         "rank 2r; what PEFT remaps onto the experts (dense and shared-expert "
                         "MLPs) is not adapted"),
    "moe_lora_per_expert": N_("LoRA on the experts as one linear layer per expert "
                              "(transformers 4 modules, most training stacks): rank r on every "
                              "expert's gate, up and down projection, the router and every "
                              "other block linear layer"),
    "moe_lora_merged": N_("PEFT adapts each fused expert tensor by merging it with its "
                          "adapter on every forward (W + BA) and keeps that merged copy for the "
                          "backward pass: one more copy of the adapted experts in the base's "
                          "dtype, one layer's with checkpointing (measured)"),
    "qlora_fused_experts_16bit": N_("QLoRA on fused experts as transformers 5 loads them: "
                                    "4-bit loading packs only linear layers, so the fused "
                                    "expert tensors and the routers stay 16-bit, and "
                                    "prepare_model_for_kbit_training makes them fp32 (measured "
                                    "with bitsandbytes 0.50.2); one linear layer per expert "
                                    "(transformers 4) would keep them in NF4"),
    "qlora_per_expert_nf4": N_("QLoRA with one linear layer per expert (transformers 4 "
                               "modules): the experts and routers in NF4"),
    "mla": N_("multi-head latent attention: activations of q, the keys and values expanded "
              "per head and the norms of the compressed q and kv, measured on whole training "
              "steps of a small DeepSeek-V3 (within %(within)s %%)"),
    "routers_fp32": N_("transformers keeps this model's routers in fp32 whatever dtype it is "
                       "loaded in (_keep_in_fp32_modules_strict): %(params)s parameters at 4 "
                       "bytes in the frozen base"),
    "identity_experts": N_("zero-computation experts: each token picks %(picks)s of the real "
                           "and identity experts, %(real)s real ones on average, which the "
                           "active parameters count; the parameters are the release's as "
                           "transformers 5.25 builds them (transformers 5.17 to 5.24 also "
                           "build a gate/up tensor for every identity expert, which a "
                           "fine-tune on those versions holds on top)"),
    "sinks": N_("attention sinks: transformers runs gpt-oss with eager attention (it has no "
                "SDPA path), which keeps the score matrix of every layer, sliding-window layers "
                "included; the softmax over the scores and sinks runs in fp32 under mixed "
                "precision and in bf16 on a bf16 base; measured on whole training steps of a "
                "small gpt-oss (within %(within)s %%)"),
    "gemma4": N_("Gemma 4: activations modelled with the sliding layers' heads and head width "
                 "on every layer, without the per-layer-embedding inputs and the shared layers' "
                 "wider MLP (approximate, not measured)"),
    "gpus": N_("%(gpus)s GPUs, data parallel, sharding %(sharding)s"),
    "tower": N_("multimodal checkpoint: the language model is sized and trained; its vision "
                "tower and projector (%(params)s parameters) are loaded beside it, frozen in "
                "bf16, never adapted"),
    "tower_audio": N_("multimodal checkpoint: the language model is sized and trained; its "
                      "vision and audio towers and their projectors (%(params)s parameters, "
                      "%(audio)s of them the audio tower's) are loaded beside it, frozen in "
                      "bf16, never adapted"),
    "tower_lora": N_("LoRA targets the language model only: PEFT's all-linear on the whole "
                     "multimodal checkpoint adapts the vision tower's linear layers too (about "
                     "9 million more parameters at rank 16); name the language model's modules "
                     "to train what is sized here"),
    "mamba_lora": N_("PEFT refuses all-linear on a Mamba hybrid (it will not adapt a Mamba "
                     "block's out_proj): all-linear here is every other linear layer, the list "
                     "to give PEFT"),
    "hybrid_layers": N_("hybrid model: %(mixers)s of its %(layers)s layers are %(kind)s, not "
                        "attention; their activations are those of transformers' PyTorch "
                        "path, measured (the optional flash-linear-attention or mamba_ssm "
                        "kernels keep less)"),
    "sharded_deepspeed": N_("ZeRO-3 as DeepSpeed runs it: its default gradient bucket (held "
                            "all run) and prefetch beside the gathered layer on each GPU"),
    "sharded_fsdp": N_("ZeRO-3 as PyTorch FSDP (full shard) runs it: the computing layer and "
                       "the prefetched next one gathered on each GPU, no standing gradient "
                       "bucket"),
    "fsdp_root": N_("FSDP's root unit (embeddings, final norm and output layer, %(params)s "
                    "parameters) is not released after the forward pass: each GPU holds it "
                    "whole, in bf16, until the end of the backward pass"),
    "fsdp_base_bf16": N_("the fp32 base is gathered in bf16 by FSDP's mixed precision, so no "
                         "layer is cast again for its matrix multiply"),
    "qlora_stats_whole": N_("bitsandbytes keeps the 4-bit quantisation statistics outside the "
                            "parameters, so FSDP and ZeRO-3 do not split them: every GPU holds "
                            "them whole, %(stats_bytes)s"),
    "precision_amp": N_("training precision: mixed (amp), fp32 master weights with bf16 "
                        "autocast, as the Hugging Face Trainer's bf16=True"),
    "precision_bf16": N_("training precision: pure bf16, weights, gradients and optimizer "
                         "states in bf16 with no fp32 copy (torchtune, LitGPT bf16-true)"),
    "lora_bf16": N_("LoRA rank %(rank)s on %(targets)s, adapters in bf16, 8 bytes per trained "
                    "parameter with AdamW"),
    "base_fp32": N_("frozen base loaded in fp32 (4 bytes per parameter, cast to bf16 one layer "
                    "at a time); activations are those of a bf16 base"),
    "framework_torchtune": N_("torchtune preset: precision as its recipes (dtype: bf16); its "
                              "chunked loss and activation offloading are separate switches; "
                              "torch.compile is not modelled"),
    "framework_litgpt": N_("LitGPT preset: precision as its recipes (bf16-true); LitGPT computes "
                           "the output layer and the loss in chunks: choose the chunked loss to "
                           "model that"),
    "litgpt_own_head": N_("LitGPT keeps its own output layer: converting the checkpoint copies "
                          "the tied embedding into it, %(params)s more parameters"),
    "litgpt_qlora": N_("LitGPT QLoRA: Lightning quantises the output layer to 4 bits as well, "
                       "from an fp16 copy, so each 4-bit matrix multiply holds the layer "
                       "unpacked in fp16 and in bf16 (4 bytes per parameter of the largest "
                       "layer, the output layer)"),
    "litgpt_next_forward": N_("LitGPT keeps the previous micro-step's logits until the next "
                              "forward pass returns; counted as a moment of its own"),
    "litgpt_next_forward_bnb": N_("LitGPT keeps the previous micro-step's logits until the "
                                  "next forward pass returns, and with them every input "
                                  "bitsandbytes 0.41 to 0.43.1 saved: the peak is the end of "
                                  "the next forward pass with the previous step's 4-bit inputs "
                                  "still held"),
    "litgpt_no_sync": N_("LitGPT accumulates gradients under FSDP's no_sync: each GPU holds the "
                         "whole, unsharded gradients of every layer that trains anything, "
                         "frozen weights included, until the synchronising micro-step"),
    "framework_unsloth": N_("Unsloth as it runs: fp32 adapters under bf16 autocast (a full "
                            "fine-tune in pure bf16), its fused cross-entropy without full "
                            "logits (counted as the chunked loss), its LoRA kernels (a "
                            "recomputed layer keeps its norms' outputs, q, k, v and the "
                            "attention output, the residual, the MLP's gate and up outputs and "
                            "one gradient of their width), embeddings, lm_head and norms left "
                            "in bf16, expandable segments and, with gradient checkpointing, its"
                            " checkpoints offloaded to CPU memory (three layer inputs stay on "
                            "the GPU). Unsloth's published long-context figures are about a "
                            "third higher per token: they were measured with its code of "
                            "December 2024, which kept more (per-layer RoPE tables, an "
                            "out-of-place LoRA product) and comes within 5 per cent of them"),
}
"""The engine's assumptions (``ASSUMPTION_TEXTS``), by key, in the customer's language."""
WARNINGS = {
    UNIFIED_MEMORY_WARNING: N_(
        "Shared memory: the operating system and CPU programs use the same memory; the usable "
        "figure already keeps a reserve for them."
    ),
    ZERO3_WITHOUT_NVLINK_WARNING: N_(
        "ZeRO-3 gathers every layer's weights each step; without NVLink that traffic goes over "
        "PCIe or the network, which is slower."
    ),
    PAGED_OPTIMIZER_WARNING: N_(
        "Paged optimizers move states to CPU memory only under memory pressure; they are "
        "counted on the GPU here."
    ),
}
"""The engine's warnings (its named constants), in the customer's language."""
SEGMENTS: tuple[tuple[str, str], ...] = (
    ("weights", N_("Weights")),
    ("adapter", N_("Adapter")),
    ("gradients", N_("Gradients")),
    ("optimizer", N_("Optimizer states")),
    ("activations", N_("Activations")),
    ("overhead", N_("Overhead")),
)
CHART_UNITS = 1000
"""Bars are drawn in a 0..1000 box stretched to the page's width; every text of the chart is
HTML beside them, so it keeps the page's font size on a phone."""


@dataclass(frozen=True)
class CardRow:
    """A card's row; what the template reads of it several times is worked out once
    (``cached_property``, kept in the instance's ``__dict__`` beside the frozen fields)."""

    gpu: GpuRecord
    fit: CardFit
    lever: Lever | None
    lever_label: tuple[FieldError, ...]
    lever_speed: tuple[FieldError, ...]
    warnings: tuple[FieldError, ...]
    quote_url: str
    highlighted: bool
    recommended: bool = False
    time: FieldError | None = None
    """The training time for the customer's data on this card, if it has one."""

    @cached_property
    def state(self) -> str:
        """``fits`` (with headroom), ``tight`` or ``nofit``."""
        return "fits" if self.fit.roomy else "tight" if self.fit.fits else "nofit"

    @cached_property
    def setup_changes(self) -> tuple[FieldError, ...]:
        """With which standard settings it fits, where it does not fit as set."""
        return setup_changes(self.fit.setup)

    def rank(self) -> StorefrontKey:
        return storefront_key(fits=self.fit.fits, roomy=self.fit.roomy,
                              price_eur_net=self.gpu.price_eur_net,
                              stock_status=self.gpu.stock_status, free_bytes=self.fit.free_bytes)


@dataclass(frozen=True)
class SystemRow:
    system: SystemRecord
    fit: SystemFit
    warnings: tuple[FieldError, ...]
    quote_url: str
    recommended: bool = False
    time: FieldError | None = None
    """The training time for the customer's data on the system's cards together."""

    @cached_property
    def name(self) -> FieldError:
        return system_name(self.system, self.fit.gpu)

    @cached_property
    def roomy(self) -> bool:
        return self.fit.fits and (
            self.fit.free_bytes_per_gpu >= headroom_bytes(self.fit.gpu.usable_bytes))

    @cached_property
    def state(self) -> str:
        return "fits" if self.roomy else "tight" if self.fit.fits else "nofit"

    @cached_property
    def setup_changes(self) -> tuple[FieldError, ...]:
        """With which standard settings it fits, where it does not fit as set."""
        return setup_changes(self.fit.setup)

    def rank(self) -> StorefrontKey:
        return storefront_key(fits=self.fit.fits, roomy=self.roomy,
                              price_eur_net=self.system.price_eur_net,
                              stock_status=self.system.stock_status,
                              free_bytes=self.fit.free_bytes_per_gpu)


@dataclass(frozen=True)
class Verdict:
    fits: bool
    message: FieldError
    free_bytes: int | None = None
    tight: bool = False
    margin_bytes: int | None = None
    recommended: str = ""
    """The row the verdict names (``card-<slug>`` or ``system-<slug>``), highlighted."""
    time: FieldError | None = None
    """How long the row the verdict names trains on the customer's data."""

    @property
    def state(self) -> str:
        return "no" if not self.fits else "tight" if self.tight else "ok"


@dataclass(frozen=True)
class ChartBar:
    label: str
    x: float
    width: float
    css: str
    value_bytes: int
    nominal_gb: int | None = None


@dataclass(frozen=True)
class Chart:
    segments: tuple[ChartBar, ...]
    cards: tuple[ChartBar, ...]
    total_bytes: int
    scale_max_bytes: int
    marker_x: float
    """Where this job's total sits on every card's bar."""
    width: int = CHART_UNITS


@dataclass(frozen=True)
class ResultView:
    result: EstimateResult
    model: ModelRecord | None
    verdict: Verdict
    cards: tuple[CardRow, ...]
    systems: tuple[SystemRow, ...]
    chart: Chart
    legend: tuple[tuple[str, str, int], ...]
    states_range: tuple[int, int]
    """Model states held by one GPU without sharding (the two accountings), which with
    sharding is the sum over every GPU."""
    states_sharded: bool
    """Several GPUs share the states (ZeRO): one GPU holds ``result.model_states_bytes``."""
    warnings: tuple[FieldError, ...]
    assumptions: tuple[FieldError, ...]
    thumb: RuleOfThumb | None = None
    """Where a buyer's rule of thumb falls short, the terms it leaves out."""
    compared: tuple[CardRow, ...] = ()
    """Comparison cards the customer named (not sold: no verdict, quote or recommendation)."""

    @property
    def recommendation_changes(self) -> tuple[FieldError, ...]:
        """What the recommended offer changes, for the line under the verdict."""
        found = self.result.recommendation
        return setup_changes(found.setup if found is not None else None)

    @property
    def other_offer(self) -> CardRow | SystemRow | None:
        """With a card named, the recommendation's row when it is another offer: the line
        under the verdict names the cheapest offer that holds the job."""
        found = self.result.recommendation
        if found is None:
            return None
        if found.kind == "gpu":
            card = next((r for r in self.cards if r.gpu.slug == found.slug), None)
            return None if card is None or card.highlighted else card
        return next((r for r in self.systems if r.system.slug == found.slug), None)

    @property
    def recommendation_hours_as_set(self) -> float | None:
        """The training time on the recommended offer without its setup, where it has one and
        the speed model knows it: the line says what the setup costs ("3.1 h instead of
        2.4 h")."""
        found, best = self.result.recommendation, self.best
        if found is None or found.setup is None or best is None:
            return None
        training = best.fit.training
        return training.hours if training is not None else None

    @property
    def best(self) -> CardRow | SystemRow | None:
        """The row the verdict names, for the phone's verdict bar (price and quote link)."""
        rows: tuple[CardRow | SystemRow, ...] = (*self.cards, *self.systems)
        return next((row for row in rows if row.recommended), None)


SETUP_LABELS: Final = {
    "gradient_checkpointing": N_("gradient checkpointing"),
    "batch_size": N_("micro-batch %(batch)s with %(accumulation)s× gradient accumulation"),
    "optimizer": N_("8-bit AdamW"),
    "offload": N_("optimizer states in CPU memory"),
    "method": N_("QLoRA (a 4-bit base)"),
}
"""What a setup changes (``app/engine/setup.py``), as the verdict and the rows say it."""


THUMB_BYTES_PER_PARAM: Final = {"qlora": 0.5, "lora": 2.0, "full": 16.0}
"""The buyer's rule of thumb: 4-bit weights for QLoRA ("70B QLoRA fits 48 GB"), 16-bit
weights for LoRA, the mixed-precision Adam recipe's 16 bytes per parameter for a full
fine-tune (ZeRO paper); nothing else."""
THUMB_MARGIN: Final = 1.25
"""The line shows when the job needs this much more than the rule of thumb says."""
KBIT_PREPARED_FP32_BYTES: Final = 4
"""PEFT's prepare_model_for_kbit_training casts every parameter it does not quantise
(embeddings, output layer, norms) to fp32 (app/engine/states.py)."""


@dataclass(frozen=True)
class RuleOfThumb:
    """Why the job needs more than a buyer's rule of thumb."""

    thumb_bytes: int
    total_bytes: int
    fp32_rest_bytes: int
    """QLoRA: the parameters kept out of 4 bits, in fp32 (0 for other methods)."""
    activations_bytes: int
    overhead_bytes: int


def rule_of_thumb(result: EstimateResult, method: str, gpus: int) -> RuleOfThumb | None:
    """The largest terms a rule of thumb leaves out, when the job needs clearly more than it
    says (one card; the figures per GPU)."""
    per_byte = THUMB_BYTES_PER_PARAM.get(method)
    if per_byte is None or gpus != 1:
        return None
    thumb = int(result.params.total * per_byte)
    total = result.per_gpu_bytes.total
    if total <= thumb * THUMB_MARGIN:
        return None
    rest = result.params.other * KBIT_PREPARED_FP32_BYTES if method == "qlora" else 0
    return RuleOfThumb(thumb, total, rest, result.per_gpu_bytes.activations,
                       result.per_gpu_bytes.overhead)


def setup_changes(setup: Setup | None) -> tuple[FieldError, ...]:
    """A setup's changes in the customer's words, in the order they were tried."""
    if setup is None:
        return ()
    changes = setup.changes
    return tuple(
        FieldError(SETUP_LABELS[key], {"batch": int(str(changes["batch_size"])),
                                       "accumulation": int(str(
                                           changes["gradient_accumulation"]))}
                   if key == "batch_size" else {})
        for key in changes if key in SETUP_LABELS)


def token_text(tokens: int, epochs: int) -> str:
    """The customer's data as the time's text names it: ``10M``, ``250k``, ``1.5B`` (a plain
    number where no suffix divides it), with ``2 × `` for two epochs."""
    text = f"{tokens:,}"
    for factor, suffix in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "k")):
        if tokens >= factor and (tokens * 10) % factor == 0:
            text = f"{tokens / factor:g}{suffix}"
            break
    return f"{epochs} × {text}" if epochs > 1 else text


def training_time(training: Training | None, calc: CalculatorInput) -> FieldError | None:
    """"about 3.1 h for 10M tokens" (minutes under an hour, days from two days on)."""
    if training is None:
        return None
    tokens = token_text(calc.tokens, calc.epochs)
    one = tokens == "1"
    hours = training.hours
    if hours < 1:
        return FieldError(N_("about %(minutes)s min for 1 token") if one else
                          N_("about %(minutes)s min for %(tokens)s tokens"),
                          {"minutes": max(1, round(hours * 60)), "tokens": tokens})
    if hours < 48:
        return FieldError(N_("about %(hours)s h for 1 token") if one else
                          N_("about %(hours)s h for %(tokens)s tokens"),
                          {"hours": round(hours, 1), "tokens": tokens})
    return FieldError(N_("about %(days)s days for 1 token") if one else
                      N_("about %(days)s days for %(tokens)s tokens"),
                      {"days": round(hours / 24, 1), "tokens": tokens})


def quote_urls(calc: CalculatorInput) -> Callable[[str], str]:
    """The quote form's address for each item of one result, with the form's fields: the
    form's part encoded once rather than once per card and system (the item comes first,
    and no form field is named ``item``)."""
    query = urlencode(calc.query())
    rest = f"&{query}" if query else ""

    def url(item: str) -> str:
        return f"/quote?item={quote_plus(item)}{rest}"

    return url


def _warnings(texts: tuple[str, ...]) -> tuple[FieldError, ...]:
    return tuple(FieldError(WARNINGS.get(text, text)) for text in texts)


def _lever_speed(lever: Lever) -> tuple[FieldError, ...]:
    """Each part's price in speed (a lever may combine two changes, ``a+b``)."""
    return tuple(FieldError(LEVER_SPEEDS[part]) if part in LEVER_SPEEDS else FieldError(
        lever.speed) for part in lever.lever.split("+"))


def _lever_label(lever: Lever) -> tuple[FieldError, ...]:
    params: dict[str, int | str] = {}
    if "gpus" in lever.change:
        params["gpus"] = int(str(lever.change["gpus"]))
    return tuple(FieldError(LEVER_LABELS.get(part, part), params)
                 for part in lever.lever.split("+"))


def _fits(calc: CalculatorInput, row: CardRow) -> Verdict:
    if row.fit.roomy:
        return Verdict(True, FieldError(
            N_("Fits on %(count)s× %(card)s, %(free_bytes)s free per card"),
            {"count": calc.gpus, "card": row.gpu.name, "free_bytes": row.fit.free_bytes},
        ), row.fit.free_bytes, recommended=f"card-{row.gpu.slug}")
    margin = headroom_bytes(row.fit.usable_bytes)
    return Verdict(True, FieldError(
        N_("Fits tightly on %(count)s× %(card)s: only %(free_bytes)s free per card"),
        {"count": calc.gpus, "card": row.gpu.name, "free_bytes": row.fit.free_bytes},
    ), row.fit.free_bytes, tight=True, margin_bytes=margin, recommended=f"card-{row.gpu.slug}")


def _recommended(calc: CalculatorInput, recommendation: Recommendation, rows: tuple[CardRow, ...],
                 systems: tuple[SystemRow, ...]) -> Verdict | None:
    """The headline for the estimate's recommendation: the cheapest offer
    that fits as set or with a setup; the line under it says its price, time and changes."""
    if recommendation.kind == "gpu":
        row = next((r for r in rows if r.gpu.slug == recommendation.slug), None)
        if row is None:
            return None
        if recommendation.setup is None:
            return _fits(calc, row)
        return Verdict(True, FieldError(
            N_("Fits on %(count)s× %(card)s with a standard setting"),
            {"count": calc.gpus, "card": row.gpu.name}),
            row.fit.usable_bytes - recommendation.setup.total_bytes,
            recommended=f"card-{row.gpu.slug}")
    system = next((s for s in systems if s.system.slug == recommendation.slug), None)
    if system is None:
        return None
    return Verdict(True, FieldError(
        N_("Fits on the %(system)s") if recommendation.setup is None
        else N_("Fits on the %(system)s with a standard setting"),
        {"system": system.name}),
        recommended=f"system-{system.system.slug}")


def _verdict(calc: CalculatorInput, rows: tuple[CardRow, ...],
             systems: tuple[SystemRow, ...],
             recommendation: Recommendation | None = None) -> Verdict:
    """The headline, from rows already ranked best first (:func:`storefront_key`): the
    recommendation when the customer named no card, else the named card's answer."""
    chosen = next((row for row in rows if row.highlighted), None)
    # Without a card named, the verdict always leads with the recommendation: the cheapest
    # priced offer that fits as set or with a setup, or, with every price on request, the one
    # with the least memory that does.
    if chosen is None and recommendation is not None:
        named = _recommended(calc, recommendation, rows, systems)
        if named is not None:
            return named
    if chosen is not None and chosen.fit.fits:
        return _fits(calc, chosen)
    fitting = [row for row in rows if row.fit.fits]
    if fitting:
        best = fitting[0]
        if chosen is None:
            return _fits(calc, best)
        return Verdict(False, FieldError(
            N_("Does not fit on %(card)s; the best card that fits is %(other)s"),
            {"card": chosen.gpu.name, "other": best.gpu.name},
        ), recommended=f"card-{best.gpu.slug}")
    if chosen is not None and chosen.lever is not None:
        return Verdict(False, FieldError(
            N_("Does not fit on %(card)s; see below what makes it fit"),
            {"card": chosen.gpu.name},
        ), recommended=f"card-{chosen.gpu.slug}")
    sharded = [row for row in rows
               if row.fit.fewest_cards_zero3 and row.fit.fewest_cards_zero3 <= LEVER_MAX_CARDS]
    if sharded:
        row = min(sharded, key=lambda r: (r.fit.fewest_cards_zero3 or 0) * r.fit.usable_bytes)
        return Verdict(False, FieldError(
            N_("Does not fit one card; it takes %(count)s× %(card)s with ZeRO-3"),
            {"count": row.fit.fewest_cards_zero3 or 0, "card": row.gpu.name},
        ), recommended=f"card-{row.gpu.slug}")
    fitting_systems = [s for s in systems if s.fit.fits]
    if fitting_systems:
        return Verdict(False, FieldError(
            N_("Does not fit one card; it fits the %(system)s"),
            {"system": fitting_systems[0].name},
        ), recommended=f"system-{fitting_systems[0].system.slug}")
    if chosen is not None:
        return Verdict(False, FieldError(N_(
            "Does not fit on %(card)s, and no card or system we sell holds this job as set; "
            "see the levers in the table."), {"card": chosen.gpu.name}))
    return Verdict(False, FieldError(N_(
        "No card or system we sell holds this job as set; see the levers in the table."
    )))


def _chart(result: EstimateResult, gpus: tuple[GpuRecord, ...]) -> Chart:
    breakdown = result.per_gpu_bytes
    return bar_chart([(label, key, int(getattr(breakdown, key))) for key, label in SEGMENTS],
                     breakdown.total, gpus)


def bar_chart(parts: Sequence[tuple[str, str, int]], total: int,
              gpus: tuple[GpuRecord, ...]) -> Chart:
    """One bar for the job (by part: label, css class, bytes) and one per card with its full
    name, largest first, all on one scale, with the job's total marked on each card's bar.
    The Serve mode's chart is drawn by the same function (``app/web/serving_view.py``)."""
    scale = max([total, *(gpu.usable_bytes for gpu in gpus)]) or 1
    x = 0.0
    segments: list[ChartBar] = []
    for label, css, value in parts:
        if value <= 0:
            continue
        width = CHART_UNITS * value / scale
        segments.append(ChartBar(label, x, width, css, value))
        x += width
    cards = tuple(
        ChartBar(gpu.name, 0, CHART_UNITS * gpu.usable_bytes / scale,
                 "fits" if gpu.usable_bytes >= total else "short", gpu.usable_bytes,
                 gpu.memory_nominal_gb)
        for gpu in sorted(gpus, key=lambda g: (-g.usable_bytes, g.name))
    )
    return Chart(segments=tuple(segments), cards=cards, total_bytes=total,
                 scale_max_bytes=scale, marker_x=CHART_UNITS * total / scale)


def build(calc: CalculatorInput, catalog: Catalog, sizing: Sizing) -> ResultView:
    result = sizing.result
    gpus = {gpu.slug: gpu for gpu in catalog.gpus}
    cheapest: dict[str, Lever] = {}
    for lever in result.levers:
        cheapest.setdefault(lever.gpu, lever)
    quote = quote_urls(calc)
    every = tuple(sorted((
        CardRow(
            gpu=gpus[fit.gpu], fit=fit, lever=cheapest.get(fit.gpu),
            lever_label=_lever_label(cheapest[fit.gpu]) if fit.gpu in cheapest else (),
            lever_speed=_lever_speed(cheapest[fit.gpu]) if fit.gpu in cheapest else (),
            warnings=_warnings(fit.warnings),
            quote_url=quote(f"gpu:{fit.gpu}"),
            highlighted=fit.gpu == calc.gpu,
            time=training_time(fit.training, calc),
        )
        for fit in result.fits if fit.gpu in gpus
    ), key=lambda row: (*row.rank(), row.gpu.name)))
    rows = tuple(row for row in every if not row.gpu.comparison_only)
    compared = tuple(row for row in every if row.gpu.comparison_only)
    systems = tuple(sorted((
        SystemRow(row.system, row, _warnings(row.warnings),
                  quote(f"system:{row.system.slug}"),
                  time=training_time(row.training, calc))
        for row in sizing.systems
    ), key=lambda row: (*row.rank(), row.system.name)))
    verdict = _verdict(calc, rows, systems, result.recommendation)
    times = {f"card-{row.gpu.slug}": row.time for row in rows}
    times.update({f"system-{row.system.slug}": row.time for row in systems})
    verdict = dataclasses.replace(verdict, time=times.get(verdict.recommended))
    rows = tuple(dataclasses.replace(row, recommended=True)
                 if verdict.recommended == f"card-{row.gpu.slug}" else row for row in rows)
    systems = tuple(dataclasses.replace(row, recommended=True)
                    if verdict.recommended == f"system-{row.system.slug}" else row
                    for row in systems)
    by_accounting: Mapping[str, int] = result.model_states_by_accounting
    states = sorted(by_accounting.values()) or [result.model_states_bytes]
    assumptions = tuple(FieldError(ASSUMPTION_LABELS[key], values)
                        for key, values in result.assumption_items)
    model = next((m for m in catalog.models if m.slug == calc.model), None)
    legend = tuple(
        (key, label, int(getattr(result.per_gpu_bytes, key))) for key, label in SEGMENTS
    )
    return ResultView(
        result=result, model=model, verdict=verdict, cards=rows,
        systems=systems, chart=_chart(result, tuple(gpus[r.fit.gpu] for r in rows)),
        legend=legend, states_range=(states[0], states[-1]),
        states_sharded=calc.gpus > 1 and calc.sharding != "none",
        warnings=_warnings(result.warnings),
        assumptions=assumptions,
        thumb=rule_of_thumb(result, calc.method, calc.gpus),
        compared=compared,
    )
