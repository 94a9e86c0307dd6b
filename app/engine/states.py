"""Model states: weights, gradients, optimizer states and LoRA adapters, per GPU.

The shop's article is the specification. Two accountings of full fine-tuning with Adam:

* ``zero``: 2 + 2 + 12 = 16 bytes/param. ZeRO paper (Rajbhandari et al., arXiv 1910.02054,
  section 3.1): fp16/bf16 parameters (2) and gradients (2), plus fp32 master parameters,
  momentum and variance (4 + 4 + 4).
* ``hf``: 6 + 4 + 8 = 18 bytes/param. Hugging Face "Model training anatomy" / "Efficient training
  on a single GPU" docs: fp32 weights plus a half-precision copy (6), fp32 gradients (4), Adam's
  two fp32 moments (8).

LoRA (Hu et al., arXiv 2106.09685): the base is frozen (bf16, 2 bytes/param, no gradient, no
optimizer state); an adapter of rank r on an m->n layer adds r*(m+n) trainable params, held by
PEFT in fp32 (4) with an fp32 gradient (4) and Adam's moments (8): 16 bytes per trainable param.

QLoRA (Dettmers et al., arXiv 2305.14314): block linear layers in NF4; with double quantisation
4 + 8/64 + 32/(64*256) = 4.127 bits/param, without it 4 + 32/64 = 4.5 bits, plus a small
quantisation state per module. Under mixed precision (the Hugging Face/PEFT recipe) PEFT's
``prepare_model_for_kbit_training`` casts everything that is not 4-bit (embeddings, lm_head,
norms, biases) to fp32; pure-bf16 stacks keep it in the base dtype. Measured with bitsandbytes
0.50.2 on real steps: ``tools/calibrate/results/cpu-qlora.json``. bitsandbytes trains adapters
only on 4-bit bases (Hugging Face bitsandbytes guide): a 4-bit full fine-tune is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter, mul, not_, or_
from typing import Literal

from app.engine.errors import EngineError
from app.engine.precision import AMP, DTYPE_BYTES, TrainingPrecision
from app.engine.shapes import ATTENTION_ROLES, MLP_ROLES, LinearSpec, ModelShape

Method = Literal["full", "lora", "qlora"]
Optimizer = Literal[
    "adamw", "adamw_8bit", "paged_adamw_32bit", "paged_adamw_8bit", "sgd", "adafactor"
]
Accounting = Literal["zero", "hf"]
Quant = Literal["nf4-dq", "nf4"]
Sharding = Literal["none", "zero1", "zero2", "zero3"]
Offload = Literal["none", "optimizer", "optimizer+params"]
MoeLora = Literal["fused", "per-expert"]

METHODS: tuple[Method, ...] = ("full", "lora", "qlora")
OPTIMIZERS: tuple[Optimizer, ...] = (
    "adamw", "adamw_8bit", "paged_adamw_32bit", "paged_adamw_8bit", "sgd", "adafactor"
)
ACCOUNTINGS: tuple[Accounting, ...] = ("zero", "hf")
QUANTS: tuple[Quant, ...] = ("nf4-dq", "nf4")
SHARDINGS: tuple[Sharding, ...] = ("none", "zero1", "zero2", "zero3")
OFFLOADS: tuple[Offload, ...] = ("none", "optimizer", "optimizer+params")
LORA_TARGET_PRESETS: tuple[str, ...] = ("all-linear", "attention", "qv", "mlp")
MOE_LORAS: tuple[MoeLora, ...] = ("fused", "per-expert")
"""How LoRA adapts a mixture of experts. ``fused`` (the default): as PEFT 0.21 builds it on
transformers 5, whose experts are fused 3-D tensors: it adapts each fused tensor per expert, the
fused gate/up at rank 2r, and skips what its conversion table remaps (``LinearSpec.lora_target``;
architectures/moe.py). ``per-expert``: one adapter of rank r on every expert's gate, up and
down projection and on every other block linear layer, as PEFT built it on transformers 4's
one-module-per-expert layout (and as most other training stacks do). Dense models: the same.
The convention is the layout: under QLoRA ``fused`` experts and routers stay 16-bit (fp32 after
``prepare_model_for_kbit_training``), ``per-expert`` ones are NF4 (:func:`packed_specs`)."""
PER_EXPERT_ROLES: frozenset[str] = frozenset({*MLP_ROLES, "router"})
"""What ``per-expert`` adapts although PEFT 0.21 does not on the fused layout: experts and
routers that are parameters there, and the MLPs PEFT remaps onto the experts by name. Other
kinds PEFT leaves out (Nemotron-H's Mamba out_proj) stay out under both conventions."""

BF16_BYTES = 2
FP32_BYTES = 4

# Full fine-tuning, bytes per trained param: (weights, gradients).
# zero: ZeRO paper section 3.1 (2 + 2); hf: Hugging Face model-memory docs (4 + 2 copy, 4).
FULL_WEIGHT_GRAD_BYTES: dict[Accounting, tuple[int, int]] = {"zero": (2, 2), "hf": (6, 4)}

# fp32 master copy kept by the optimizer under the ZeRO accounting (ZeRO paper: "fp32 copy of
# the parameters"); under the hf accounting the fp32 weights are the model itself.
ZERO_MASTER_BYTES = 4

# Optimizer moments, bytes per trained param (adafactor is computed from the shapes instead).
# AdamW: two fp32 moments (Loshchilov & Hutter; PyTorch AdamW). bitsandbytes 8-bit Adam: two
# 8-bit moments = 2 bytes (Dettmers et al., arXiv 2110.02861; HF docs "adamw_bnb_8bit ... 2 bytes
# per param instead of 8"). Paged variants hold the same bytes and page to CPU only under
# pressure (QLoRA paper section 3). SGD with momentum: one fp32 buffer.
OPTIMIZER_MOMENT_BYTES: dict[Optimizer, int] = {
    "adamw": 8,
    "paged_adamw_32bit": 8,
    "adamw_8bit": 2,
    "paged_adamw_8bit": 2,
    "sgd": 4,
}

# NF4 storage, bits per quantised param (QLoRA paper section 3, "Double Quantization"): the
# packed 4-bit codes plus the quantisation statistics.
NF4_PACKED_BITS = 4
NF4_BITS: dict[Quant, float] = {
    "nf4-dq": 4 + 8 / 64 + 32 / (64 * 256),
    "nf4": 4 + 32 / 64,
}

# bitsandbytes' QuantState beyond the bits above, per quantised module (measured,
# tools/calibrate/results/cpu-qlora.json, ``quant.quant_state_bytes``): the NF4 code book of 16
# fp32 values (64 B); with double quantisation also the 8-bit code book of the absmax values
# (256 fp32, 1,024 B) and their fp32 offset (4 B).
NF4_CODE_BYTES = 16 * 4
QUANT_STATE_MODULE_BYTES: dict[Quant, int] = {"nf4-dq": NF4_CODE_BYTES + 256 * 4 + 4,
                                              "nf4": NF4_CODE_BYTES}

# peft.prepare_model_for_kbit_training (peft/utils/other.py, 0.21.2: "cast all non INT8
# parameters to fp32") casts every bf16/fp16 parameter that is not a bitsandbytes Params4bit to
# fp32: embeddings, lm_head, norms and biases. The Hugging Face/PEFT QLoRA recipe (mixed
# precision) calls it; pure-bf16 stacks (torchtune, LitGPT bf16-true) do not.
KBIT_PREPARED_BYTES = 4

# PEFT keeps LoRA adapters in fp32 by default (autocast_adapter_dtype=True) with fp32 gradients.
ADAPTER_WEIGHT_BYTES = 4
ADAPTER_GRAD_BYTES = 4

# Optimizers whose states are created like the parameter (torch.optim.AdamW and SGD:
# torch.zeros_like(p); transformers' Adafactor: .to(grad)), so a bf16 parameter has bf16 states
# and the fp32 byte counts above halve. bitsandbytes' optimizers keep their own state dtypes
# (uint8 for 8-bit, fp32 for paged_adamw_32bit) whatever the parameter's.
PARAM_DTYPE_STATE_OPTIMIZERS: tuple[Optimizer, ...] = ("adamw", "sgd", "adafactor")

# Pure bf16 full fine-tuning (torchtune, LitGPT bf16-true): bf16 weights and gradients, no
# fp32 master copy (precision.py).
PURE_BF16_WEIGHT_GRAD_BYTES = (2, 2)


# A multimodal checkpoint's vision/audio tower stays frozen in bf16 whatever the method (the
# language model is what is trained; transformers loads the tower beside it): weights only, no
# gradient, no optimizer state (ModelShape.tower_params).
TOWER_WEIGHT_BYTES = BF16_BYTES

# The output projection's module name in transformers, PEFT, LitGPT and torchtune. PEFT's
# "all-linear" never adapts it, but a target list may name it (PEFT), LitGPT has ``lora_head``
# and torchtune ``apply_lora_to_output``: an adapter of r * (hidden + vocab) params.
LM_HEAD_TARGET = "lm_head"


class StatesError(EngineError):
    """A method/optimizer/target combination the engine refuses; the message says why."""


@dataclass(frozen=True, slots=True)
class LoraSetup:
    rank: int = 16
    targets: str | tuple[str, ...] = "all-linear"
    dropout: float = 0.0
    moe_lora: MoeLora = "fused"


@dataclass(frozen=True, slots=True)
class ModelStates:
    """Per-GPU model-state bytes, split as the result shows them."""

    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    trainable_params: int
    adapter_weight_bytes: int = 0
    adapter_grad_bytes: int = 0
    adapter_optimizer_bytes: int = 0

    @property
    def adapter_bytes(self) -> int:
        """The trainable LoRA params with their gradients and optimizer states."""
        return self.adapter_weight_bytes + self.adapter_grad_bytes + self.adapter_optimizer_bytes

    @property
    def total_bytes(self) -> int:
        return (
            self.weights_bytes + self.adapter_bytes + self.gradients_bytes + self.optimizer_bytes
        )


def lora_target_specs(shape: ModelShape, targets: str | Sequence[str],
                      moe_lora: MoeLora = "fused") -> tuple[LinearSpec, ...]:
    """The block linear layers a LoRA target setting adapts.

    Presets: ``all-linear`` (every block linear layer, as PEFT's "all-linear"; never lm_head),
    ``attention`` (q/k/v/o, or the fused projections where the model fuses them), ``qv``
    (q_proj and v_proj only), ``mlp`` (the MLP or expert layers, not the router). Anything else
    is a list of module names matched like PEFT matches ``target_modules`` (by the last name).
    Under the ``fused`` convention (:data:`MOE_LORAS`) the kinds PEFT does not adapt there
    (``LinearSpec.lora_target`` False) are left out of every setting.
    """
    chosen = _lora_candidates(shape, targets)
    # itertools/operator: no Python-level step per kind (test_config_bounds counts them)
    kept = map(attrgetter("lora_target"), chosen)
    if moe_lora == "per-expert":  # what PEFT skipped for the fused experts' sake it adapts
        kept = map(or_, kept, map(PER_EXPERT_ROLES.__contains__, map(attrgetter("role"), chosen)))
    return tuple(compress(chosen, kept))


def adapter_params(spec: LinearSpec, rank: int, moe_lora: MoeLora = "fused") -> int:
    """Trainable parameters of the adapters on one kind of layer, r * (m + n) per module (LoRA
    paper section 4: A is r x m, B is n x r). A fused gate/up expert tensor
    (``lora_rank_factor`` 2) is one module of rank 2r under ``fused`` and two layers of half
    its width, rank r each, under ``per-expert``."""
    factor = spec.lora_rank_factor
    if moe_lora == "fused":
        per_module = rank * factor * (spec.in_features + spec.out_features)
    else:
        per_module = rank * (factor * spec.in_features + spec.out_features)
    return per_module * spec.instances


def _lora_candidates(shape: ModelShape, targets: str | Sequence[str]) -> tuple[LinearSpec, ...]:
    if isinstance(targets, str) and targets in LORA_TARGET_PRESETS:
        if targets == "all-linear":
            chosen = shape.linears
        elif targets == "attention":
            chosen = tuple(s for s in shape.linears if s.role in ATTENTION_ROLES)
        elif targets == "mlp":
            chosen = tuple(s for s in shape.linears if s.role in MLP_ROLES)
        else:
            chosen = tuple(s for s in shape.linears if s.role in ("q", "v"))
            if not chosen:
                fused = sorted({s.name for s in shape.linears if s.role in ATTENTION_ROLES})
                raise StatesError("lora_targets", "qv_fused", model_type=shape.model_type,
                                  fused=", ".join(fused))
        return chosen
    names = [targets] if isinstance(targets, str) else list(targets)
    names = [n.strip() for n in names if n.strip()]
    if not names:
        raise StatesError("lora_targets", "no_targets")
    available = sorted({s.name for s in shape.linears} | {LM_HEAD_TARGET})
    unknown = [n for n in names if n not in available]
    if unknown:
        raise StatesError("lora_targets", "unknown_targets", unknown=", ".join(unknown),
                          available=", ".join(available),
                          presets=", ".join(LORA_TARGET_PRESETS))
    head = (lm_head_spec(shape),) if LM_HEAD_TARGET in names else ()
    return tuple(s for s in shape.linears if s.name in names) + head


def lm_head_spec(shape: ModelShape) -> LinearSpec:
    """The output projection as a LoRA target: hidden -> vocabulary, once per model (tied to the
    embedding or not, the adapter is its own r * (hidden + vocab) params)."""
    return LinearSpec(LM_HEAD_TARGET, "lm_head", shape.hidden_size, shape.vocab_size, layers=1)


def lora_trainable_params(shape: ModelShape, lora: LoraSetup) -> int:
    """r * (m + n) per adapted module (LoRA paper section 4: A is r x m, B is n x r)."""
    if lora.rank <= 0:
        raise StatesError("lora_rank", "at_least_one")
    return sum(
        adapter_params(spec, lora.rank, lora.moe_lora)
        for spec in lora_target_specs(shape, lora.targets, lora.moe_lora)
    )


def adafactor_state_bytes(shape: ModelShape, *, trainable: Literal["all", "lora"],
                          lora: LoraSetup | None = None) -> int:
    """Adafactor's factored second moment: a row and a column vector per matrix, a full vector
    per 1-D param, fp32, no first moment (Shazeer & Stern, arXiv 1804.04235; HF Adafactor
    defaults beta1=None)."""
    if trainable == "lora":
        setup = lora or LoraSetup()
        # Each adapter is two matrices: A (r x m) and B (n x r); a fused gate/up expert
        # tensor is one of rank 2r (fused) or two of half its width (per-expert).
        return FP32_BYTES * sum(
            _adafactor_adapter_vectors(spec, setup) * spec.instances
            for spec in lora_target_specs(shape, setup.targets, setup.moe_lora)
        )
    matrices = sum(
        (spec.in_features + spec.out_features) * spec.instances for spec in shape.linears
    )
    vectors = shape.split.norm + shape.split.other
    embedding_rows = shape.vocab_size + shape.hidden_size
    embeddings = embedding_rows * (1 if shape.tied_embeddings else 2)
    if shape.model_type == "gpt2" and shape.max_positions:
        embeddings += shape.max_positions + shape.hidden_size
    return FP32_BYTES * (matrices + vectors + embeddings)


def _adafactor_adapter_vectors(spec: LinearSpec, setup: LoraSetup) -> int:
    """Adafactor's row and column vectors of one module's A and B."""
    factor, rank = spec.lora_rank_factor, setup.rank
    if setup.moe_lora == "fused":
        return 2 * factor * rank + spec.in_features + spec.out_features
    return factor * (2 * rank + spec.in_features) + spec.out_features


def _optimizer_bytes_per_param(optimizer: Optimizer) -> int:
    return OPTIMIZER_MOMENT_BYTES[optimizer]


def _in_param_dtype(optimizer: Optimizer, fp32_bytes: int, param_bytes: int) -> int:
    """Optimizer-state bytes for parameters of ``param_bytes`` each, from their fp32 count."""
    if optimizer not in PARAM_DTYPE_STATE_OPTIMIZERS:
        return fp32_bytes
    return fp32_bytes * param_bytes // FP32_BYTES


def packed_specs(shape: ModelShape, moe_lora: MoeLora = "fused") -> tuple[LinearSpec, ...]:
    """The block linear layers a QLoRA load stores in NF4 (bitsandbytes ``Params4bit``).

    ``fused`` (transformers 5's layout, :data:`MOE_LORAS`): only the ``nn.Linear`` modules
    (``LinearSpec.packed_4bit``). A mixture's fused 3-D expert tensors and its routers are
    parameters that ``load_in_4bit`` leaves in the checkpoint's dtype, and
    ``prepare_model_for_kbit_training`` then casts them to fp32 like any other non-4-bit
    parameter. Measured with transformers 5.24, PEFT 0.21.2 and bitsandbytes 0.50.2 on tiny
    Qwen3-MoE, Mixtral, gpt-oss, DeepSeek-V3, GLM-4.5, MiniMax-M2, Llama 4 and Gemma 4 models:
    ``tools/moe_qlora_layout.py`` (``tests/fixtures/moe_qlora_layout.json``): no expert or
    router parameter was packed. ``per-expert`` (transformers 4's one ``nn.Linear`` per
    expert and router): every block linear layer."""
    if moe_lora == "per-expert":
        return shape.linears
    return tuple(compress(shape.linears, map(attrgetter("packed_4bit"), shape.linears)))


def merged_parameter_params(shape: ModelShape, lora: LoraSetup) -> tuple[int, int]:
    """Parameters PEFT merges with their adapter on every forward, in all layers and in one.

    PEFT 0.21 adapts a parameter (a fused 3-D expert tensor, a router that is an
    ``nn.Parameter``: ``LinearSpec.packed_4bit`` False) through ``ParamWrapper``: a
    parametrization that returns ``W + scaling * B @ A`` (``_LoraFactorsProxy``, one
    ``baddbmm`` in W's dtype; ``peft/tuners/lora/layer.py``) as a new tensor the size of W.
    transformers' expert matmul (``grouped_mm`` or the eager per-expert ``linear``) saves that
    merged weight for the input gradient, so each adapted tensor is held once more, in the base
    parameter's dtype, from its forward to its backward. Measured on a tiny Qwen3-MoE
    (``tools/calibrate/results/cpu-moe.json``). ``per-expert`` (one ``nn.Linear`` per expert)
    adds the low-rank product to the output instead: nothing merged.

    Returns ``(every layer's, the widest layer's)`` params: without checkpointing all are held
    at once; with it only the layer being recomputed and differentiated."""
    if lora.moe_lora == "per-expert":
        return 0, 0
    adapted = lora_target_specs(shape, lora.targets, lora.moe_lora)
    # itertools/operator: no Python-level step per kind (test_config_bounds counts them)
    merged = tuple(compress(adapted, map(not_, map(attrgetter("packed_4bit"), adapted))))
    per_layer = tuple(map(mul, map(mul, map(attrgetter("in_features"), merged),
                                   map(attrgetter("out_features"), merged)),
                          map(attrgetter("copies"), merged)))
    return sum(map(mul, per_layer, map(attrgetter("layers"), merged))), sum(per_layer)


def base_weight_bytes(shape: ModelShape, method: Method, quant: Quant = "nf4-dq",
                      base_bytes: int = BF16_BYTES, moe_lora: MoeLora = "fused") -> int:
    """Bytes of the frozen base for LoRA (bf16, or fp32 when loaded so) and QLoRA (the NF4
    layers of :func:`packed_specs` with their quantisation state, the rest at
    ``base_bytes``: the base dtype, or fp32 after ``prepare_model_for_kbit_training``); the
    routers transformers keeps in fp32 (``ModelShape.fp32_params``) at 4 bytes in either."""
    split = shape.split
    # Routers transformers keeps in fp32 (ModelShape.fp32_params) whatever the base's dtype.
    fp32_extra = max(FP32_BYTES - base_bytes, 0) * shape.fp32_params
    if method == "qlora":
        packed = packed_specs(shape, moe_lora)
        packed_params: int = sum(map(mul, map(mul, map(attrgetter("in_features"), packed),
                                              map(attrgetter("out_features"), packed)),
                                     map(mul, map(attrgetter("copies"), packed),
                                         map(attrgetter("layers"), packed))))
        return (round(packed_params * NF4_PACKED_BITS / 8)
                + quant_state_bytes(shape, quant, moe_lora)
                + base_bytes * (split.total - packed_params) + fp32_extra)
    return base_bytes * split.total + fp32_extra


def quant_state_bytes(shape: ModelShape, quant: Quant = "nf4-dq",
                      moe_lora: MoeLora = "fused") -> int:
    """The quantisation statistics of every 4-bit layer (:func:`packed_specs`): the bits of
    :data:`NF4_BITS` beyond the packed 4 (absmax per 64-block, and with double quantisation its
    8-bit code and the second-level fp32 absmax) plus each module's code books
    (:data:`QUANT_STATE_MODULE_BYTES`). bitsandbytes keeps them in a ``QuantState``, not in the
    packed parameter."""
    packed = packed_specs(shape, moe_lora)
    # itertools/operator: no Python-level step per kind (test_config_bounds counts them)
    instances: tuple[int, ...] = tuple(map(mul, map(attrgetter("copies"), packed),
                                           map(attrgetter("layers"), packed)))
    params: int = sum(map(mul, instances, map(mul, map(attrgetter("in_features"), packed),
                                              map(attrgetter("out_features"), packed))))
    statistics = round(params * (NF4_BITS[quant] - NF4_PACKED_BITS) / 8)
    return statistics + QUANT_STATE_MODULE_BYTES[quant] * sum(instances)


def kbit_prepared(method: Method, precision: TrainingPrecision) -> bool:
    """Whether the job runs PEFT's ``prepare_model_for_kbit_training`` (QLoRA under mixed
    precision, the Hugging Face/PEFT recipe): the non-4-bit params become fp32, and the residual
    stream with them (activations.py, regime ``qlora``)."""
    return method == "qlora" and precision.precision == "amp"


def single_gpu_states(
    shape: ModelShape,
    *,
    method: Method,
    optimizer: Optimizer = "adamw",
    accounting: Accounting = "zero",
    lora: LoraSetup | None = None,
    quant: Quant = "nf4-dq",
    precision: TrainingPrecision = AMP,
    kbit_prepare: bool = False,
) -> ModelStates:
    """Model states on one GPU without sharding (the article's tables; pure bf16 and bf16
    adapters as :mod:`precision` says). ``kbit_prepare``: QLoRA's non-4-bit params in fp32, as
    PEFT's recipe leaves them (:func:`kbit_prepared`); the article counts them in the base
    dtype."""
    total = shape.total_params
    if method == "full":
        if optimizer == "adafactor":
            moments = adafactor_state_bytes(shape, trainable="all")
        else:
            moments = _optimizer_bytes_per_param(optimizer) * total
        weight_b, grad_b = FULL_WEIGHT_GRAD_BYTES[accounting]
        master = ZERO_MASTER_BYTES * total if accounting == "zero" else 0
        if precision.precision == "bf16":
            weight_b, grad_b = PURE_BF16_WEIGHT_GRAD_BYTES
            master = 0
            moments = _in_param_dtype(optimizer, moments, DTYPE_BYTES["bf16"])
        return ModelStates(
            weights_bytes=weight_b * total + TOWER_WEIGHT_BYTES * shape.tower_params,
            gradients_bytes=grad_b * total,
            optimizer_bytes=master + moments,
            trainable_params=total,
        )
    setup = lora or LoraSetup()
    trainable = lora_trainable_params(shape, setup)
    if optimizer == "adafactor":
        adapter_moments = adafactor_state_bytes(shape, trainable="lora", lora=setup)
    else:
        adapter_moments = _optimizer_bytes_per_param(optimizer) * trainable
    adapter_bytes = precision.adapter_bytes
    return ModelStates(
        weights_bytes=base_weight_bytes(
            shape, method, quant,
            KBIT_PREPARED_BYTES if kbit_prepare and method == "qlora" else precision.base_bytes,
            setup.moe_lora,
        ) + TOWER_WEIGHT_BYTES * shape.tower_params,
        gradients_bytes=0,
        optimizer_bytes=0,
        trainable_params=trainable,
        adapter_weight_bytes=ADAPTER_WEIGHT_BYTES * trainable * adapter_bytes // FP32_BYTES,
        adapter_grad_bytes=ADAPTER_GRAD_BYTES * trainable * adapter_bytes // FP32_BYTES,
        adapter_optimizer_bytes=_in_param_dtype(optimizer, adapter_moments, adapter_bytes),
    )


def shard_states(
    states: ModelStates,
    *,
    gpus: int,
    sharding: Sharding,
    offload: Offload = "none",
) -> ModelStates:
    """Per-GPU states under ZeRO / FSDP data parallelism (ZeRO paper section 5).

    zero1 partitions optimizer states, zero2 also gradients, zero3 (= FSDP FULL_SHARD) also the
    parameters: "memory reduction is linear in the DP degree". Adapter states are trainable
    states and shard like them. Offload (ZeRO-Offload, arXiv 2101.06840) moves optimizer states
    to CPU memory; with zero3, ``optimizer+params`` also moves the parameter shards
    (ZeRO-Infinity, arXiv 2104.07857); the gathered layer stays on the GPU.
    """
    if gpus < 1:
        raise StatesError("gpus", "at_least_one")
    if offload == "optimizer+params" and sharding != "zero3":
        raise StatesError("offload", "offload_needs_zero3")
    n = gpus if sharding != "none" else 1
    # Each kind of state whole on every card, split over the n cards (rounded up), or on the
    # CPU (0). Runs for every card count a search asks: plain arithmetic, no helper calls.
    weights_split = sharding == "zero3"
    weights_gone = offload == "optimizer+params"
    gradients_split = sharding in ("zero2", "zero3")
    optimizer_split = sharding in ("zero1", "zero2", "zero3")
    optimizer_gone = offload in ("optimizer", "optimizer+params")
    weights, adapter_weights = states.weights_bytes, states.adapter_weight_bytes
    gradients, adapter_grads = states.gradients_bytes, states.adapter_grad_bytes
    optimizer, adapter_optimizer = states.optimizer_bytes, states.adapter_optimizer_bytes
    return ModelStates(
        weights_bytes=0 if weights_gone else -(-weights // n) if weights_split else weights,
        gradients_bytes=-(-gradients // n) if gradients_split else gradients,
        optimizer_bytes=(0 if optimizer_gone else -(-optimizer // n) if optimizer_split
                         else optimizer),
        trainable_params=states.trainable_params,
        adapter_weight_bytes=(0 if weights_gone else -(-adapter_weights // n) if weights_split
                              else adapter_weights),
        adapter_grad_bytes=-(-adapter_grads // n) if gradients_split else adapter_grads,
        adapter_optimizer_bytes=(0 if optimizer_gone
                                 else -(-adapter_optimizer // n) if optimizer_split
                                 else adapter_optimizer),
    )
