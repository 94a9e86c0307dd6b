"""Training speed: the time of one optimizer step of a job on a card or a system.

A step is the sum of its parts, each from the job's arithmetic and the card's catalog figures:

* matmul FLOPs per token (:func:`flop_terms`): the forward of the active linear weights, their
  activation gradients, weight gradients only where weights are trained, LoRA adapters, the
  recomputed forward under gradient checkpointing, attention scores and values, and lm_head
  with the loss; run at the card's dense BF16 peak times an achieved fraction
  (:func:`achieved_fraction`) that falls for small per-GPU token counts;
* memory-bound bytes (:func:`memory_terms`): QLoRA's dequantisation of every 4-bit weight on
  every pass, autocast's bf16 copies of fp32 weights, eager attention's score matrices and the
  optimizer step, at the card's memory bandwidth times :data:`MEMORY_EFFICIENCY`;
* host traffic over PCIe (optimizer and activation offload, :func:`offload_seconds`);
* several GPUs (:func:`communication_bytes`): data parallelism's gradient all-reduce and
  ZeRO-3/FSDP's all-gathers and reduce-scatter over the system's interconnect, overlapped with
  the forward and backward as DDP's gradient buckets and FSDP/DeepSpeed's prefetch overlap it:
  only what exceeds that compute adds to the step;
* the host's work (:func:`host_kernels`): PyTorch eager issues every kernel from the host
  (Python, the dispatcher, autograd, the launch) while the GPU runs the earlier ones
  asynchronously, so a step takes at least its counted kernels x
  :data:`HOST_SECONDS_PER_KERNEL`: ``step = max(GPU time, host time)``. Only small steps (few
  tokens, many adapted modules) reach this floor.

Standard library only (docs/architecture.md rule 1). Every constant says where it comes from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.engine.errors import EngineError
from app.engine.serving_kv import kv_layout
from app.engine.shapes import LinearSpec, ModelShape

# --- The achieved fraction of peak for the matmul-bound part ------------------------------

CALIBRATION = (
    "the 15 H200 steps of tests/fixtures/h200_steps and the 20 published cases of QwenLM/Qwen "
    "and MosaicML llm-foundry in app/estimates/measurements/published_speed.json (A100 80GB, "
    "A100 40GB, H100 SXM)")
"""What the fitted constants below were chosen on, jointly, each within the range its physical
reading allows (a grid over the five, the worst case and the medians kept small)."""

PEAK_FRACTION = 0.75
"""The share of the dense BF16 peak a training step's matmuls reach at large per-GPU token
counts on Ampere, Ada and Blackwell cards. A large BF16 GEMM reaches 80-90 % of an A100's
312 TFLOP/s in cuBLAS; MosaicML's A100 runs reach 73-77 % hardware FLOPs utilisation with
FlashAttention and FSDP (llm-foundry scripts/train/benchmarking/README.md); 75 % fitted on
:data:`CALIBRATION`."""
PEAK_FRACTION_HOPPER = 0.55
"""...and on Hopper, whose dense peak needs its asynchronous WGMMA and TMA pipelines that
PyTorch's kernels reach only in part, at clocks that fall under sustained load at 700 W: the
same MosaicML models reach 55-58 % hardware FLOPs utilisation on H100 SXM where they reach
73-75 % on A100 (llm-foundry, as above); a dense 8192^3 BF16 matmul reached about 790 of
989.5 TFLOP/s on the H200 of shared/measured, a whole step's thinner GEMMs less. 55 %
fitted on :data:`CALIBRATION`."""
HALF_TOKENS = 64.0
"""Tokens per GPU per micro-step at which the achieved fraction is half of
:data:`PEAK_FRACTION`: with few tokens a step's GEMMs are thin (one row per token) and tile a
card's SMs badly. Qwen's A100 LoRA steps run at nearly the same tokens per second from 512 to
8,192 tokens and slower only at 256 (QwenLM/Qwen README), so the fall sits below a few
hundred tokens; 64 fitted on :data:`CALIBRATION`."""
HIDDEN_PASS_BYTES = 100
"""Bytes per hidden feature, token and layer one forward moves outside the matmuls, as
Hugging Face's eager modules run them: two RMSNorms upcast to fp32 and back (about 24 B each:
read 2, write 4, read 4 twice, write 4, read 4, write 2), the rotary embedding of queries and
keys (about 20 B of q's and k's width), two residual adds (6 B each) and the attention
input/output reshapes and casts: about 80-100 B counted, 100 fitted on :data:`CALIBRATION`.
The backward moves about twice as much. This traffic per token grows
with the width while the matmul FLOPs grow with its square, so thin models run further from
the peak on cards whose FLOP/s outrun their bandwidth."""
INTERMEDIATE_PASS_BYTES = 10
"""Bytes per MLP intermediate feature, token and layer per forward: SiLU of the gate (read 2,
write 2) and its product with the up projection (read 4, write 2)."""

MEMORY_EFFICIENCY = 0.70
"""Share of the card's memory bandwidth elementwise kernels reach (STREAM-like copies on H100
reach 80-90 % of the datasheet bandwidth; bitsandbytes' 4-bit dequantisation and PyTorch's
fused AdamW less): 70 %."""

QLORA_DEQUANT_SECONDS = 3.0e-4
"""Fixed time of one bitsandbytes 4-bit dequantisation call beside its bytes: the double
quantisation first dequantises the absmax statistics, then the weight (two kernels and their
Python per call, ``bitsandbytes.functional.dequantize_4bit``), for every 4-bit layer on every
pass. The QLoRA steps' excess over the LoRA steps of the same model on the H200 (Llama 3.2 1B,
3.1 8B, 3.3 70B) is a few hundred microseconds per call, far more than their bytes; 300 us
fitted on :data:`CALIBRATION`."""
LORA_IN_BYTES = 2
"""Bytes per input feature and token an adapted layer moves besides its base matmul, per
pass: the adapter's A matmul reads the input (bf16) again; in the backward the input gradient
of A is written. With LoRA dropout, :data:`LORA_DROPOUT_BYTES` more."""
LORA_DROPOUT_BYTES = 5
"""PEFT's ``nn.Dropout`` on the adapter's input: read 2, write 2 and a 1-byte mask (PEFT uses
``nn.Identity`` at dropout 0)."""
LORA_OUT_BYTES = 12
"""Bytes per output feature and token per pass: B's product written (2), scaled (read and
write, 4) and added to the base output (read 4, write 2): ``peft.tuners.lora.layer.Linear``
computes ``result + lora_B(lora_A(dropout(x))) * scaling`` as separate kernels; its backward
moves as much again on the gradients."""
LORA_MODULE_SECONDS = 5.0e-5
"""Fixed time of one PEFT LoRA module per forward or backward pass beside its FLOPs: dropout,
two thin matmuls, scaling and the add, each a kernel launch and Python (``peft.tuners.lora
.layer.Linear.forward``); 50 us fitted on :data:`CALIBRATION`."""

# --- Bytes of the memory-bound parts ------------------------------------------------------

NF4_READ_BYTES = 0.5 + 4 / 64
"""Bytes read per 4-bit weight when dequantising: the packed half byte and its share of the
absmax (one fp32 per 64-weight block before double quantisation, QLoRA paper)."""
BF16_BYTES = 2
FP32_BYTES = 4
OPTIMIZER_PASS_BYTES = {
    "adamw": (2, 2), "paged_adamw_32bit": (2, 2), "adamw_8bit": (0.5, 0.5),
    "paged_adamw_8bit": (0.5, 0.5), "sgd": (1, 1), "adafactor": (0.1, 0.1),
}
"""Optimizer states per parameter as multiples of the state dtype's size read and written by
one step: AdamW's two moments (fp32 under amp; 8-bit: one byte each = 0.5 of bf16's 2 B),
SGD's momentum, Adafactor's factored second moment (rows + columns, about 0.1 of a full
state for transformer matrices)."""
EAGER_SCORE_BYTES = 48
"""Bytes moved per attention score element and pass by eager attention: the bf16 product
written, the mask added (read and write), the softmax upcast to fp32 and back (read 2, write 4,
read 4, write 2) and read again by the value matmul; Gemma 2's soft-capping adds three more
elementwise passes (:data:`SOFTCAP_SCORE_BYTES`). The backward moves about twice this."""
SOFTCAP_SCORE_BYTES = 12
"""tanh soft-capping of each score: divide, tanh, multiply (bf16 read and write each)."""

# --- Host and GPU links -------------------------------------------------------------------

LINK_EFFICIENCY = {"nvlink": 0.80, "pcie": 0.40, "ethernet": 0.75}
"""Share of one direction of the catalog's link bandwidth a ring collective reaches (NCCL's
bus bandwidth): NVLink about 80 % (nccl-tests all_reduce on 8 x H100 SXM: 360-370 of 450 GB/s
per direction); PCIe about 40 % (GPUs without peer-to-peer go through host memory: nccl-tests
on PCIe Gen4/5 cards report 20-25 GB/s of 32-64); Ethernet/RoCE 75 % (DGX Spark's two
ConnectX-7 links: 189.85 Gb/s RDMA measured over two 100 Gb/s directions, NVIDIA's
connect-two-sparks guide)."""
PCIE_HOST_GBPS = 25.0
"""GB/s one way between a GPU and host memory for offload traffic: PCIe Gen4/5 x16 pinned
copies measure 25-50 GB/s (nvbandwidth); 25 GB/s for pageable or shared links."""
CPU_ADAM_PARAMS_PER_S = 1.0e9
"""Parameters per second DeepSpeed's CPU Adam updates (ZeRO-Offload paper, Table 3: about 1 s
per step for 1B parameters on a 2-socket host, with AVX512 vectorisation)."""


@dataclass(frozen=True, slots=True)
class CardSpeed:
    """A card's speed figures from the catalog (None where it publishes none)."""

    bf16_tflops: float | None
    memory_bandwidth_gbps: float | None
    interconnect: str = "pcie"
    interconnect_bandwidth_gbps: float | None = None
    fp4_tflops: float | None = None
    compute_capability: str = "8.0"

    @property
    def matmul_tflops(self) -> float | None:
        """Dense BF16; where a card publishes only FP4 (DGX Spark), a quarter of it: Blackwell
        halves the tensor cores' rate for each doubling of width (NVIDIA's Blackwell tables:
        FP4 = 2 x FP8 = 4 x BF16), the shop's catalog convention (gpus.json conventions)."""
        if self.bf16_tflops:
            return self.bf16_tflops
        return self.fp4_tflops / 4 if self.fp4_tflops else None


@dataclass(frozen=True, slots=True)
class SpeedJob:
    """What speed needs of a training job (estimate.Job maps onto it)."""

    method: str
    trainable_linear: bool
    lora_specs: tuple[LinearSpec, ...]
    lora_rank: int
    packed_specs: tuple[LinearSpec, ...]
    batch_size: int
    seq_len: int
    gradient_checkpointing: bool
    attention: str
    gpus: int
    sharding: str
    offload: str
    activation_offload: bool
    gradient_accumulation: int
    optimizer: str
    lora_dropout: bool
    master_bytes: int
    """Bytes of a trained weight and its gradient (4 under amp, 2 in pure bf16)."""
    fp32_base: bool
    """A frozen base held in fp32 and cast to bf16 for every matmul."""
    adapter_bytes: int
    trainable_params: int
    stored_bytes_per_param: float
    """Bytes per weight of what ZeRO-3/FSDP gathers."""
    saved_bytes_per_token: int
    """What the forward keeps for the backward per token (offloaded with activation offload)."""


@dataclass(frozen=True, slots=True)
class AttentionLayers:
    """Which layers attend how: full causal, sliding over ``window`` tokens, or a linear
    mixer (Gated DeltaNet, Mamba-2) with its own per-token work."""

    full: int
    sliding: int
    window: int
    linear: int


@dataclass(frozen=True, slots=True)
class FlopTerms:
    """Matmul FLOPs per token of one micro-step on one GPU, by term."""

    forward: float
    activation_grads: float
    weight_grads: float
    adapters: float
    recompute: float
    attention: float
    lm_head: float

    @property
    def total(self) -> float:
        return (self.forward + self.activation_grads + self.weight_grads + self.adapters
                + self.recompute + self.attention + self.lm_head)

    @property
    def model(self) -> float:
        """What PaLM's MFU counts: everything but the recompute."""
        return self.total - self.recompute


@dataclass(frozen=True, slots=True)
class MemoryTerms:
    """Bytes of the memory-bound parts of one step on one GPU, and fixed kernel times."""

    dequantise: float
    weight_casts: float
    eager_scores: float
    adapters: float
    elementwise: float
    optimizer: float
    fixed_seconds: float

    @property
    def per_micro_step(self) -> float:
        return (self.dequantise + self.weight_casts + self.eager_scores + self.adapters
                + self.elementwise)


@dataclass(frozen=True, slots=True)
class Training:
    """How fast the job trains: tokens per second over all its GPUs, one optimizer step,
    the hours for the customer's data, and the model FLOPs utilisation."""

    tokens_per_s: float
    step_seconds: float
    hours: float
    mfu: float


def config_attention_layers(config: Mapping[str, object], shape: ModelShape
                            ) -> AttentionLayers | None:
    """Full, sliding and linear layers as the config lays them out (the serving KV reader's
    layout, :func:`app.engine.serving_kv.kv_layout`); None where it cannot read them, and the
    speed takes every non-mixer layer as full attention."""
    try:
        layout = kv_layout(config, shape)
    except EngineError:
        return None
    return AttentionLayers(full=layout.full_layers, sliding=layout.sliding_layers,
                           window=layout.window, linear=layout.linear_layers)


def _linear_flops(specs: tuple[LinearSpec, ...]) -> float:
    """2 x the active weights of these linear layers (one multiply-add per weight per token)."""
    return 2.0 * sum(s.in_features * s.out_features * s.active_copies * s.layers for s in specs)


def attention_layers(shape: ModelShape, layers: AttentionLayers | None) -> AttentionLayers:
    """``layers`` as given (from the serving KV layout of the config), else every decoder
    layer that is not a linear mixer attends in full."""
    if layers is not None:
        return layers
    linear = shape.mixer.layers if shape.mixer is not None else 0
    return AttentionLayers(full=shape.num_layers - linear, sliding=0, window=0, linear=linear)


def mean_context(seq: int, window: int | None, causal: bool) -> float:
    """Keys one query attends to on average: all ``seq`` without a causal skip (eager builds the
    whole square and masks it), ``(seq + 1) / 2`` causal, at most ``window`` on a sliding
    layer (a sliding layer of a kernel that skips masked blocks)."""
    if not causal:
        return float(seq)
    if window is None or window >= seq:
        return (seq + 1) / 2
    # positions below the window attend to i + 1 keys, the rest to the window
    return (window * (window + 1) / 2 + (seq - window) * window) / seq


ATTENTION_FRACTION_HOPPER = 0.40
"""Share of the dense peak FlashAttention-2 (PyTorch SDPA's flash backend) reaches on Hopper:
"FlashAttention-2 achieves only 35 % utilization on the H100" (FlashAttention-3 paper, Shah et
al. 2024, section 1; its long-sequence forward figures reach 35-40 %): it does not use
Hopper's asynchronous WGMMA instructions."""
ATTENTION_FRACTION = 0.50
"""...and on the other architectures it was written for (Ampere, Ada, consumer Blackwell):
forward and backward together 50-60 % of an A100's peak (FlashAttention-2 paper, Dao 2023,
figure 4: 187-203 TFLOP/s of 312 at head dimension 128); the lower end."""
HOPPER_CC = "9."
"""Compute capability 9.x: Hopper."""


def attention_fraction(compute_capability: str) -> float:
    """The achieved share of the dense peak of attention's score and value matmuls."""
    if compute_capability.startswith(HOPPER_CC):
        return ATTENTION_FRACTION_HOPPER
    return ATTENTION_FRACTION


FLASH_BACKWARD_FACTOR = 2.5
"""FlashAttention's backward is 5 matmuls against the forward's 2 (it recomputes the scores):
FlashAttention-2 paper, section 3.1.2."""
EAGER_BACKWARD_FACTOR = 2.0
"""Eager attention's backward: the gradients of scores, queries, keys and values, 4 matmuls
against the forward's 2."""
LINEAR_MIXER_CHUNK = 64
"""Chunk length of the chunked scans of Gated DeltaNet (flash-linear-attention) and Mamba-2
(SSD): each token attends within its chunk and reads and updates the state once."""


def attention_flops(shape: ModelShape, job: SpeedJob, layers: AttentionLayers) -> float:
    """Attention scores and values per token, forward and backward (and the recomputed
    forward under checkpointing): ``4 x heads x head_dim x context`` per attention layer
    forward; linear mixers ``4 x heads x state`` plus the within-chunk products."""
    eager = job.attention == "eager"
    width = shape.num_heads * shape.head_dim
    full = mean_context(job.seq_len, None, causal=not eager)
    sliding = mean_context(job.seq_len, layers.window or None, causal=not eager)
    forward = 4.0 * width * (layers.full * full + layers.sliding * sliding)
    if shape.mixer is not None and layers.linear:
        mixer = shape.mixer
        per_layer = (4.0 * mixer.heads * mixer.state_per_head
                     + 2.0 * LINEAR_MIXER_CHUNK * (mixer.expanded_key_dim + mixer.value_dim))
        forward += layers.linear * per_layer
    backward = forward * (EAGER_BACKWARD_FACTOR if eager else FLASH_BACKWARD_FACTOR)
    passes = 2.0 if job.gradient_checkpointing else 1.0
    return forward * passes + backward


def flop_terms(shape: ModelShape, job: SpeedJob,
               layers: AttentionLayers | None = None) -> FlopTerms:
    """Matmul FLOPs per token by term (see the module docstring)."""
    body = _linear_flops(shape.linears)
    head = 2.0 * shape.vocab_size * shape.hidden_size
    trained_head = job.trainable_linear
    adapter_forward = 2.0 * job.lora_rank * sum(
        (s.in_features + s.out_features * s.lora_rank_factor) * s.active_copies * s.layers
        for s in job.lora_specs)
    # forward, input gradients and weight gradients of the adapters; forward again under
    # checkpointing
    adapters = adapter_forward * (4.0 if job.gradient_checkpointing else 3.0)
    return FlopTerms(
        forward=body,
        activation_grads=body,
        weight_grads=body if job.trainable_linear else 0.0,
        adapters=adapters,
        recompute=body if job.gradient_checkpointing else 0.0,
        attention=attention_flops(shape, job, attention_layers(shape, layers)),
        # forward and input gradient; the weight gradient where lm_head trains (full)
        lm_head=head * (3.0 if trained_head else 2.0),
    )


def memory_terms(shape: ModelShape, job: SpeedJob,
                 layers: AttentionLayers | None = None) -> MemoryTerms:
    """Bytes of the memory-bound parts of one step on one GPU (see the module docstring)."""
    tokens = job.batch_size * job.seq_len
    forward_passes = 2 if job.gradient_checkpointing else 1
    packed = sum(s.in_features * s.out_features * s.copies * s.layers for s in job.packed_specs)
    dequantise = casts = 0.0
    fixed = 0.0
    shards = job.gpus if job.sharding == "zero3" else 1
    if job.method == "qlora":
        # every 4-bit weight read packed and written in bf16 on every forward, recomputed
        # forward and backward
        passes = forward_passes + 1
        dequantise = passes * packed * (NF4_READ_BYTES + BF16_BYTES)
        modules = sum(s.copies * s.layers for s in job.packed_specs)
        fixed += passes * modules * QLORA_DEQUANT_SECONDS
    adapters = 0.0
    if job.method != "full":
        modules = sum(s.copies * s.layers for s in job.lora_specs)
        fixed += (forward_passes + 1) * modules * LORA_MODULE_SECONDS
        in_bytes = LORA_IN_BYTES + (LORA_DROPOUT_BYTES if job.lora_dropout else 0)
        per_token = sum((s.in_features * in_bytes + s.out_features * s.lora_rank_factor
                         * LORA_OUT_BYTES) * s.active_copies * s.layers for s in job.lora_specs)
        adapters = tokens * per_token * (forward_passes + 1)
    if job.method == "full" and job.master_bytes == FP32_BYTES:
        # autocast's bf16 copy of each fp32 weight per forward (read 4, write 2), and the bf16
        # weight gradient accumulated into the fp32 one (read 2 + 4, write 4)
        weights = (shape.split.linear + shape.vocab_size * shape.hidden_size) / shards
        casts = weights * (forward_passes * (FP32_BYTES + BF16_BYTES)
                           + BF16_BYTES + 2 * FP32_BYTES)
    elif job.fp32_base:
        weights = shape.split.linear / shards
        casts = weights * (forward_passes + 1) * (FP32_BYTES + BF16_BYTES)
    eager = 0.0
    if job.attention == "eager":
        att = attention_layers(shape, layers)
        per_element = EAGER_SCORE_BYTES + (SOFTCAP_SCORE_BYTES if shape.attention_softcap else 0)
        elements = job.batch_size * shape.num_heads * job.seq_len * job.seq_len
        # forward (twice with checkpointing) and a backward of about twice the traffic
        eager = (att.full + att.sliding) * elements * per_element * (forward_passes + 2)
    mlp_width = shape.intermediate_size if shape.gated_mlp else 0
    per_pass = (HIDDEN_PASS_BYTES * shape.hidden_size + INTERMEDIATE_PASS_BYTES * mlp_width)
    # forward (twice with checkpointing) and a backward of twice the traffic
    elementwise = tokens * shape.num_layers * per_pass * (forward_passes + 2)
    return MemoryTerms(
        dequantise=dequantise,
        weight_casts=casts,
        eager_scores=eager,
        adapters=adapters,
        elementwise=elementwise,
        optimizer=optimizer_bytes(job) / shards,
        fixed_seconds=fixed,
    )


def optimizer_bytes(job: SpeedJob) -> float:
    """Bytes one optimizer step reads and writes on one GPU before sharding: each trained
    parameter read and written, its gradient read (by the clipping norm and the step), the
    optimizer's states read and written (:data:`OPTIMIZER_PASS_BYTES`)."""
    if job.offload != "none":
        return 0.0  # the step runs on the host (offload_seconds)
    param = job.master_bytes if job.method == "full" else job.adapter_bytes
    state_bytes = FP32_BYTES if param == FP32_BYTES else BF16_BYTES
    read, write = OPTIMIZER_PASS_BYTES.get(job.optimizer, (2, 2))
    per_param = 2 * param + 2 * param + (read + write) * state_bytes
    return job.trainable_params * per_param


def offload_seconds(job: SpeedJob) -> float:
    """Host traffic per optimizer step over PCIe: under optimizer offload the gradients go down
    and the updated 16-bit weights come back, and the host's Adam runs; under activation
    offload each micro-step's saved activations go down and come back (not hidden: the
    transfers of the largest layers outlast their compute on PCIe)."""
    shards = job.gpus if job.sharding in ("zero2", "zero3") else 1
    seconds = 0.0
    if job.offload != "none":
        params = job.trainable_params / shards
        seconds += params * (job.master_bytes + BF16_BYTES) / (PCIE_HOST_GBPS * 1e9)
        seconds += params / CPU_ADAM_PARAMS_PER_S
    if job.activation_offload:
        tokens = job.batch_size * job.seq_len
        seconds += (job.gradient_accumulation * 2 * tokens * job.saved_bytes_per_token
                    / (PCIE_HOST_GBPS * 1e9))
    return seconds


def communication_bytes(shape: ModelShape, job: SpeedJob) -> float:
    """Bytes each GPU sends per optimizer step (ring collectives send (n-1)/n of the buffer
    once for an all-gather or reduce-scatter and twice for an all-reduce, NCCL's algorithms).

    Data parallel (and ZeRO-1/2): one all-reduce (ZeRO-2: reduce-scatter and all-gather, the
    same volume) of the trained gradients per optimizer step (gradient accumulation syncs on
    the last micro-step). ZeRO-3/FSDP: besides the gradients' reduce-scatter, the stored
    weights gathered for every forward, recomputed forward and backward of every micro-step
    (1.5x data parallelism's volume for full fine-tuning, ZeRO paper section 7)."""
    n = job.gpus
    if n <= 1:
        return 0.0
    share = (n - 1) / n
    grad_bytes = job.trainable_params * (job.master_bytes if job.method == "full"
                                         else job.adapter_bytes)
    if job.sharding != "zero3":
        return 2 * share * grad_bytes
    passes = (2 if job.gradient_checkpointing else 1) + 1
    stored = shape.total_params * job.stored_bytes_per_param
    return share * (grad_bytes + job.gradient_accumulation * passes * stored)


def achieved_fraction(tokens_per_gpu: int, compute_capability: str = "8.0") -> float:
    """The share of the dense peak the matmuls reach at this many tokens per GPU per
    micro-step: :data:`PEAK_FRACTION` (:data:`PEAK_FRACTION_HOPPER` on Hopper) x
    ``T / (T + HALF_TOKENS)``."""
    tokens = float(tokens_per_gpu)
    peak = PEAK_FRACTION_HOPPER if compute_capability.startswith(HOPPER_CC) else PEAK_FRACTION
    return peak * tokens / (tokens + HALF_TOKENS)



# --- The host's work: kernels issued per step ---------------------------------------------

HOST_SECONDS_PER_KERNEL = 4.25e-5
"""Host seconds per kernel of an eager LoRA training step whose GPU waits on its host: about
20,000 kernel launches in an 850 ms step of Qwen3.5-9B LoRA on a B200, the GPU busy about
270 ms of it, "the rest of the step is the CPU issuing about 20,000 kernel launches per step
through Python" (unslothai/unsloth pull request 10744, profile in 10806): 42.5 us a kernel,
Python, the dispatcher, autograd and the launch together. A bare PyTorch op costs less
(2-7 us from Python, pytorch/pytorch issue 41383; a CUDA launch "on the order of 10 us",
Modal's GPU glossary, "overhead"): a training step's modules add Python around each kernel.
Not chosen on any H200 step; the 15 and the held-out steps of 2026-12-04 check it."""
KERNELS_LINEAR_FORWARD = 1
"""One matmul per linear layer and forward (cuBLAS; ``F.linear``)."""
KERNELS_LINEAR_BACKWARD = 1
"""Its input gradient; a trained weight adds its weight gradient
(:data:`KERNELS_TRAINED_WEIGHT`)."""
KERNELS_TRAINED_WEIGHT = 1
KERNELS_AUTOCAST_CAST = 1
"""autocast's bf16 copy of an fp32 weight (once per forward, its cast cache), and the cast of
its gradient back to fp32 in the backward."""
KERNELS_DEQUANTISE = 2
"""bitsandbytes' ``dequantize_4bit`` with double quantisation: the absmax statistics, then
the weight, on every forward, recomputed forward and backward."""
KERNELS_LORA_FORWARD = 4
"""Kernels PEFT's ``lora.Linear.forward`` adds per adapted layer and forward beside the base
layer's (``result + lora_B(lora_A(dropout(x))) * scaling``): ``lora_A`` and ``lora_B`` (2),
the multiply by ``scaling`` and the add to the base output (2); :data:`KERNELS_LORA_DROPOUT`
with dropout (``nn.Identity`` at 0) and :data:`KERNELS_LORA_FP32` with fp32 adapters under
autocast."""
KERNELS_LORA_BACKWARD = 6
"""...and its backward: the scaling's gradient (1), A's and B's input and weight gradients
(4), and the add of the adapter's input gradient to the base layer's (1)."""
KERNELS_LORA_DROPOUT = 1
"""``nn.Dropout`` (one fused kernel with its mask) forward, its masked gradient backward."""
KERNELS_LORA_FP32 = 4
"""fp32 adapters under autocast: PEFT casts the input to the adapter's dtype
(``_cast_input_dtype``), autocast casts it and the A and B weights back to bf16 (4 forward);
the backward casts each of these gradients back (4)."""
KERNELS_PER_MICRO_STEP = 7
"""Kernels of a micro-step outside the decoder layers that every implementation issues: the
embedding (1), lm_head's matmul and its input gradient (2), the loss (log-softmax and NLL)
and their gradients (4)."""
KERNELS_PER_OPTIMIZER_STEP = 12
"""Kernels of one optimizer step: ``clip_grad_norm_`` (foreach norms, their stack and norm,
the clip coefficient and the foreach multiply: about 6) and fused AdamW's multi-tensor
launches (about 6)."""


def host_kernels(shape: ModelShape, job: SpeedJob) -> tuple[int, int]:
    """Kernels the host issues per micro-step and per optimizer step (counted above): the
    linear layers' (a recomputed forward under checkpointing), every adapted layer's adapter
    kernels, QLoRA's dequantisation and amp's weight casts; one module per linear kind and
    layer (a mixture of experts' fused expert tensors as one). The layers' other kernels
    (norms, rotary embedding, residual adds, activations) are left out: transformers' eager
    modules issue several each where Unsloth's and Qwen's code fuse them, so this count, and
    the floor, is a lower bound of the host's work."""
    forwards = 2 if job.gradient_checkpointing else 1
    linears = sum(s.layers for s in shape.linears)
    packed = sum(s.layers for s in job.packed_specs)
    adapted = sum(s.layers for s in job.lora_specs)
    forward = KERNELS_LINEAR_FORWARD * linears
    backward = KERNELS_LINEAR_BACKWARD * linears
    if job.trainable_linear:
        backward += KERNELS_TRAINED_WEIGHT * linears
        if job.master_bytes == FP32_BYTES:
            forward += KERNELS_AUTOCAST_CAST * linears
            backward += KERNELS_AUTOCAST_CAST * linears
    forward += KERNELS_DEQUANTISE * packed
    backward += KERNELS_DEQUANTISE * packed
    lora_forward, lora_backward = KERNELS_LORA_FORWARD, KERNELS_LORA_BACKWARD
    if job.lora_dropout:
        lora_forward += KERNELS_LORA_DROPOUT
        lora_backward += KERNELS_LORA_DROPOUT
    if job.adapter_bytes == FP32_BYTES:
        lora_forward += KERNELS_LORA_FP32
        lora_backward += KERNELS_LORA_FP32
    forward += lora_forward * adapted
    backward += lora_backward * adapted
    micro = forwards * forward + backward + KERNELS_PER_MICRO_STEP
    return micro, KERNELS_PER_OPTIMIZER_STEP


@dataclass(frozen=True, slots=True)
class StepWork:
    """One job's work per optimizer step on each of its GPUs, card-independent: computed once
    per estimate and held against every card (:func:`training`), which then only divides its
    few sums by the card's peak, bandwidth and link."""

    tokens: int
    """Tokens per GPU per micro-step (micro-batch x sequence)."""
    flops: FlopTerms
    memory: MemoryTerms
    offload_seconds: float
    communication_bytes: float
    gradient_accumulation: int
    gpus: int
    model_flops: float
    """FLOPs per token without the recompute (what MFU counts)."""
    peak_flops_hopper: float
    """One micro-step's matmul and attention FLOPs on one GPU, each divided by its achieved
    share on Hopper (:func:`achieved_fraction` at this job's tokens,
    :data:`ATTENTION_FRACTION_HOPPER`): the seconds of the compute at a peak of 1 FLOP/s."""
    peak_flops: float
    """...and on the other architectures (:data:`PEAK_FRACTION`, :data:`ATTENTION_FRACTION`)."""
    step_bytes: float
    """Memory-bound bytes of one optimizer step: every micro-step's and the optimizer's."""
    fixed_seconds: float
    """Seconds that depend on no card figure: every micro-step's fixed kernel times and the
    host transfers of offload."""
    tokens_per_step: int
    """Tokens of one optimizer step over all the job's GPUs."""
    host_seconds: float = 0.0
    """The host's time to issue one optimizer step's kernels (:func:`host_kernels`): the
    step takes at least this long on any card."""


def step_work(shape: ModelShape, job: SpeedJob, layers: AttentionLayers | None = None
              ) -> StepWork:
    """The job's FLOPs, bytes and transfers per step (see the module docstring), summed once
    into what :func:`step_seconds` divides by each card's figures."""
    tokens = job.batch_size * job.seq_len
    flops = flop_terms(shape, job, layers)
    memory = memory_terms(shape, job, layers)
    offload = offload_seconds(job)
    accumulation = job.gradient_accumulation
    token_fraction = tokens / (tokens + HALF_TOKENS)
    matmul = tokens * (flops.total - flops.attention)
    attention = tokens * flops.attention
    return StepWork(
        tokens=tokens,
        flops=flops,
        memory=memory,
        offload_seconds=offload,
        communication_bytes=communication_bytes(shape, job),
        gradient_accumulation=accumulation,
        gpus=job.gpus,
        model_flops=flops.model,
        peak_flops_hopper=(matmul / (PEAK_FRACTION_HOPPER * token_fraction)
                           + attention / ATTENTION_FRACTION_HOPPER),
        peak_flops=matmul / (PEAK_FRACTION * token_fraction) + attention / ATTENTION_FRACTION,
        step_bytes=accumulation * memory.per_micro_step + memory.optimizer,
        fixed_seconds=accumulation * memory.fixed_seconds + offload,
        tokens_per_step=tokens * accumulation * job.gpus,
        host_seconds=host_seconds(shape, job),
    )


def host_seconds(shape: ModelShape, job: SpeedJob) -> float:
    """Seconds the host takes to issue one optimizer step's kernels: every micro-step's and
    the optimizer's, at :data:`HOST_SECONDS_PER_KERNEL`."""
    micro, optimizer = host_kernels(shape, job)
    return (job.gradient_accumulation * micro + optimizer) * HOST_SECONDS_PER_KERNEL


def step_seconds(work: StepWork, card: CardSpeed, tflops: float | None = None) -> float:
    """Seconds of one optimizer step on each of the job's GPUs: the micro-steps' matmuls and
    memory-bound parts, the optimizer step and host transfers, or the host's time to issue
    the step's kernels where that is longer, and what of the communication the forward and
    backward do not hide. The card has its figures (:func:`training` checks)."""
    peak = (tflops or card.matmul_tflops or 0.0) * 1e12
    bandwidth = (card.memory_bandwidth_gbps or 0.0) * 1e9 * MEMORY_EFFICIENCY
    hopper = card.compute_capability.startswith(HOPPER_CC)
    compute = (work.peak_flops_hopper if hopper else work.peak_flops) / peak
    computing = work.gradient_accumulation * compute
    # the host issues the kernels while the GPU runs the earlier ones: the slower of the two
    seconds = max(computing + work.step_bytes / bandwidth + work.fixed_seconds,
                  work.host_seconds)
    if work.communication_bytes:
        link = card.interconnect_bandwidth_gbps or 0.0
        efficiency = LINK_EFFICIENCY.get(card.interconnect, LINK_EFFICIENCY["pcie"])
        # one direction of the catalog's (bidirectional) figure, at the collective's share
        link_bytes_per_s = link / 2 * 1e9 * efficiency
        # overlapped with the forward and backward (DDP's buckets, FSDP/ZeRO-3 prefetch):
        # only what outlasts them adds to the step
        seconds += max(0.0, work.communication_bytes / link_bytes_per_s - computing)
    return seconds


def _rounded(value: float, scale: float) -> float:
    """``value`` to ``1 / scale`` (``scale`` a power of ten): ``round(value, digits)`` for
    every figure that is not within a rounding error of a half, a tenth of its cost."""
    return round(value * scale) / scale


def training(work: StepWork, card: CardSpeed, *, dataset_tokens: int, epochs: int
             ) -> Training | None:
    """Tokens per second over all the job's GPUs, the step, the hours for ``dataset_tokens``
    x ``epochs`` and the MFU (model FLOPs, recompute left out, over the GPUs' dense BF16
    peak); None for a card without the figures (or a system without a link figure)."""
    tflops = card.matmul_tflops
    if not tflops or not card.memory_bandwidth_gbps:
        return None
    if work.communication_bytes and not card.interconnect_bandwidth_gbps:
        return None
    seconds = step_seconds(work, card, tflops)
    per_s = work.tokens_per_step / seconds
    return Training(
        tokens_per_s=_rounded(per_s, 10),
        step_seconds=_rounded(seconds, 10_000),
        hours=_rounded(dataset_tokens * epochs / per_s / 3600, 100),
        mfu=_rounded(per_s * work.model_flops / (tflops * 1e12 * work.gpus), 1000),
    )
