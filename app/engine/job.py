"""The job: how the customer wants to train, the card it is held against, and the validation
that refuses what the engine cannot honestly answer (each refusal names the field).

Also the job's derived facts several layers ask alike (whether FSDP shards it, whether its
QLoRA runs PEFT's k-bit preparation, the bytes of a gathered base parameter).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Final

from app.engine import framework_litgpt as litgpt
from app.engine.activations import ATTENTIONS, LOSS_HEADS, Attention, LossHead
from app.engine.errors import EngineError
from app.engine.framework_unsloth import UNSLOTH
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
from app.engine.sharding import SHARDING_IMPLS, ShardingImpl
from app.engine.speed import CardSpeed
from app.engine.states import (
    ACCOUNTINGS,
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
    MoeLora,
    Offload,
    Optimizer,
    Quant,
    Sharding,
    kbit_prepared,
    lora_target_specs,
)

MAX_GPUS = 1024
MAX_BATCH_SIZE = 1 << 20
MAX_DATASET_TOKENS = 10**15
"""Tokens per epoch: 15 x 10^12 trained Llama 3 (its model card); a bound, not a limit of use."""
MAX_EPOCHS = 10_000

HEADROOM_FRACTION = 0.05
"""A job that leaves less than this share of a card's usable memory free fits only tightly:
allocator growth over a long run, a longer sample or a library update can take it (5 %; the
fragmentation margin in overhead.py covers one step only)."""
HEADROOM_MIN_BYTES = 10**9
"""...and never less than 1 GB, for small cards."""


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


class _KeptHash:
    """A slot for :meth:`Job.__hash__` to keep the hash in, outside the job's fields."""

    __slots__ = ("_hash",)
    _hash: int


@dataclass(frozen=True, slots=True)
class Job(_KeptHash):
    """How the customer wants to train. Defaults are the common single-GPU LoRA recipe.

    A sizing keys its step models, totals and searches by job a few hundred times, so a job
    keeps its hash once computed (:meth:`__hash__`)."""

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

    def __hash__(self) -> int:
        """The hash of the settings, as a frozen dataclass's (equal jobs, equal hashes), kept
        on the job after the first call (outside the settings: no field, compared by none)."""
        try:
            return self._hash
        except AttributeError:
            kept = hash(_settings(self))
            object.__setattr__(self, "_hash", kept)
            return kept


JOB_FIELDS: Final = tuple(field.name for field in fields(Job))
"""The job's settings, in the order ``Job`` declares them."""
_settings: Final = attrgetter(*JOB_FIELDS)
_NAMES: Final = frozenset(JOB_FIELDS)
_SETTER: Final = {name: Job.__dict__[name].__set__ for name in JOB_FIELDS}
_SETTERS: Final = tuple(_SETTER.values())


def with_changes(job: Job, **changes: object) -> Job:
    """``dataclasses.replace(job, **changes)`` at about a third of its cost: a sizing makes a
    few hundred variants of one job (levers, setups, ZeRO-3 over n cards), and the generic
    ``replace`` looks up every field's kind on each call. ``Job`` has no ``__post_init__``
    and no field outside ``__init__``, so copying the settings and setting the changed ones
    builds the same job (equal, same hash); an unknown name is a ``TypeError`` as in
    ``replace``."""
    if not _NAMES.issuperset(changes):
        unknown = ", ".join(sorted(set(changes) - _NAMES))
        raise TypeError(f"Job has no setting {unknown}")
    new = object.__new__(Job)
    for setter, value in zip(_SETTERS, _settings(job), strict=True):
        setter(new, value)
    for name, value in changes.items():
        _SETTER[name](new, value)
    return new


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


def fsdp_sharded(job: Job) -> bool:
    """Whether PyTorch FSDP (FULL_SHARD) shards the job over more than one card."""
    return job.sharding == "zero3" and job.sharding_impl == "fsdp" and job.gpus > 1


def prepares_kbit(job: Job) -> bool:
    """Whether the job's QLoRA runs PEFT's ``prepare_model_for_kbit_training`` (states.py):
    the mixed-precision recipe, except under FSDP, which flattens each decoder layer's norms and
    bf16-stored 4-bit weights into one FlatParameter of one dtype
    (``FlatParamHandle._validate_tensors_to_flatten``: "Must flatten tensors with uniform
    dtype"), so the norms cannot be fp32 there; TRL's SFTTrainer skips the call for sharded
    QLoRA for that reason ("one should never call ... prepare_model_for_kbit_training when
    doing QLoRA + FSDP / DS-Zero3", ``is_sharded_qlora``)."""
    return kbit_prepared(job.method, job.training_precision) and not fsdp_sharded(job) \
        and job.framework != UNSLOTH


def fsdp_gathers_bf16(job: Job) -> bool:
    """A LoRA base loaded in fp32 and sharded by FSDP: its mixed precision casts each shard to
    bf16 before the all-gather (sharding.py), so the gathered layers are bf16."""
    return fsdp_sharded(job) and job.method == "lora" \
        and job.training_precision.base_dtype == "fp32"


def stored_bytes_per_param(job: Job) -> float:
    """Bytes per base parameter of a gathered ZeRO-3/FSDP layer: 4 for a base kept in fp32
    (2 where FSDP's mixed precision gathers it in bf16), the packed NF4 storage for a 4-bit
    base (sharding.py), else bf16's 2."""
    if job.method == "lora" and job.training_precision.base_dtype == "fp32":
        return 2 if fsdp_gathers_bf16(job) else 4
    if job.method == "qlora":
        return NF4_BITS[job.effective_quant] / 8
    return 2
