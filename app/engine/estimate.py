"""One estimate: a model, a way of training it, and the cards it is held against.

This composes :mod:`shapes`, :mod:`states`, :mod:`activations`, :mod:`overhead`, :mod:`fit` and
:mod:`capabilities` into one plain result. The web pages, the partner API and the CLI all call
:func:`estimate` through the estimates service; none of them computes memory itself.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from app.engine import framework_litgpt as litgpt
from app.engine import framework_unsloth as unsloth
from app.engine.activations import (
    ATTENTIONS,
    CHUNKED_LOSS_TOKENS,
    LOSS_HEADS,
    ActivationProfile,
    ActivationSetup,
    Attention,
    LossHead,
    activation_profile,
    bnb_saved_inputs_bytes_per_token,
    regime_for,
)
from app.engine.architectures.deepseek import MLA_MODEL_TYPES
from app.engine.architectures.gemma4 import GEMMA4_MODEL_TYPES
from app.engine.architectures.moe import SINK_MODEL_TYPES
from app.engine.capabilities import capabilities
from app.engine.checkpointing import Checkpointing, as_set
from app.engine.errors import EngineError
from app.engine.fit import PhaseTerms, StepModel
from app.engine.overhead import (
    STRANDED_LOGITS_BYTES_PER_VOCAB,
    fixed_overhead_bytes,
    layer_segments,
    reserve_fraction,
    reserve_terms,
)
from app.engine.precision import (
    ADAPTER_DTYPES,
    BASE_DTYPES,
    FRAMEWORKS,
    PRECISIONS,
    AdapterDtype,
    BaseDtype,
    Framework,
    Precision,
    TrainingPrecision,
    resolve,
)
from app.engine.shapes import ModelShape
from app.engine.sharding import (
    SHARDING_IMPLS,
    ShardingImpl,
    fsdp_root_params,
    sharded_extras,
    unsharded_quant_state,
)
from app.engine.speed import (
    AttentionLayers,
    CardSpeed,
    SpeedJob,
    StepWork,
    Training,
    step_work,
    training,
)
from app.engine.states import (
    ACCOUNTINGS,
    KBIT_PREPARED_BYTES,
    METHODS,
    MOE_LORAS,
    NF4_BITS,
    OFFLOADS,
    OPTIMIZERS,
    QUANTS,
    SHARDINGS,
    Accounting,
    LoraSetup,
    Method,
    ModelStates,
    MoeLora,
    Offload,
    Optimizer,
    Quant,
    Sharding,
    kbit_prepared,
    lora_target_specs,
    merged_parameter_params,
    packed_specs,
    quant_state_bytes,
    shard_states,
    single_gpu_states,
)

# Semantic: major when a field's meaning changes, minor when the arithmetic changes.
# 1.1.0: Gemma 2 soft-capping and eager masks, tied lm_head copies and the 16 B/param floor
# under the hf accounting, all from the calibration grid (tools/calibrate).
# 1.2.0: training precision (pure bf16, bf16 adapters, fp32 base) and framework presets;
# activation offload under checkpointing; LoRA on lm_head (issue 15).
# 1.3.0: QLoRA as measured with bitsandbytes (prepare_model_for_kbit_training's fp32 params,
# residual stream and lm_head copy; the quantisation state; bnb_saves_inputs) (issue 15).
# 1.4.0: what ZeRO-3/FSDP hold beyond the shards (sharding.py): DeepSpeed's gradient bucket
# and prefetch, FSDP's prefetched next layer; Job.sharding_impl (issue 15).
# 1.5.0: reserved memory: the caching allocator's reserve fitted on published runs reporting
# both counters (overhead.py), allocated_bytes and reserved_bytes, Job.expandable_segments.
# 1.6.0: mixture-of-experts and MLA families (arch_moe.py); LoRA on fused experts as PEFT 0.21
# builds it by default, Job.moe_lora "per-expert" for one adapter per expert (issue 16).
# 1.7.0: serving: vLLM's padding layers of hybrid models (serving_kv.grouped_layers) and the
# tensor-parallel NCCL memory fitted on 14 vLLM 0.19 logs (1.75 GiB, was 1 GiB) (issue 17).
# 1.8.0: serving decode: the per-layer time fitted on 15 published measurements (27 us, was
# 20) and the tensor-parallel all-reduce on measured H100 latencies (3.5 us, was 10) (issue 17).
# 1.9.0: FSDP's root unit held whole through forward and backward, a GPU copy of each gathered
# shard under FSDP CPU offload, an fp32 base gathered in bf16 by FSDP's mixed precision, and
# 4-bit quantisation statistics whole on every sharded card (sharding.py); the assumptions
# name the FSDP reserve fraction the total carries (issue 15).
# 1.10.0: QLoRA under FSDP is not prepared by prepare_model_for_kbit_training (one dtype per
# FlatParameter; TRL skips it for sharded QLoRA): embeddings, lm_head and norms stay bf16.
# 1.11.0: what LitGPT holds beyond the shared model (framework_litgpt.py): its own lm_head for
# tied checkpoints, QLoRA's NF4 lm_head dequantised via fp16, the previous micro-step held
# into the next forward (with bitsandbytes < 0.43.2 its 4-bit inputs), FSDP's unsharded
# gradients under no_sync (issue 15).
# 1.12.0: QLoRA on fused experts as transformers 5 loads them (experts and routers 16-bit,
# fp32 after prepare_model_for_kbit_training; per-expert keeps them NF4), PEFT's merged expert
# weights, MLA's latent norms, shared-expert and dense-layer MLP widths, gpt-oss's sink softmax
# dtype and eager attention's in-layer transients (tools/calibrate/results/cpu-moe.json; issue
# 16).
# 1.13.0: LitGPT's multi-head attention keeps the whole fused qkv output alive through the
# value's view that SDPA saves (framework_litgpt.py, point 7; issue 15).
# 1.14.0: training speed (speed.py): tokens per second, step seconds, hours for the customer's
# data and MFU per card and system, from FLOPs, memory-bound bytes and communication against
# the catalog's peaks; Job.dataset_tokens and Job.epochs (issue 26).
# 1.15.0: the caching allocator's reserve as the blocks a step's peak cannot reuse (the freed
# bf16 logits, the layers' segments, a loss head in segments of its own after the first
# optimizer step) instead of a fraction of the per-step tensors, and the CUDA context as
# measured with PyTorch 2.11 / CUDA 13.0 (780 MiB, was 1 GiB), both on 15 H200 steps
# (overhead.py); under checkpointing the backward starts without autocast's cached bf16 weight
# copies, which the forward did not save (issue 28).
# 1.16.0: --framework unsloth as Unsloth trains (framework_unsloth.py): its fused loss without
# full logits and its checkpoints offloaded to CPU memory; the allocator's stranded blocks only
# at the moments whose requests cannot reuse them (the loss head and the forward), and no
# layers' segments beside a chunked loss (issue 28, point 3).
ENGINE_VERSION = "1.16.0"
"""Bumped whenever a figure for the same input can change; returned with every result."""

MEASURED_WITHIN_PERCENT = 6
"""The largest error, in per cent, of the MLA and attention-sink steps the engine was held to
(tools/calibrate/results/cpu-moe.json; tests/engine/test_calibration_moe.py keeps it true)."""

MAX_GPUS = 1024
MAX_BATCH_SIZE = 1 << 20
MAX_DATASET_TOKENS = 10**15
"""Tokens per epoch: 15 x 10^12 trained Llama 3 (its model card); a bound, not a limit of use."""
MAX_EPOCHS = 10_000

HEADROOM_FRACTION = 0.05
"""A job that leaves less than this share of a card's usable memory free fits only tightly:
allocator growth over a long run, a longer sample or a library update can take it (5 %, the
margin issue 18 asks for; the fragmentation margin in overhead.py covers one step only)."""
HEADROOM_MIN_BYTES = 10**9
"""...and never less than 1 GB, for small cards (issue 18, point 11)."""
LEVER_MAX_CARDS = 8
"""The most cards a lever spreads a job over: one HGX/DGX-class board holds 8 GPUs, the largest
system a GPU shop sells as one machine (issue 18, point 6: "spread over 40 cards" is no
advice)."""

# Price in speed of each lever, as the article's sources state it.
CHECKPOINTING_SPEED = (
    "about 20-33 % slower: layers are recomputed in the backward pass "
    "(Hugging Face: about 20 %; ZeRO paper: 33 % recompute overhead)"
)
ADAM_8BIT_SPEED = "about the same speed (bitsandbytes 8-bit Adam; 2 bytes of state per param)"
LORA_SPEED = "faster per step; trains an adapter instead of every weight (quality may differ)"
QLORA_SPEED = "slower per step: 4-bit weights are dequantised for every matmul"
ACCUMULATION_SPEED = "same effective batch through gradient accumulation; lower GPU utilisation"
CHUNKED_LOSS_SPEED = (
    "about the same speed; needs a chunked or fused cross-entropy (Liger Kernel, torchtune)"
)
SHARDING_SPEED = "more cards; ZeRO-3/FSDP moves 1.5x the traffic of plain data parallelism"
OFFLOAD_SPEED = "much slower optimizer step: states live in CPU memory (ZeRO-Offload)"

# Warnings are part of the JSON document (API, CLI) as these English sentences; surfaces that
# translate them compare against these names, never against the wording.
UNIFIED_MEMORY_WARNING = (
    "unified memory: the operating system and CPU processes share it; the usable "
    "figure already leaves a reserve for them"
)
ZERO3_WITHOUT_NVLINK_WARNING = (
    "zero3 gathers every layer's parameters over the GPU link each step; this card "
    "has no NVLink, so that traffic goes over PCIe or the network"
)
PAGED_OPTIMIZER_WARNING = (
    "paged optimizers move states to CPU memory only under memory pressure; they are "
    "counted on the GPU here"
)

Fidelity = Literal["exact", "approximate"]
"""How the parameters were counted: see :attr:`EstimateResult.fidelity`."""

Assumption = tuple[str, dict[str, str | int | float]]
"""An assumption's key in :data:`ASSUMPTION_TEXTS` and the values its wording takes."""


def headroom_bytes(usable_bytes: int) -> int:
    """The free memory a fit needs to count as roomy rather than tight on a card of
    ``usable_bytes``: :data:`HEADROOM_FRACTION` of it, at least :data:`HEADROOM_MIN_BYTES`."""
    return max(math.ceil(usable_bytes * HEADROOM_FRACTION), HEADROOM_MIN_BYTES)


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """A card as the engine needs it; the catalog maps its rows to these."""

    slug: str
    name: str
    usable_bytes: int
    compute_capability: str
    interconnect: str = "pcie"
    unified_memory: bool = False
    # Speed figures from the catalog (speed.py); None where the catalog has none.
    bf16_tflops: float | None = None
    fp4_tflops: float | None = None
    memory_bandwidth_gbps: float | None = None
    interconnect_bandwidth_gbps: float | None = None
    comparison_only: bool = False
    """A card the shop does not sell, named to compare with (never recommended)."""
    collective_link: str | None = None
    """The link a system's ring collectives cross where it is slower than the card's own
    (``pcie`` between two NVLink domains); None: ``interconnect``."""

    @property
    def speed(self) -> CardSpeed:
        """The card's speed figures as :mod:`speed` takes them."""
        return CardSpeed(bf16_tflops=self.bf16_tflops,
                         memory_bandwidth_gbps=self.memory_bandwidth_gbps,
                         interconnect=self.collective_link or self.interconnect,
                         interconnect_bandwidth_gbps=self.interconnect_bandwidth_gbps,
                         fp4_tflops=self.fp4_tflops,
                         compute_capability=self.compute_capability)


@dataclass(frozen=True, slots=True)
class Job:
    """How the customer wants to train. Defaults are the common single-GPU LoRA recipe."""

    method: Method = "lora"
    optimizer: Optimizer = "adamw"
    accounting: Accounting = "zero"
    lora_rank: int = 16
    lora_targets: str | tuple[str, ...] = "all-linear"
    lora_dropout: float = 0.0
    quant: Quant | None = None
    batch_size: int = 1
    seq_len: int = 2048
    gradient_checkpointing: bool = False
    attention: Attention = "flash"
    gpus: int = 1
    sharding: Sharding = "none"
    offload: Offload = "none"
    loss_head: LossHead = "standard"
    fused_optimizer_step: bool = False
    activation_offload: bool = False
    gradient_accumulation: int = 1
    # None: as the framework's recipes do (precision.FRAMEWORK_PRESETS).
    precision: Precision | None = None
    adapter_dtype: AdapterDtype | None = None
    base_dtype: BaseDtype | None = None
    framework: Framework = "hf"
    # QLoRA with bitsandbytes 0.41-0.43.1, which kept every 4-bit layer's input for the
    # backward (activations.BNB_SAVED_INPUT_BYTES); False: bitsandbytes >= 0.43.2. Engine-only.
    bnb_saves_inputs: bool = False
    # Which implementation shards under ``sharding="zero3"``: DeepSpeed ZeRO-3 (the surfaces'
    # name for it, hence the default) or PyTorch FSDP FULL_SHARD (sharding.py). Surfaces:
    # --sharding-impl / sharding_impl / impl, checked by sharding.checked_impl.
    sharding_impl: ShardingImpl = "deepspeed"
    # PyTorch's caching allocator with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, which
    # fragments less (overhead.reserve_fraction). Off: PyTorch's default.
    expandable_segments: bool = False
    # How LoRA adapts a mixture of experts (states.MOE_LORAS): as PEFT 0.21 on transformers 5
    # builds it (fused expert tensors) or one adapter per expert. Surfaces: --moe-lora /
    # moe_lora.
    moe_lora: MoeLora = "fused"
    # The customer's data: tokens per epoch and epochs, for the training time (speed.py).
    dataset_tokens: int = 10_000_000
    epochs: int = 1

    @property
    def training_precision(self) -> TrainingPrecision:
        """The dtypes this job trains in: the framework's preset under the explicit choices."""
        return resolve(self.framework, self.method, self.precision, self.adapter_dtype,
                       self.base_dtype)

    @property
    def lora(self) -> LoraSetup | None:
        if self.method == "full":
            return None
        return LoraSetup(self.lora_rank, self.lora_targets, self.lora_dropout, self.moe_lora)

    @property
    def effective_quant(self) -> Quant:
        return self.quant or "nf4-dq"


@dataclass(frozen=True, slots=True)
class Breakdown:
    weights: int
    adapter: int
    gradients: int
    optimizer: int
    activations: int
    overhead: int
    total: int


@dataclass(frozen=True, slots=True)
class Lever:
    gpu: str
    lever: str
    change: dict[str, object]
    total_bytes: int
    free_bytes: int
    speed: str


@dataclass(frozen=True, slots=True)
class Setup:
    """The standard settings that make a job fit a card it does not fit as set
    (:mod:`app.engine.setup`): what changes, the memory per GPU with them, and the speed."""

    changes: dict[str, object]
    total_bytes: int
    training: Training | None


@dataclass(frozen=True, slots=True)
class Recommendation:
    """The offer to buy: the cheapest priced card or system that fits the job as set or with a
    :class:`Setup` (the estimates service ranks the catalog's offers)."""

    kind: str
    """``gpu`` (``cards`` loose cards) or ``system``."""
    slug: str
    setup: Setup | None
    """None when it fits as set."""
    price: str | None
    """Net EUR for the offer (cards x unit price, or the system's), as the API writes money;
    None: price on request."""
    hours: float | None
    """The training time for the customer's data on it (with the setup), where known."""


@dataclass(frozen=True, slots=True)
class CardFit:
    gpu: str
    name: str
    usable_bytes: int
    total_bytes: int
    free_bytes: int
    fits: bool
    max_batch_size: int
    max_seq_len: int
    fewest_cards_zero3: int | None
    formats: tuple[str, ...]
    warnings: tuple[str, ...]
    training: Training | None = None
    """How fast the job trains on this card (speed.py); None without the card's figures."""
    comparison_only: bool = False
    """A card the shop does not sell, named to compare with."""
    setup: Setup | None = None
    """The cheapest standard settings that make the job fit when it does not fit as set
    (the estimates service searches them); None when it fits as set or cannot fit."""

    @property
    def roomy(self) -> bool:
        """Fits with :func:`headroom_bytes` to spare (not in the JSON: derived)."""
        return self.fits and self.free_bytes >= headroom_bytes(self.usable_bytes)


@dataclass(frozen=True, slots=True)
class ParamCounts:
    total: int
    trainable: int
    linear: int
    other: int
    active: int


@dataclass(frozen=True, slots=True)
class EstimateResult:
    engine_version: str
    model_type: str
    params: ParamCounts
    per_gpu_bytes: Breakdown
    model_states_bytes: int
    model_states_by_accounting: dict[str, int]
    peak_phase: str
    peak_live_bytes: int
    # What PyTorch's counters would show for the step (overhead.py): the live-tensor peak with
    # the model states as its floor (max_memory_allocated) and that plus the caching
    # allocator's reserve (max_memory_reserved). per_gpu_bytes.total adds the CUDA context.
    allocated_bytes: int
    reserved_bytes: int
    phases: dict[str, int]
    fits: tuple[CardFit, ...]
    levers: tuple[Lever, ...]
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...] = field(default=())
    assumption_items: tuple[Assumption, ...] = field(default=())
    """``assumptions`` as keys and values, for pages that translate them (not in the JSON)."""
    fidelity: Fidelity = "exact"
    """``exact``: the parameters counted as transformers builds the model; ``approximate``: a
    model type no builder knows, counted from its standard fields
    (``architectures/approximate.py``)."""
    approximated_from: tuple[str, ...] = ()
    """The config fields an approximate count was made from (empty when exact)."""
    recommendation: Recommendation | None = None
    """What to buy (the estimates service, from the catalog's prices); None from the engine
    alone, or when no offer fits even with a setup."""
    checkpointing: Checkpointing = field(default=as_set(False))
    """Gradient checkpointing as asked and as used (``auto``: what the rule chose and why,
    :mod:`app.engine.checkpointing`); the engine itself reports the job's as set."""

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-ready data: the document `sizer estimate --format json` prints."""
        data = _plain(self)
        assert isinstance(data, dict)
        del data["assumption_items"]
        return data


def _plain(value: object) -> object:
    """Dataclasses as dicts, tuples as lists, recursively. ``dataclasses.asdict`` does the same
    but deep-copies every leaf: it was half the API's per-estimate time, for immutable data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def validate(shape: ModelShape, job: Job) -> None:
    """Reject a job the engine cannot honestly answer, naming the field."""
    _one_of("method", job.method, METHODS)
    _one_of("optimizer", job.optimizer, OPTIMIZERS)
    _one_of("accounting", job.accounting, ACCOUNTINGS)
    _one_of("sharding", job.sharding, SHARDINGS)
    _one_of("sharding_impl", job.sharding_impl, SHARDING_IMPLS)
    _one_of("offload", job.offload, OFFLOADS)
    _one_of("attention", job.attention, ATTENTIONS)
    _one_of("loss_head", job.loss_head, LOSS_HEADS)
    if job.quant is not None:
        _one_of("quant", job.quant, QUANTS)
        if job.method == "full":
            raise EngineError("quant", "four_bit_full")
        if job.method == "lora":
            raise EngineError("quant", "quantised_lora")
    _positive_int("batch_size", job.batch_size, MAX_BATCH_SIZE)
    _positive_int("seq_len", job.seq_len, None)
    _positive_int("gpus", job.gpus, MAX_GPUS)
    _positive_int("gradient_accumulation", job.gradient_accumulation, 1 << 16)
    _positive_int("dataset_tokens", job.dataset_tokens, MAX_DATASET_TOKENS)
    _positive_int("epochs", job.epochs, MAX_EPOCHS)
    if shape.max_positions is not None and job.seq_len > shape.max_positions:
        raise EngineError("seq_len", "beyond_positions", seq_len=job.seq_len,
                          max_positions=shape.max_positions)
    if job.method != "full":
        _positive_int("lora_rank", job.lora_rank, 1 << 16)
        dropout = job.lora_dropout
        if not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0 or dropout != dropout:
            raise EngineError("lora_dropout", "dropout_range")
        _one_of("moe_lora", job.moe_lora, MOE_LORAS)
        lora_target_specs(shape, job.lora_targets, job.moe_lora)
    if job.offload == "optimizer+params" and job.sharding != "zero3":
        raise EngineError("offload", "offload_needs_zero3")
    if not isinstance(job.bnb_saves_inputs, bool):
        raise EngineError("bnb_saves_inputs", "true_or_false", value=repr(job.bnb_saves_inputs))
    _validate_precision(job)


def _validate_precision(job: Job) -> None:
    """Dtype choices that contradict each other or the method are refused, not ignored."""
    _one_of("framework", job.framework, FRAMEWORKS)
    if job.precision is not None:
        _one_of("precision", job.precision, PRECISIONS)
    if job.adapter_dtype is not None:
        _one_of("adapter_dtype", job.adapter_dtype, ADAPTER_DTYPES)
        if job.method == "full":
            raise EngineError("adapter_dtype", "no_adapters")
    if job.base_dtype is not None:
        _one_of("base_dtype", job.base_dtype, BASE_DTYPES)
        if job.method == "full":
            raise EngineError("base_dtype", "no_frozen_base")
    resolved = job.training_precision
    if job.framework == litgpt.LITGPT and job.method == "qlora" and resolved.precision == "amp":
        # litgpt/finetune/lora.py setup(): "Quantization and mixed precision is not supported."
        raise EngineError("precision", "litgpt_quantised_mixed")
    if resolved.precision == "bf16" and job.method != "full":
        if resolved.adapter_dtype != "bf16":
            raise EngineError("adapter_dtype", "pure_bf16_adapters")
        if resolved.base_dtype != "bf16":
            raise EngineError("base_dtype", "pure_bf16_base")


def _one_of(name: str, value: object, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise EngineError(name, "not_one_of", value=repr(value), allowed=", ".join(allowed))


def _positive_int(name: str, value: object, maximum: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EngineError(name, "whole_number")
    if maximum is not None and value > maximum:
        raise EngineError(name, "at_most", max=maximum)


def model_states(shape: ModelShape, job: Job, *, gpus: int | None = None,
                 sharding: Sharding | None = None) -> ModelStates:
    """Per-GPU model states for the job (the article's arithmetic, then sharding).

    With the optimizer step fused into backward (PyTorch's "optimizer in backward"), each
    layer's gradients are applied and freed as soon as they are complete, so only the largest
    layer's gradients are ever held."""
    single = _single_gpu_states(litgpt.as_built(shape, job.framework), job, job.accounting)
    sharded = shard_states(
        single, gpus=gpus or job.gpus, sharding=sharding or job.sharding, offload=job.offload
    )
    if not job.fused_optimizer_step:
        return sharded
    layer_share = shape.largest_layer_params() / shape.total_params
    return dataclasses.replace(
        sharded,
        gradients_bytes=math.ceil(sharded.gradients_bytes * layer_share),
        adapter_grad_bytes=math.ceil(sharded.adapter_grad_bytes * layer_share),
    )


def _single_gpu_states(shape: ModelShape, job: Job, accounting: Accounting) -> ModelStates:
    """The job's states on one GPU under ``accounting``; under LitGPT QLoRA with the output
    layer in NF4 as well (framework_litgpt.py, point 2)."""
    dtypes = job.training_precision
    prepared = _kbit_prepared(job)
    single = single_gpu_states(
        shape, method=job.method, optimizer=job.optimizer, accounting=accounting,
        lora=job.lora, quant=job.effective_quant, precision=dtypes, kbit_prepare=prepared,
    )
    if job.framework != litgpt.LITGPT or job.method != "qlora":
        return single
    base_bytes = KBIT_PREPARED_BYTES if prepared else dtypes.base_bytes
    head = litgpt.quantised_head_bytes(shape, job.effective_quant, base_bytes)
    return dataclasses.replace(single, weights_bytes=single.weights_bytes + head)


# Bytes per element of autocast's bf16 copy of an fp32 weight.
BF16_HEAD_COPY_BYTES = 2


def step_model(shape: ModelShape, job: Job) -> StepModel:
    """The phases of one training step on one GPU, with their fixed bytes and coefficients."""
    job = unsloth.as_run(job)
    shape = litgpt.as_built(shape, job.framework)
    on_litgpt = job.framework == litgpt.LITGPT
    states = model_states(shape, job)
    dtypes = job.training_precision
    pure_bf16 = dtypes.precision == "bf16"
    # Pure bf16 full fine-tuning keeps bf16 activations, as the zero accounting's bf16 model.
    regime = "bf16" if pure_bf16 and job.method == "full" else regime_for(job.method,
                                                                           job.accounting)
    # QLoRA after prepare_model_for_kbit_training: fp32 embeddings, norms and lm_head.
    prepared = _kbit_prepared(job)
    if prepared:
        regime = "qlora"
    profile = activation_profile(
        shape,
        ActivationSetup(
            method=job.method, regime=regime, attention=job.attention,
            gradient_checkpointing=job.gradient_checkpointing, lora=job.lora,
            loss_head=job.loss_head, activation_offload=job.activation_offload,
            bnb_saves_inputs=job.bnb_saves_inputs,
        ),
    )
    zero3 = job.sharding == "zero3" and job.gpus > 1
    weight_shards = job.gpus if zero3 else 1

    if job.method == "full" and job.accounting == "hf" and not pure_bf16:
        # The hf count's 6 bytes are fp32 weights (4) plus autocast's bf16 copies (2), which
        # exist only for linear weights and only between their forward and backward use.
        weights_static = states.weights_bytes * 4 // 6
        # A tied lm_head still gets its own bf16 copy of the shared fp32 embedding matrix.
        lm_head = shape.vocab_size * shape.hidden_size if shape.tied_embeddings else 0
        copies = 2 * (shape.split.linear + shape.split.lm_head + lm_head) // weight_shards
        head_copies = 2 * (shape.split.lm_head + lm_head) // weight_shards
    else:
        weights_static = states.weights_bytes
        # autocast's bf16 copies of fp32 adapters, kept from their forward to their backward;
        # bf16 adapters need none.
        fp32_adapters = job.method != "full" and dtypes.adapter_dtype == "fp32"
        copies = 2 * states.trainable_params // weight_shards if fp32_adapters else 0
        head_copies = 0
    # PEFT's merged expert weights (W + BA per adapted fused tensor, in the base's dtype),
    # saved from their forward to their backward: every layer's until the backward starts
    # (none with checkpointing, whose forward keeps nothing), then the layer being
    # differentiated (recomputed, with checkpointing).
    merged_saved = merged_layer = 0
    if job.lora is not None:
        every, widest = merged_parameter_params(shape, job.lora)
        merged_bytes = KBIT_PREPARED_BYTES if prepared else dtypes.base_bytes
        merged_saved = 0 if job.gradient_checkpointing else merged_bytes * every
        merged_layer = merged_bytes * widest
    if prepared:
        # The frozen fp32 lm_head (or the tied fp32 embedding) is cast to bf16 by autocast for
        # its matmul and that copy is saved for the input gradient, until the head's backward:
        # autocast caches only weights that require grad, so this copy is per use, not cached
        # (measured: tools/calibrate/results/cpu-qlora.json).
        copies += BF16_HEAD_COPY_BYTES * shape.vocab_size * shape.hidden_size
        head_copies += BF16_HEAD_COPY_BYTES * shape.vocab_size * shape.hidden_size
    if job.offload == "optimizer+params":
        weights_static = 0
    static = weights_static + states.adapter_weight_bytes + states.optimizer_bytes
    static += states.adapter_optimizer_bytes

    gradients = states.gradients_bytes + states.adapter_grad_bytes
    held_gradients = gradients if job.gradient_accumulation > 1 else 0
    if on_litgpt and zero3 and job.sharding_impl == "fsdp" and job.gradient_accumulation > 1:
        # Lightning accumulates under FSDP's no_sync: whole gradients of every block that
        # trains anything (framework_litgpt.py, point 6), instead of the sharded ones.
        held_gradients = litgpt.no_sync_gradient_bytes(
            shape, lora=job.lora, grad_bytes=2 if pure_bf16 or job.method != "full" else 4)

    # ZeRO-3/FSDP: the gathered layer(s) while computing (FSDP: and its root unit), and
    # DeepSpeed's gradient bucket for the whole run (sharding.py, with the sources).
    offload_params = job.offload == "optimizer+params"
    extras = sharded_extras(shape, job.sharding_impl, gpus=weight_shards,
                            weight_bytes_per_param=_stored_bytes_per_param(job),
                            offload_params=offload_params,
                            mixed_precision=dtypes.precision == "amp")
    static += extras.buffers
    # bitsandbytes' quantisation statistics are no parameters: whole on every card
    # (sharding.py). torchtune quantises with torchao's NF4Tensor instead, whose scalers are
    # inner tensors sharded with the data (torchao/dtypes/nf4tensor.py,
    # _INNER_TENSOR_NAMES_FOR_SHARDING).
    whole_stats = unsharded_quant_state(
        quant_state_bytes(shape, job.effective_quant, job.moe_lora), gpus=weight_shards,
        offload_params=offload_params) if job.method == "qlora" \
        and job.framework != "torchtune" else 0
    static += whole_stats
    gathered = extras.gathered
    gathered_grads = 0
    if zero3 and job.method == "full":
        gathered_grads = (4 if job.accounting == "hf" else 2) * shape.largest_layer_params()
    dequantised = 0
    if job.method == "qlora" or (job.method == "lora" and dtypes.base_dtype == "fp32"
                                 and not _fsdp_gathers_bf16(job)):
        # bitsandbytes dequantises one 4-bit weight to bf16 for each matmul; autocast casts a
        # frozen fp32 weight to bf16 for each matmul likewise (it caches only weights that
        # require grad), one layer at a time. FSDP's mixed precision gathers such a base in
        # bf16 already (sharding.py), leaving autocast nothing to cast.
        layers = packed_specs(shape, job.moe_lora) if job.method == "qlora" else ()
        dequantised = 2 * max(s.in_features * s.out_features for s in layers or shape.linears)
    if on_litgpt and job.method == "qlora":
        # Lightning's 4-bit layers, lm_head among them, dequantise to fp16 and are cast to
        # bf16 (framework_litgpt.py, points 2 and 3).
        dequantised = litgpt.dequantised_bytes(shape)

    old_bnb = job.method == "qlora" and job.bnb_saves_inputs and regime != "qlora"
    if on_litgpt and old_bnb:
        # LitGPT's attention output and lm_head input, kept by the old 4-bit layers too.
        profile = litgpt.with_extra_bnb_inputs(
            profile, shape, gradient_checkpointing=job.gradient_checkpointing,
            activation_offload=job.activation_offload)
    if on_litgpt:
        # LitGPT's attention keeps its whole fused qkv output through the value's view, with
        # one key/value head per query head (framework_litgpt.py, point 7).
        profile = litgpt.with_fused_value_view(
            profile, shape, gradient_checkpointing=job.gradient_checkpointing,
            activation_offload=job.activation_offload)
    fwd_fixed = copies + held_gradients + gathered + dequantised + merged_saved
    # autocast caches its bf16 weight copies until the autocast context ends with the forward;
    # under checkpointing no layer's forward saved them, so the backward starts with only the
    # copies the (never checkpointed) lm_head saved (H200 steps: full amp Llama 3.2 3B peaks
    # at the end of the forward, 58.7 GB, not at the start of the backward).
    bwd_fixed = fwd_fixed - copies + head_copies if job.gradient_checkpointing else fwd_fixed
    # Eager attention's scores while the last layer computes them: beside what every layer
    # saved, its own score tensors (with checkpointing its forward saves them only for the
    # moment, so they are added here) and the transient ones. SDPA and flash keep none.
    in_layer_quad = profile.saved_per_token_per_seq + profile.forward_only_per_token_per_seq
    if job.gradient_checkpointing:
        in_layer_quad += profile.layer_per_token_per_seq
    in_layer = (
        (PhaseTerms(
            "inside a layer's attention (forward)", "forward", static, fwd_fixed,
            profile.saved_per_token,
            in_layer_quad + profile.attention_forward_per_token_per_seq,
        ),) if profile.attention_forward_per_token_per_seq else ())
    moments: tuple[PhaseTerms, ...] = (
        *in_layer,
        PhaseTerms(
            "end of forward (loss head)", "forward", static, fwd_fixed,
            profile.saved_per_token + _loss_rate(profile, "forward", job),
            profile.saved_per_token_per_seq + profile.forward_only_per_token_per_seq,
        ),
        PhaseTerms(
            "start of backward", "backward", static, bwd_fixed,
            profile.saved_per_token + _loss_rate(profile, "backward", job),
            profile.saved_per_token_per_seq,
        ),
        PhaseTerms(
            "end of backward", "backward", static,
            max(gradients, held_gradients) + gathered + gathered_grads + dequantised
            + merged_layer,
            profile.layer_per_token,
            profile.layer_per_token_per_seq + profile.attention_backward_per_token_per_seq,
            strands=False,
        ),
        PhaseTerms("optimizer step", "optimizer", static, gradients, 0, 0, strands=False),
    )
    if on_litgpt:
        moments += (_litgpt_next_forward(shape, job, profile, static, fwd_fixed, old_bnb),)
    # The floor under every moment: the states that are all alive at once. Under the hf
    # accounting the article's 6 B/param of weights include autocast's bf16 copies, which
    # are freed by the optimizer step; the grid measures 16, not 18, B/param there.
    hf_full = job.method == "full" and job.accounting == "hf" and not pure_bf16
    transient_copies = states.weights_bytes - states.weights_bytes * 4 // 6 if hf_full else 0
    resident = states.total_bytes - transient_copies + whole_stats
    return StepModel(
        moments=moments,
        model_states_bytes=resident,
        fixed_overhead_bytes=fixed_overhead_bytes(job.gpus),
        reserve=reserve_terms(
            logits_per_token=_stranded_logits_rate(profile, job),
            # A chunked loss asks for blocks smaller than a layer's, which the layers' cached
            # segments serve: none stay stranded beside it (overhead.py).
            layer_per_token=0 if profile.chunked_loss else profile.layer_per_token,
            layer_per_token_seq=0 if profile.chunked_loss else profile.layer_per_token_per_seq,
            states_bytes=resident, loss_head_per_token=_loss_rate(profile, "backward", job),
            expandable_segments=job.expandable_segments, fsdp=_fsdp_sharded(job)),
    )


def _stranded_logits_rate(profile: ActivationProfile, job: Job) -> int:
    """The bf16 logits' bytes per token that the loss backward cannot reuse (overhead.py); a
    chunked loss strands one chunk's, spread over the tokens like :func:`_loss_rate`."""
    per_token = STRANDED_LOGITS_BYTES_PER_VOCAB * profile.vocab_size
    if not profile.chunked_loss:
        return per_token
    tokens = job.batch_size * job.seq_len
    return math.ceil(per_token * min(tokens, CHUNKED_LOSS_TOKENS) / tokens)


def _fsdp_sharded(job: Job) -> bool:
    """Whether PyTorch FSDP (FULL_SHARD) shards the job over more than one card."""
    return job.sharding == "zero3" and job.sharding_impl == "fsdp" and job.gpus > 1


def _kbit_prepared(job: Job) -> bool:
    """Whether the job's QLoRA runs PEFT's ``prepare_model_for_kbit_training`` (states.py):
    the mixed-precision recipe, except under FSDP, which flattens each decoder layer's norms and
    bf16-stored 4-bit weights into one FlatParameter of one dtype
    (``FlatParamHandle._validate_tensors_to_flatten``: "Must flatten tensors with uniform
    dtype"), so the norms cannot be fp32 there; TRL's SFTTrainer skips the call for sharded
    QLoRA for that reason ("one should never call ... prepare_model_for_kbit_training when
    doing QLoRA + FSDP / DS-Zero3", ``is_sharded_qlora``)."""
    return kbit_prepared(job.method, job.training_precision) and not _fsdp_sharded(job)


def _fsdp_gathers_bf16(job: Job) -> bool:
    """A LoRA base loaded in fp32 and sharded by FSDP: its mixed precision casts each shard to
    bf16 before the all-gather (sharding.py), so the gathered layers are bf16."""
    return _fsdp_sharded(job) and job.method == "lora" \
        and job.training_precision.base_dtype == "fp32"


def _litgpt_next_forward(shape: ModelShape, job: Job, profile: ActivationProfile, static: int,
                         fixed: int, old_bnb: bool) -> PhaseTerms:
    """The end of a LitGPT forward while the previous micro-step's logits (and, with
    bitsandbytes before 0.43.2, every 4-bit input of its graph) are still held
    (framework_litgpt.py, point 5), besides this step's saved tensors and logits."""
    layer_inputs, first_layer_skip = (
        bnb_saved_inputs_bytes_per_token(shape, "lora") if old_bnb else (0, 0))
    retained = litgpt.retained_per_token(
        shape, bnb_layer_inputs=layer_inputs, bnb_first_layer_skip=first_layer_skip,
        gradient_checkpointing=job.gradient_checkpointing,
        activation_offload=job.activation_offload)
    return PhaseTerms(
        litgpt.NEXT_FORWARD_MOMENT, "forward", static, fixed,
        profile.saved_per_token + litgpt.current_logits_per_token(shape) + retained,
        profile.saved_per_token_per_seq + profile.forward_only_per_token_per_seq,
    )


def _stored_bytes_per_param(job: Job) -> float:
    """Bytes per base parameter of a gathered ZeRO-3/FSDP layer: 4 for a base kept in fp32
    (2 where FSDP's mixed precision gathers it in bf16), the packed NF4 storage for a 4-bit
    base (sharding.py), else bf16's 2."""
    if job.method == "lora" and job.training_precision.base_dtype == "fp32":
        return 2 if _fsdp_gathers_bf16(job) else 4
    if job.method == "qlora":
        return NF4_BITS[job.effective_quant] / 8
    return 2


class StepModels:
    """Step models of one shape, memoised by job: one estimate asks for the same variants
    (sharded over n cards, a lever applied) once per card."""

    def __init__(self, shape: ModelShape) -> None:
        self.shape = shape
        self._cache: dict[Job, StepModel] = {}
        self._sharded: dict[tuple[Job, int], Job] = {}

    def get(self, job: Job) -> StepModel:
        model = self._cache.get(job)
        if model is None:
            model = self._cache[job] = step_model(self.shape, job)
        return model

    def sharded(self, job: Job, gpus: int) -> StepModel:
        """The job spread over ``gpus`` cards with ZeRO-3 (one card: no sharding)."""
        key = (job, gpus)
        variant = self._sharded.get(key)
        if variant is None:
            variant = self._sharded[key] = _sharded(job, gpus)
        return self.get(variant)


def speed_job(shape: ModelShape, job: Job, trainable_params: int | None = None) -> SpeedJob:
    """What :mod:`speed` needs of ``job`` on ``shape`` (its shape as the framework builds it);
    ``trainable_params`` where the caller has counted them (:func:`model_states`)."""
    job = unsloth.as_run(job)
    shape = litgpt.as_built(shape, job.framework)
    dtypes = job.training_precision
    if trainable_params is None:
        # The whole model's states, unsharded and on the card (offload is a traffic term of its
        # own in :mod:`speed`; parameter offload is valid only beside ZeRO-3, which this drops).
        trainable_params = model_states(shape, dataclasses.replace(job, offload="none"), gpus=1,
                                        sharding="none").trainable_params
    lora = job.lora
    saved = 0
    if job.activation_offload:
        saved = activation_profile(shape, ActivationSetup(
            method=job.method, regime=regime_for(job.method, job.accounting),
            attention=job.attention, gradient_checkpointing=job.gradient_checkpointing,
            lora=lora, loss_head=job.loss_head)).saved_per_token
    return SpeedJob(
        method=job.method,
        trainable_linear=job.method == "full",
        lora_specs=() if lora is None else lora_target_specs(shape, lora.targets, lora.moe_lora),
        lora_rank=job.lora_rank,
        packed_specs=packed_specs(shape, job.moe_lora) if job.method == "qlora" else (),
        batch_size=job.batch_size,
        seq_len=job.seq_len,
        gradient_checkpointing=job.gradient_checkpointing,
        attention=job.attention,
        gpus=job.gpus,
        sharding=job.sharding,
        offload=job.offload,
        activation_offload=job.activation_offload,
        gradient_accumulation=job.gradient_accumulation,
        optimizer=job.optimizer,
        lora_dropout=job.method != "full" and job.lora_dropout > 0,
        master_bytes=2 if dtypes.precision == "bf16" else 4,
        fp32_base=job.method == "lora" and dtypes.base_dtype == "fp32",
        adapter_bytes=dtypes.adapter_bytes,
        trainable_params=trainable_params,
        stored_bytes_per_param=_stored_bytes_per_param(job),
        saved_bytes_per_token=saved,
    )


def job_training(shape: ModelShape, job: Job, gpu: GpuSpec,
                 layers: AttentionLayers | None = None) -> Training | None:
    """The job's speed on ``gpu`` (speed.py), or None where the card has no speed figures."""
    return training(step_work(shape, speed_job(shape, job), layers), gpu.speed,
                    dataset_tokens=job.dataset_tokens, epochs=job.epochs)


def _loss_rate(profile: ActivationProfile, moment: Literal["forward", "backward"], job: Job) -> int:
    """Loss-head bytes per token; a chunked loss holds one chunk, spread here over the tokens."""
    per_token = (
        profile.loss_forward_per_token if moment == "forward" else profile.loss_backward_per_token
    )
    if not profile.chunked_loss:
        return per_token
    tokens = job.batch_size * job.seq_len
    chunk_bytes = (
        profile.loss_forward_bytes(tokens) if moment == "forward"
        else profile.loss_backward_bytes(tokens)
    )
    return math.ceil(chunk_bytes / tokens)


def estimate(
    shape: ModelShape,
    job: Job,
    gpus: Sequence[GpuSpec],
    *,
    with_levers: bool = True,
    layers: AttentionLayers | None = None,
    models: StepModels | None = None,
) -> EstimateResult:
    """Memory per GPU for ``job`` on ``shape``, held against each card in ``gpus``, and how
    fast it trains on each (``layers``: which layers attend how, from the config's attention
    layout; None: every non-mixer layer in full). ``models``: step models of this shape (as
    the framework builds it) that a caller shares between calls for variants of one job."""
    validate(shape, job)
    job = unsloth.as_run(job)
    given = shape
    shape = litgpt.as_built(shape, job.framework)
    if models is None or models.shape != shape:
        models = StepModels(shape)
    states = model_states(shape, job)
    model = models.get(job)
    totals = model.totals(job.batch_size, job.seq_len)
    # Resident states: the article's model states less autocast's transient bf16 copies
    # (hf accounting only), which are counted with the activations, where PyTorch's
    # MemTracker finds them too (tools/calibrate/README.md).
    resident_bytes = model.model_states_bytes
    activations = max(0, totals.peak_live_bytes - resident_bytes)
    total = totals.total_bytes
    breakdown = Breakdown(
        weights=states.weights_bytes - (states.total_bytes - resident_bytes),
        adapter=states.adapter_bytes,
        gradients=states.gradients_bytes,
        optimizer=states.optimizer_bytes,
        activations=activations,
        overhead=total - resident_bytes - activations,
        total=total,
    )
    work = step_work(shape, speed_job(shape, job, states.trainable_params), layers)
    fits = tuple(_card_fit(models, job, model, total, gpu, work) for gpu in gpus)
    levers: list[Lever] = []
    if with_levers and not all(fit.fits for fit in fits):
        options = _lever_options(job)
        for fit, gpu in zip(fits, gpus, strict=True):
            if not fit.fits:
                levers.extend(_levers_for(models, job, gpu, options))
    by_accounting: dict[str, int] = {
        acc: _single_gpu_states(shape, job, acc).total_bytes for acc in ACCOUNTINGS
    }
    return EstimateResult(
        engine_version=ENGINE_VERSION,
        model_type=shape.model_type,
        params=ParamCounts(
            total=shape.total_params,
            trainable=states.trainable_params,
            linear=shape.split.linear,
            other=shape.total_params - shape.split.linear,
            active=shape.active_params,
        ),
        per_gpu_bytes=breakdown,
        model_states_bytes=states.total_bytes,
        model_states_by_accounting=by_accounting,
        peak_phase=totals.peak_moment.phase,
        peak_live_bytes=totals.peak_live_bytes,
        allocated_bytes=totals.allocated_bytes,
        reserved_bytes=totals.reserved_bytes,
        phases={m.name: m.live(job.batch_size, job.seq_len) for m in model.moments},
        fits=fits,
        levers=tuple(levers),
        assumptions=assumptions(given, job),
        warnings=_job_warnings(shape, job),
        assumption_items=assumption_items(given, job),
        fidelity="exact" if shape.approximation is None else "approximate",
        approximated_from=() if shape.approximation is None else shape.approximation.fields,
        checkpointing=as_set(job.gradient_checkpointing),
    )


def _card_fit(
    models: StepModels, job: Job, model: StepModel, total: int, gpu: GpuSpec, work: StepWork
) -> CardFit:
    usable = gpu.usable_bytes
    warnings: list[str] = []
    if gpu.unified_memory:
        warnings.append(UNIFIED_MEMORY_WARNING)
    if job.sharding == "zero3" and job.gpus > 1 and gpu.interconnect != "nvlink":
        warnings.append(ZERO3_WITHOUT_NVLINK_WARNING)
    return CardFit(
        gpu=gpu.slug,
        name=gpu.name,
        usable_bytes=usable,
        total_bytes=total,
        free_bytes=usable - total,
        fits=total <= usable,
        max_batch_size=model.max_batch_size(usable, job.seq_len),
        max_seq_len=model.max_seq_len(usable, job.batch_size, models.shape.max_positions),
        fewest_cards_zero3=fewest_cards_zero3(models, job, usable),
        formats=capabilities(gpu.compute_capability).formats,
        warnings=tuple(warnings),
        training=training(work, gpu.speed, dataset_tokens=job.dataset_tokens,
                          epochs=job.epochs),
        comparison_only=gpu.comparison_only,
    )


def fewest_cards_zero3(models: StepModels, job: Job, usable_bytes: int,
                       limit: int = 64) -> int | None:
    """The fewest cards of this size that hold the job under ZeRO-3 (None beyond ``limit``).

    Per-GPU bytes fall as cards are added, so the answer is found by bisection."""
    def fits(n: int) -> bool:
        return models.sharded(job, n).fits(usable_bytes, job.batch_size, job.seq_len)

    if fits(1):
        return 1
    if not fits(limit):
        return None
    low, high = 1, limit
    while high - low > 1:
        mid = (low + high) // 2
        if fits(mid):
            high = mid
        else:
            low = mid
    return high


@dataclass(frozen=True, slots=True)
class _LeverOption:
    name: str
    change: dict[str, object]
    speed: str
    job: Job


def _lever_options(job: Job) -> list[_LeverOption]:
    """The single changes worth trying, in order of their price in speed."""
    options: list[tuple[str, dict[str, object], str]] = []
    if job.loss_head == "standard":
        options.append(("chunked_loss", {"loss_head": "chunked"}, CHUNKED_LOSS_SPEED))
    if job.optimizer in ("adamw", "paged_adamw_32bit"):
        options.append(("adamw_8bit", {"optimizer": "adamw_8bit"}, ADAM_8BIT_SPEED))
    if not job.gradient_checkpointing:
        options.append(
            ("gradient_checkpointing", {"gradient_checkpointing": True}, CHECKPOINTING_SPEED)
        )
    if job.batch_size > 1:
        options.append(("accumulate", {"gradient_accumulation": 2}, ACCUMULATION_SPEED))
    if job.method == "full":
        options.append(("lora", {"method": "lora"}, LORA_SPEED))
    if job.method == "lora":
        options.append(("qlora", {"method": "qlora"}, QLORA_SPEED))
    if job.offload == "none":
        options.append(("offload_optimizer", {"offload": "optimizer"}, OFFLOAD_SPEED))
    return [
        _LeverOption(name, change, speed, dataclasses.replace(job, **change))  # type: ignore[arg-type]
        for name, change, speed in options
    ]


def _levers_for(
    models: StepModels, job: Job, gpu: GpuSpec, options: Sequence[_LeverOption]
) -> list[Lever]:
    """Changes that make the job fit this card with :func:`headroom_bytes` to spare: single
    changes cheapest in speed first, then pairs of them, then ZeRO-3 over at most
    :data:`LEVER_MAX_CARDS` cards (alone, then with one change). A change that leaves less
    than the headroom free is no advice and is left out."""
    usable = gpu.usable_bytes
    room = usable - headroom_bytes(usable)
    found: list[Lever] = []

    def attempt(name: str, change: dict[str, object], speed: str, model: StepModel) -> None:
        if "gradient_accumulation" in change:
            batch = model.max_batch_size(room, job.seq_len)
            if batch < 1:
                return
            change = {**change, "batch_size": batch,
                      "gradient_accumulation": math.ceil(job.batch_size / batch)}
            total = model.total_bytes(batch, job.seq_len)
        else:
            total = model.total_bytes(job.batch_size, job.seq_len)
        if total <= room:
            found.append(Lever(gpu.slug, name, change, total, usable - total, speed))

    for option in options:
        attempt(option.name, option.change, option.speed, models.get(option.job))
    for first, second in itertools.combinations(options, 2):
        if first.change.keys() & second.change.keys():
            continue
        change = {**first.change, **second.change}
        variant = dataclasses.replace(job, **change)  # type: ignore[arg-type]
        attempt(f"{first.name}+{second.name}", change, f"{first.speed}; {second.speed}",
                models.get(variant))
    cards = fewest_cards_zero3(models, job, room, limit=LEVER_MAX_CARDS)
    if cards is not None and cards > 1:
        attempt("shard_zero3", {"gpus": cards, "sharding": "zero3"}, SHARDING_SPEED,
                models.sharded(job, cards))
    elif cards is None:
        for option in options:
            cards = fewest_cards_zero3(models, option.job, room, limit=LEVER_MAX_CARDS)
            if cards is not None and cards > 1:
                attempt(f"{option.name}+shard_zero3",
                        {**option.change, "gpus": cards, "sharding": "zero3"},
                        f"{option.speed}; {SHARDING_SPEED}", models.sharded(option.job, cards))
                break
    return found


def _sharded(job: Job, gpus: int) -> Job:
    if gpus == 1:
        offload: Offload = "optimizer" if job.offload == "optimizer+params" else job.offload
        return dataclasses.replace(job, gpus=1, sharding="none", offload=offload)
    return dataclasses.replace(job, gpus=gpus, sharding="zero3")


def _job_warnings(shape: ModelShape, job: Job) -> tuple[str, ...]:
    warnings: list[str] = []
    if job.optimizer.startswith("paged_"):
        warnings.append(PAGED_OPTIMIZER_WARNING)
    return tuple(warnings)


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
    "framework_unsloth": "Unsloth as it runs: fp32 adapters under bf16 autocast (a full "
    "fine-tune in pure bf16), its fused cross-entropy without full logits (Apple's Cut Cross "
    "Entropy, counted as the chunked loss) and, with gradient checkpointing, its checkpoints "
    "offloaded to CPU memory; its own LoRA kernels and QLoRA preparation are not modelled (no "
    "source states their bytes): PEFT's layout is counted, the larger",
}
"""The English wording of each assumption (the API's and the CLI's); pages translate by key."""


def assumption_items(shape: ModelShape, job: Job) -> tuple[Assumption, ...]:
    """What the figures take for granted, as keys and values a page can translate."""
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
    items += [
        ("units", {}),
        ("states_zero" if job.accounting == "zero" else "states_hf", {}),
        ("activations", {}),
        ("attention_eager" if job.attention == "eager" else "attention_linear",
         {"attention": job.attention}),
        ("loss_standard" if job.loss_head == "standard" else "loss_chunked", {}),
        ("overhead", {}),
        _reserve_item(job),
    ]
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
        items.append(("qlora_prepared" if _kbit_prepared(job) else
                      "qlora_fsdp_unprepared" if _fsdp_sharded(job) and dtypes.precision == "amp"
                      else "qlora_base_dtype", {}))
        items.append(("bnb_saves_inputs" if job.bnb_saves_inputs else "bnb_current", {}))
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
    if shape.model_type in SINK_MODEL_TYPES:
        items.append(("sinks", {"within": MEASURED_WITHIN_PERCENT}))
    if shape.model_type in GEMMA4_MODEL_TYPES:
        items.append(("gemma4", {}))
    if job.gpus > 1:
        items.append(("gpus", {"gpus": job.gpus, "sharding": job.sharding}))
        if job.sharding == "zero3":  # whose buffers sharding.py added (one card adds none)
            items += _sharded_items(shape, job)
    return tuple(items)


def _sharded_items(shape: ModelShape, job: Job) -> list[Assumption]:
    """What ZeRO-3 or FSDP adds beyond the shards on more than one card (sharding.py)."""
    items: list[Assumption] = [(f"sharded_{job.sharding_impl}", {})]
    if job.sharding_impl == "fsdp":
        items.append(("fsdp_root", {"params": fsdp_root_params(shape)}))
        if _fsdp_gathers_bf16(job):
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
    if _fsdp_sharded(job):
        return "reserve_fsdp", {"percent": round(100 * reserve_fraction(
            expandable_segments=False, fsdp=True), 1)}
    return "reserve_default", {"layers": layer_segments(expandable_segments=False)}


def assumptions(shape: ModelShape, job: Job) -> tuple[str, ...]:
    """What the figures take for granted, in words a customer can check (English)."""
    return tuple(ASSUMPTION_TEXTS[key] % values if values else ASSUMPTION_TEXTS[key]
                 for key, values in assumption_items(shape, job))


def _targets_text(targets: str | tuple[str, ...]) -> str:
    return targets if isinstance(targets, str) else ", ".join(targets)

