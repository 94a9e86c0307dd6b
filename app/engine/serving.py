"""Serving sizing: which card serves this model, at this context, to this many users, how fast.

A second workload beside training (:mod:`app.engine.estimate`). The memory follows what the
serving engines do at start-up, not a rule of thumb; the reference is **vLLM 0.11.0** (the V1
engine, widely deployed in 2025; shared/reference/serving-findings.md §1), whose
``Worker.determine_available_memory`` (``vllm/v1/worker/gpu_worker.py`` L222-302) computes::

    available_kv = total x gpu_memory_utilization
                   - weights                 # "Model loading took X GiB"
                   - profile-run peak        # a dummy forward of max_num_batched_tokens tokens
                   - non-torch memory        # NCCL, cuBLAS workspaces since start-up

and then cuts ``available_kv`` into 16-token blocks (``kv_cache_utils.py``). CUDA graphs are
captured after the KV cache is allocated (vLLM <= 0.20), so they and the CUDA context live in the
``1 - gpu_memory_utilization`` headroom, not in the budget. SGLang's ``mem_fraction_static`` and
llama.cpp's whole-card rule are the alternatives (:data:`RUNTIMES`).

Speed is memory-bound for decode: one step reads the weights a batch touches and every
request's KV cache, at the card's bandwidth times an efficiency factor calibrated on published
measurements (:data:`DECODE_EFFICIENCY`); prefill is compute-bound (:data:`PREFILL_MFU`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from app.engine.assumptions import APPROXIMATE_PART_TEXTS
from app.engine.capabilities import BLACKWELL_MIN_CC, FP8_MIN_CC, parse_compute_capability
from app.engine.errors import EngineError
from app.engine.estimate import ENGINE_VERSION, plain
from app.engine.monotone import last_true
from app.engine.serving_kv import BLOCK_TOKENS, KvLayout
from app.engine.serving_weights import (
    FOUR_BIT_FORMATS,
    GGUF_FORMATS,
    WEIGHT_FORMATS,
    WeightFormat,
    active_weight_bytes,
    weight_bytes,
)
from app.engine.shapes import ModelShape

GIB: Final = 1024**3
MIB: Final = 1024**2

Runtime = Literal["vllm", "sglang", "llama.cpp"]
RUNTIMES: tuple[Runtime, ...] = ("vllm", "sglang", "llama.cpp")
KvDtype = Literal["auto", "bf16", "fp16", "fp8"]
KV_DTYPES: tuple[KvDtype, ...] = ("auto", "bf16", "fp16", "fp8")
KV_DTYPE_BYTES: Final[dict[str, int]] = {"auto": 2, "bf16": 2, "fp16": 2, "fp8": 1}
"""Bytes per cached element: ``auto`` is the model's 16-bit dtype (vLLM ``kv_cache_dtype``);
fp8 (``fp8_e4m3``/``fp8_e5m2``) one byte, its per-tensor scales negligible."""

VLLM_VERSION: Final = "0.11.0"
"""The vLLM release whose start-up arithmetic this module follows."""
VLLM_DEFAULT_UTILIZATION: Final = 0.9
"""``gpu_memory_utilization`` default (``vllm/config/cache.py`` L43, v0.11.0)."""
VLLM_LARGE_CARD_BYTES: Final = 70 * GIB
"""vLLM 0.11 ``arg_utils.py`` L1605-1624: cards of at least 70 GiB (not A100) default to
``max_num_batched_tokens`` 8192 and ``max_num_seqs`` 1024 for the OpenAI server, others to 2048
and 256."""
VLLM_LARGE_BATCHED_TOKENS: Final = 8192
VLLM_LARGE_SEQS: Final = 1024
VLLM_SMALL_BATCHED_TOKENS: Final = 2048
VLLM_SMALL_SEQS: Final = 256
FORWARD_ELEMENTS_PER_TOKEN_FACTOR: Final = 3
"""The profile run's forward peak per token, in 16-bit elements: the MLP's gate/up output
(2 x intermediate), its activated product (intermediate), and three hidden-width tensors
(residual, normed input, down output), ``2 x (3 x intermediate / tp + 3 x hidden)`` bytes.
Calibrated on vLLM's own profile of Llama-3.1-8B on an RTX 3090 at 20,000 and 29,000 batched
tokens (2.07 and 2.99 GiB: 110 KB per token; tests/engine/test_serving_logs.py, issue
vllm-project/vllm#10517)."""
SAMPLER_BYTES_PER_LOGIT: Final = 16
"""The V1 sampler's dummy run over ``max_num_seqs`` rows of the vocabulary: fp32 logits and
the temperature, top-k/top-p and softmax buffers, about four fp32 copies. Calibrated on vLLM's
own accounting of Qwen2.5-0.5B on an A100 40GB (``torch_peak_increase`` 0.59 GiB with 256
sequences, where the forward of 2,048 tokens is 0.07 GiB; ovg-project/kvcached#448). The
profile's peak is the larger of the forward and the sampler, which run one after the other.
(The V0 sampler of vLLM 0.6 kept about ten copies: 1.26 GiB for Llama-3-8B in
vllm-project/vllm#10511.)"""
NON_TORCH_BYTES: Final = 350 * MIB
"""Memory vLLM 0.11 charges as non-torch on one GPU (cuBLAS/attention workspaces after its
first snapshot; the CUDA context is taken before it and is not charged): 0.35 GiB logged on an
RTX 3090 for Llama-3.1-8B (vllm-project/vllm#10517)."""
NCCL_BYTES: Final = 175 * GIB // 100
"""Added non-torch memory under tensor parallelism (NCCL communicators and vLLM's custom
all-reduce buffers), 1.75 GiB: fitted on the tensor-parallel logs of
app/estimates/measurements/vllm_logs.json (fourteen vLLM 0.19 start-ups on 2 and 4 H100s, logged
"non-torch forward increase memory" 2.06-2.21 GiB) as their median less :data:`NON_TORCH_BYTES`
(tests/engine/test_serving_logs.py). The single-GPU runs beside them log 0.24-0.27 GiB, so the
ranks' communicators cost 1.8-1.9 GiB whatever the model."""
CUDA_GRAPH_BYTES: Final = 3 * GIB // 4
"""CUDA graphs of the decode batch sizes (51 shapes up to 512 in vLLM 0.11): logged "Graph
capturing finished ..., took 0.60-1.12 GiB" (L40S, A100, H100 logs in serving-findings.md §1.3
and vllm-project/vllm#10517); outside the budget in vLLM <= 0.20."""
CUDA_CONTEXT_BYTES: Final = GIB // 2
"""The CUDA context and kernel images, taken before vLLM's first snapshot (serving-findings.md
§1.4); lives in the ``1 - gpu_memory_utilization`` headroom."""

UNIFIED_UTILIZATION_CAP: Final = 0.85
"""DGX Spark (GB10) and other unified-memory systems: the operating system, page cache and CPU
processes share the same LPDDR5x, so vLLM's fraction is capped here. NVIDIA's Nemotron-3-Super
NVFP4 recipe needs ``--gpu-memory-utilization 0.85`` on GB10, the default "OOMs at startup"
(vllm-project/recipes#632); the catalog's usable figure already leaves the OS its reserve."""

SGLANG_VERSION: Final = "0.5.23"
SGLANG_BASE_RESERVE: Final = 512 * MIB
"""SGLang's reserve when ``mem_fraction_static`` is unset (``memory_hook.py`` L48-343):
512 MB + 1.5 MB per chunked-prefill token + TP/8 GiB + the CUDA graph reserve, at least 10 GiB
on cards above 60 GB (serving-findings.md §1.7)."""
SGLANG_RESERVE_PER_PREFILL_TOKEN: Final = 3 * MIB // 2
SGLANG_LARGE_CARD_FLOOR: Final = 10 * GIB
SGLANG_LARGE_CARD_BYTES: Final = 60 * 10**9
SGLANG_SMALL_PREFILL: Final = 4096
SGLANG_LARGE_PREFILL: Final = 8192
SGLANG_SMALL_CARD_BYTES: Final = 60 * 10**9

LLAMA_CPP_UBATCH: Final = 512
"""llama.cpp's ``n_ubatch`` default: its compute buffer holds one micro-batch's logits
(``n_ubatch x vocab`` fp32) and activations."""
LLAMA_CPP_COMPUTE_ELEMENTS_PER_TOKEN_HIDDEN: Final = 8
"""Hidden-width fp32 tensors per micro-batch token in llama.cpp's compute graph beside the
logits (attention scores are chunked by flash attention)."""

DECODE_EFFICIENCY: Final = 0.83
"""Fraction of the card's memory bandwidth a decode step achieves, calibrated on published
single-stream measurements (median of app/estimates/measurements/decode_measurements.json at
:data:`DECODE_LAYER_OVERHEAD_S`, each case's error on the "How we calculate" page;
tests/engine/test_serving_speed.py)."""
DECODE_LAYER_OVERHEAD_S: Final = 27e-6
"""Fixed time per decoder layer and step that no bandwidth buys back: some eight kernels
(norms, projections, attention, activation) that each take a few microseconds however little
they read, even replayed from a CUDA graph (the fixed-overhead form canirunthisllm documents,
https://canirunthisllm.com/methodology/). Fitted with :data:`DECODE_EFFICIENCY` on the 15
published single-stream measurements of app/estimates/measurements/decode_measurements.json:
the median of the per-layer times that reproduce each measurement at the factor, the factor
the median at this time (a fixed point; tests/engine/test_serving_speed.py). It was an assumed
20 us; on the 15 measurements the fit moves the median error from 5.9 % to 3.7 % (the largest from
46 % to 40 %), on the six held before from 3.8 % to 3.5 % (the largest from 22 % to 18 %). The
per-case times spread widely (from -73 to +106 us): llama.cpp's small models on an RTX 2080
lose more time per token than their layers explain (sampling and the prompt, which llmfit's
bench counts), vLLM on an RTX 4090 less, so the form is coarse below 3B parameters."""
TP_ALLREDUCE_S: Final = 3.5e-6
"""Latency of one all-reduce of a decode step's hidden state across tensor-parallel GPUs (two
per layer): 3.5 us, the median of NVIDIA's aiconfigurator measurements of the custom
all-reduce on H100 80GB HBM3 at 2 and 4 GPUs for messages of 2,048 to 16,384 fp16 elements,
one to a few decode tokens' hidden state
(app/estimates/measurements/allreduce_measurements.json, 3.2-3.8 us;
tests/engine/test_serving_speed.py). It was an assumed 10 us. NVLink figures: cards that talk
over PCIe (L40S, RTX PRO) take longer, and no published figure for them was found, so there it
remains an assumption."""
PREFILL_MFU: Final = 0.5
"""Model FLOPs utilisation of a prefill (compute-bound, 2 FLOPs per active parameter and
token). Still an assumption (large-batch GEMMs on H100/Blackwell reach 50-70 % of peak): the
published prompt speeds found are llama.cpp's, whose quantised prompt kernels run on int8
tensor cores (an RTX 3080's 3,807 tokens/s on Llama 3.1 8B Q4_K_M is 61 TFLOPS, above its
16-bit peak, dmatora/LLM-inference-speed-benchmarks#12), so they cannot fit a fraction of the
16-bit peak. The vLLM prompt speeds found are of hybrid mixture-of-experts models with 4-bit
weights (noonghunna/club-3090#851: Qwen3.6-35B-A3B, AutoRound INT4, 2 x RTX 5090, 20,879
tokens/s at a 10K prompt, about a third of the 16-bit peak per GPU), whose grouped expert GEMMs
and DeltaNet layers say little of a dense model's; no dense model's time to first token at one
user with its card and prompt length stated was found to fit the fraction on."""

MAX_CONTEXT: Final = 1 << 24
MAX_CONCURRENCY: Final = 65_536
MAX_GPUS: Final = 64
MIN_TOKENS_PER_S: Final = 10.0
"""The default speed floor: decode tokens per second every user must get for a card to count
as serving the load. About reading speed with room to spare (English prose
is read at roughly 4-6 tokens per second), and the pace the chat services' slowest tiers are
held to; below it a chat answer visibly stalls."""
MAX_MIN_TOKENS_PER_S: Final = 10_000
"""The largest floor a job may ask for (no card decodes faster per user)."""


class ServingError(EngineError):
    """A serving job the engine refuses; ``field`` names the job's field."""


@dataclass(frozen=True, slots=True)
class ServingJob:
    """How the customer wants to serve. Defaults: one user at 8,192 tokens on vLLM, bf16."""

    weights: WeightFormat = "bf16"
    kv_cache: KvDtype = "auto"
    context: int = 8192
    concurrency: int = 1
    gpus: int = 1
    runtime: Runtime = "vllm"
    gpu_memory_utilization: float | None = None
    """None: the runtime's default (vLLM 0.9; SGLang its own ``mem_fraction_static``)."""
    max_num_batched_tokens: int | None = None
    """None: vLLM's default for the card's size."""
    max_num_seqs: int | None = None
    """None: vLLM's default for the card's size (what its sampler profile runs over)."""
    min_tokens_per_s: float = MIN_TOKENS_PER_S
    """The speed floor: a card serves the load only if every user decodes at least this many
    tokens per second, and ``max_concurrency`` counts users up to it (0: memory alone)."""

    @property
    def kv_dtype_bytes(self) -> int:
        return KV_DTYPE_BYTES[self.kv_cache]


@dataclass(frozen=True, slots=True)
class ServingGpu:
    """A card as serving needs it: memory as the driver reports it, bandwidth, peak FLOPS."""

    slug: str
    name: str
    total_bytes: int
    compute_capability: str
    memory_bandwidth_gbps: float | None = None
    bf16_tflops: float | None = None
    fp8_tflops: float | None = None
    fp4_tflops: float | None = None
    unified_memory: bool = False


@dataclass(frozen=True, slots=True)
class ServingBreakdown:
    """Bytes on one GPU: what the runtime sets aside and what the requested load needs."""

    weights: int
    activations: int
    cuda_graphs: int
    overhead: int
    kv_cache: int
    total: int


@dataclass(frozen=True, slots=True)
class DecodeSpeed:
    per_request: float
    total: float


@dataclass(frozen=True, slots=True)
class ServingFit:
    gpu: str
    name: str
    usable_bytes: int
    budget_bytes: int
    kv_cache_capacity_bytes: int
    kv_cache_capacity_tokens: int
    max_concurrency: int
    max_context: int
    fits: bool
    decode_tokens_per_s: DecodeSpeed | None
    prefill_tokens_per_s: float | None
    per_gpu_bytes: ServingBreakdown
    max_num_batched_tokens: int
    gpu_memory_utilization: float
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ServingLever:
    gpu: str
    lever: str
    change: dict[str, object]
    max_concurrency: int
    max_context: int


@dataclass(frozen=True, slots=True)
class ServingParams:
    total: int
    active: int


ServingAssumption = tuple[str, dict[str, str | int | float]]


@dataclass(frozen=True, slots=True)
class ServingResult:
    engine_version: str
    model_type: str
    fidelity: str
    """"exact", or "approximate" for a model type no builder knows
    (app/engine/architectures/approximate.py)."""
    runtime: str
    params: ServingParams
    kv_cache_bytes_per_token: int
    kv_cache_bytes_per_request: int
    per_gpu_bytes: ServingBreakdown
    fits: tuple[ServingFit, ...]
    levers: tuple[ServingLever, ...]
    assumptions: tuple[str, ...]
    assumption_items: tuple[ServingAssumption, ...] = field(default=())
    weights: str = "bf16"
    """The weights' format the estimate used."""
    weights_as_published: bool = False
    """True when ``weights`` is the checkpoint's published format, read from its config
    (``serving_weights.published_format``; 16-bit where it names none), not a format asked
    for."""

    def to_dict(self) -> dict[str, object]:
        """The JSON document ``sizer serving`` prints and the API returns."""
        data = plain(self)
        assert isinstance(data, dict)
        del data["assumption_items"]
        return data


# Warnings per card: the JSON carries these English sentences; pages translate by name.
FP8_WEIGHT_ONLY_WARNING: Final = (
    "no FP8 tensor cores before compute capability 8.9: vLLM runs FP8 weights through Marlin "
    "weight-only kernels, saving memory but not compute")
FP4_WEIGHT_ONLY_WARNING: Final = (
    "FP4 tensor cores are Blackwell-only: on this card NVFP4/MXFP4 weights save memory and "
    "bandwidth but run as weight-only FP4 (Marlin), with no FP4 compute")
UNIFIED_WARNING: Final = (
    "unified memory: the operating system shares it; gpu_memory_utilization is capped at 0.85")
BELOW_SPEED_FLOOR_WARNING: Final = (
    "too slow for this load: each user would decode fewer tokens per second than the speed "
    "floor asks")
GRAPH_HEADROOM_WARNING: Final = (
    "the headroom left by gpu_memory_utilization is smaller than the CUDA context and graphs "
    "vLLM captures after the KV cache; start-up may run out of memory (lower the utilisation "
    "or use --enforce-eager)")

SERVING_ASSUMPTION_TEXTS: Final[dict[str, str]] = {
    "approximate": "approximate: model type '%(model_type)s' is not one the engine counts "
    "exactly; it is counted as a dense decoder of the Llama layout from %(fields)s",
    **APPROXIMATE_PART_TEXTS,
    "units": "bytes; GiB = 1024^3 bytes; per GPU",
    "tower": "multimodal checkpoint: its vision tower (%(params)s parameters) is loaded beside "
    "the language model in 16-bit",
    "tower_audio": "multimodal checkpoint: its vision and audio towers (%(params)s parameters, "
    "%(audio)s of them the audio tower's) are loaded beside the language model in 16-bit",
    "vllm": "vLLM %(version)s start-up arithmetic: total x gpu_memory_utilization minus weights, "
    "the profile run's activation peak (max_num_batched_tokens by card size unless given) and "
    "non-torch memory; the rest is the KV cache, in blocks of 16 tokens",
    "vllm_graphs": "CUDA graphs and the CUDA context are captured after the KV cache and live in "
    "the headroom that gpu_memory_utilization leaves (vLLM up to 0.20)",
    "sglang": "SGLang %(version)s: mem_fraction_static of the card holds weights and the KV pool; "
    "the rest is its reserve for activations, CUDA graphs and NCCL",
    "llama_cpp": "llama.cpp: the whole card less the CUDA context; the KV cache is sized for "
    "context x concurrency (n_ctx split over the slots), layers split over the GPUs",
    "weights": "weights %(format)s: only the decoder's linear layers are quantised; embeddings, "
    "lm_head, norms and routers stay 16-bit",
    "kv": "KV cache %(dtype)s: %(bytes)s bytes per token per GPU (key/value heads per GPU "
    "= max(1, heads / GPUs))",
    "mla": "multi-head latent attention: one latent of %(latent)s values per token and layer, "
    "replicated on every GPU",
    "sliding": "%(layers)s sliding-window layers keep at most %(window)s tokens plus the "
    "batched-token budget per request",
    "linear": "%(layers)s linear-attention, Mamba or short-convolution layers keep a fixed state "
    "per request",
    "compressed": "%(layers)s compressed-attention layers also keep one entry per %(rates)s "
    "tokens of a request (DeepSeek-V4's CSA and HCA), and a buffer of the tokens still to "
    "compress",
    "indexer": "%(layers)s layers also keep their sparse-attention indexer's key, %(width)s "
    "values per token, on every GPU (MiniMax-M3's lightning indexer)",
    "tp": "tensor parallel over %(gpus)s GPUs: linear layers and the vocabulary split, norms "
    "and routers replicated",
    "decode": "decode speed: weights the batch touches plus every request's KV cache read once "
    "per step at %(efficiency)s of the card's bandwidth (calibrated on published measurements)",
    "prefill": "prefill speed: 2 FLOPs per active parameter and token at %(mfu)s of the card's "
    "peak in the format's precision",
    "moe": "mixture of experts: decode reads the experts a batch touches",
}
"""The English wording of each serving assumption (the API's and the CLI's)."""


def serving_estimate(shape: ModelShape, layout: KvLayout, job: ServingJob,
                     gpus: Sequence[ServingGpu], *, with_levers: bool = True) -> ServingResult:
    """Hold a serving job against each card (``job.gpus`` of them, tensor parallel).

    A context beyond the model's positions is refused, as fine-tuning refuses such a
    sequence: vLLM refuses a ``max_model_len`` above ``max_position_embeddings`` at start-up
    ("User-specified max_model_len ... is greater than the derived max_model_len",
    ``vllm/config``) unless told to ignore it, and the model was never trained that long."""
    validate(job)
    if shape.max_positions is not None and job.context > shape.max_positions:
        raise ServingError("context", "context_beyond_positions", context=job.context,
                           max_positions=shape.max_positions)
    memo: WeightMemo = {}
    fits = tuple(_fit(shape, layout, job, gpu, memo) for gpu in gpus)
    levers = _levers(shape, layout, job, gpus, fits, memo) if with_levers else ()
    items = assumption_items(shape, layout, job)
    request = _request_bytes(layout, job, _batched_tokens(job, None))
    return ServingResult(
        engine_version=ENGINE_VERSION,
        model_type=shape.model_type,
        fidelity="exact" if shape.approximation is None else "approximate",
        runtime=job.runtime,
        params=ServingParams(total=shape.total_params, active=shape.active_params),
        kv_cache_bytes_per_token=_kv_per_token(layout, job),
        kv_cache_bytes_per_request=request,
        per_gpu_bytes=fits[0].per_gpu_bytes if fits else _breakdown_without_card(shape, job,
                                                                                request),
        fits=fits,
        levers=levers,
        assumptions=tuple(SERVING_ASSUMPTION_TEXTS[key] % values if values
                          else SERVING_ASSUMPTION_TEXTS[key] for key, values in items),
        assumption_items=items,
        weights=job.weights,
    )


def validate(job: ServingJob) -> None:
    """Refuse a job outside the engine's vocabulary or bounds, naming the field."""
    for name, value, allowed in (("weights", job.weights, WEIGHT_FORMATS),
                                 ("kv_cache", job.kv_cache, KV_DTYPES),
                                 ("runtime", job.runtime, RUNTIMES)):
        if value not in allowed:
            raise ServingError(name, "not_one_of", value=repr(value), allowed=", ".join(allowed))
    for name, number, maximum in (("context", job.context, MAX_CONTEXT),
                                  ("concurrency", job.concurrency, MAX_CONCURRENCY),
                                  ("gpus", job.gpus, MAX_GPUS),
                                  ("max_num_batched_tokens", job.max_num_batched_tokens,
                                   MAX_CONTEXT),
                                  ("max_num_seqs", job.max_num_seqs, MAX_CONCURRENCY)):
        if number is None and name in ("max_num_batched_tokens", "max_num_seqs"):
            continue
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ServingError(name, "whole_number")
        if number > maximum:
            raise ServingError(name, "at_most", max=maximum)
    utilization = job.gpu_memory_utilization
    if utilization is not None and not 0 < utilization <= 1:
        raise ServingError("gpu_memory_utilization", "utilization_range")
    floor = job.min_tokens_per_s
    if (isinstance(floor, bool) or not isinstance(floor, int | float) or floor != floor
            or not 0 <= floor <= MAX_MIN_TOKENS_PER_S):
        raise ServingError("min_tokens_per_s", "speed_floor_range",
                           max=MAX_MIN_TOKENS_PER_S)
    if job.runtime == "llama.cpp" and job.weights not in GGUF_FORMATS | {"bf16", "fp16"}:
        raise ServingError("weights", "format_needs_card", format=job.weights,
                           needs="a GGUF file or 16-bit weights on llama.cpp")


def _kv_per_token(layout: KvLayout, job: ServingJob) -> int:
    if job.runtime == "llama.cpp":
        return -(-layout.bytes_per_token(1, job.kv_dtype_bytes) // job.gpus)
    return layout.bytes_per_token(job.gpus, job.kv_dtype_bytes)


def _batched_tokens(job: ServingJob, gpu: ServingGpu | None) -> int:
    if job.max_num_batched_tokens is not None:
        return job.max_num_batched_tokens
    if gpu is not None and gpu.total_bytes >= VLLM_LARGE_CARD_BYTES:
        return VLLM_LARGE_BATCHED_TOKENS
    return VLLM_SMALL_BATCHED_TOKENS


def _max_seqs(job: ServingJob, gpu: ServingGpu) -> int:
    if job.max_num_seqs is not None:
        return job.max_num_seqs
    return VLLM_LARGE_SEQS if gpu.total_bytes >= VLLM_LARGE_CARD_BYTES else VLLM_SMALL_SEQS


def _request_bytes(layout: KvLayout, job: ServingJob, batched: int, context: int | None = None
                   ) -> int:
    tokens = job.context if context is None else context
    if job.runtime == "llama.cpp":
        whole = layout.request_bytes(tokens, 1, job.kv_dtype_bytes, batched, padded=False)
        return -(-whole // job.gpus)
    return layout.request_bytes(tokens, job.gpus, job.kv_dtype_bytes, batched,
                                padded=job.runtime == "vllm")


def _pool_per_token(layout: KvLayout, job: ServingJob) -> int:
    """One token of the pool: vLLM counts a hybrid's padding layers (``grouped_layers``)."""
    if job.runtime == "vllm":
        return layout.pool_bytes_per_token(job.gpus, job.kv_dtype_bytes)
    return _kv_per_token(layout, job)


def forward_peak_bytes(shape: ModelShape, tokens: int, tp: int) -> int:
    """The profile run's forward peak on one GPU for ``tokens`` batched tokens (16-bit)."""
    hidden = 3 * shape.hidden_size
    if shape.is_moe:
        expert = shape.experts_per_token * (3 * shape.moe_intermediate_size // tp
                                            + shape.hidden_size)
        return 2 * tokens * (expert + hidden)
    return 2 * tokens * (FORWARD_ELEMENTS_PER_TOKEN_FACTOR * shape.intermediate_size // tp
                         + hidden)


def vllm_activation_bytes(shape: ModelShape, tokens: int, seqs: int, tp: int) -> int:
    """vLLM's profile-run peak: the larger of the forward over ``tokens`` batched tokens and the
    sampler over ``seqs`` rows of the vocabulary."""
    sampler = seqs * shape.vocab_size * SAMPLER_BYTES_PER_LOGIT
    return max(forward_peak_bytes(shape, tokens, tp), sampler)


@dataclass(frozen=True, slots=True)
class _Budget:
    utilization: float
    budget: int
    weights: int
    activations: int
    graphs: int
    overhead: int
    available: int
    batched: int
    headroom_short: bool


WeightMemo = dict[tuple[str, int], int]
"""Weight bytes per (format, GPUs) within one estimate: the cards and levers ask again."""


def _weights(shape: ModelShape, job: ServingJob, memo: WeightMemo) -> int:
    key = (job.weights, job.gpus)
    if key not in memo:
        memo[key] = weight_bytes(shape, job.weights, job.gpus).total
    return memo[key]


def _budget(shape: ModelShape, job: ServingJob, gpu: ServingGpu, memo: WeightMemo) -> _Budget:
    weights = _weights(shape, job, memo)
    total = gpu.total_bytes
    batched = _batched_tokens(job, gpu)
    if job.runtime == "sglang":
        prefill = SGLANG_LARGE_PREFILL if total >= SGLANG_SMALL_CARD_BYTES else SGLANG_SMALL_PREFILL
        activations = prefill * SGLANG_RESERVE_PER_PREFILL_TOKEN
        overhead = SGLANG_BASE_RESERVE + job.gpus * GIB // 8
        reserve = activations + overhead + CUDA_GRAPH_BYTES
        if total > SGLANG_LARGE_CARD_BYTES:
            reserve = max(reserve, SGLANG_LARGE_CARD_FLOOR)
        fraction = job.gpu_memory_utilization or (total - reserve) / total
        if gpu.unified_memory:
            fraction = min(fraction, UNIFIED_UTILIZATION_CAP)
        budget = int(total * fraction)
        return _Budget(fraction, budget, weights, activations, CUDA_GRAPH_BYTES, overhead,
                       budget - weights, prefill, False)
    if job.runtime == "llama.cpp":
        compute = LLAMA_CPP_UBATCH * 4 * (shape.vocab_size
                                          + LLAMA_CPP_COMPUTE_ELEMENTS_PER_TOKEN_HIDDEN
                                          * shape.hidden_size)
        fraction = job.gpu_memory_utilization or 1.0
        if gpu.unified_memory:
            fraction = min(fraction, UNIFIED_UTILIZATION_CAP)
        budget = int(total * fraction)
        return _Budget(fraction, budget, weights, compute, 0, CUDA_CONTEXT_BYTES,
                       budget - weights - compute - CUDA_CONTEXT_BYTES, LLAMA_CPP_UBATCH, False)
    utilization = job.gpu_memory_utilization or VLLM_DEFAULT_UTILIZATION
    if gpu.unified_memory:
        utilization = min(utilization, UNIFIED_UTILIZATION_CAP)
    budget = int(total * utilization)
    activations = vllm_activation_bytes(shape, batched, _max_seqs(job, gpu), job.gpus)
    non_torch = NON_TORCH_BYTES + (NCCL_BYTES if job.gpus > 1 else 0)
    headroom = total - budget
    return _Budget(utilization, budget, weights, activations, CUDA_GRAPH_BYTES,
                   non_torch + CUDA_CONTEXT_BYTES,
                   budget - weights - activations - non_torch, batched,
                   headroom < CUDA_GRAPH_BYTES + CUDA_CONTEXT_BYTES)


def _fit(shape: ModelShape, layout: KvLayout, job: ServingJob, gpu: ServingGpu,
         memo: WeightMemo) -> ServingFit:
    """The job on one card."""
    b = _budget(shape, job, gpu, memo)
    capacity = max(0, b.available)
    page = _pool_per_token(layout, job) * BLOCK_TOKENS
    tokens = capacity // page * BLOCK_TOKENS if page else 0
    request = _request_bytes(layout, job, b.batched)
    need = request * job.concurrency
    by_memory = min(capacity // request if request else MAX_CONCURRENCY, MAX_CONCURRENCY)
    max_concurrency = _users_at_floor(shape, layout, job, gpu, b.weights, by_memory)
    limit = shape.max_positions or MAX_CONTEXT
    max_context = _longest_context(layout, job, capacity, b.batched, max(limit, job.context))
    speed = decode_speed(shape, layout, job, gpu, weights_total=b.weights)
    fits = (b.available > 0 and need <= capacity
            and (speed is None or speed.per_request >= job.min_tokens_per_s))
    breakdown = ServingBreakdown(
        weights=b.weights, activations=b.activations, cuda_graphs=b.graphs, overhead=b.overhead,
        kv_cache=need, total=b.weights + b.activations + b.graphs + b.overhead + need)
    return ServingFit(
        gpu=gpu.slug, name=gpu.name, usable_bytes=gpu.total_bytes, budget_bytes=b.budget,
        kv_cache_capacity_bytes=capacity, kv_cache_capacity_tokens=tokens,
        max_concurrency=max_concurrency, max_context=max_context,
        fits=fits,
        decode_tokens_per_s=speed,
        prefill_tokens_per_s=prefill_speed(shape, job, gpu),
        per_gpu_bytes=breakdown,
        max_num_batched_tokens=b.batched, gpu_memory_utilization=round(b.utilization, 4),
        warnings=_card_warnings(job, gpu, b, shape) + (
            (BELOW_SPEED_FLOOR_WARNING,) if speed is not None
            and speed.per_request < job.min_tokens_per_s else ()),
    )


def _users_at_floor(shape: ModelShape, layout: KvLayout, job: ServingJob, gpu: ServingGpu,
                    weights_total: int, by_memory: int) -> int:
    """The most users (up to ``by_memory``, what the KV pool holds) that each still decode at
    ``job.min_tokens_per_s``: per-user speed falls as users are added (each step reads more
    KV cache and more experts), so the answer is found by bisection. A card of unknown
    bandwidth, or a floor of 0, counts memory alone."""
    if job.min_tokens_per_s <= 0 or not gpu.memory_bandwidth_gbps or by_memory < 1:
        return by_memory

    def fast_enough(users: int) -> bool:
        speed = decode_speed(shape, layout, replace(job, concurrency=users), gpu,
                             weights_total=weights_total)
        return speed is None or speed.per_request >= job.min_tokens_per_s

    if fast_enough(by_memory):
        return by_memory
    if not fast_enough(1):
        return 0
    return last_true(1, by_memory, fast_enough)


def _longest_context(layout: KvLayout, job: ServingJob, capacity: int, batched: int,
                     limit: int) -> int:
    if job.runtime == "llama.cpp":
        return layout.longest_context(capacity * job.gpus, job.concurrency, 1,
                                      job.kv_dtype_bytes, batched, limit, padded=False)
    return layout.longest_context(capacity, job.concurrency, job.gpus, job.kv_dtype_bytes,
                                  batched, limit, padded=job.runtime == "vllm")


def _card_warnings(job: ServingJob, gpu: ServingGpu, b: _Budget, shape: ModelShape
                   ) -> tuple[str, ...]:
    cc = parse_compute_capability(gpu.compute_capability)
    warnings: list[str] = []
    if job.weights == "fp8" and cc < FP8_MIN_CC:
        warnings.append(FP8_WEIGHT_ONLY_WARNING)
    if job.weights in ("nvfp4", "mxfp4") and cc < BLACKWELL_MIN_CC:
        warnings.append(FP4_WEIGHT_ONLY_WARNING)
    if gpu.unified_memory:
        warnings.append(UNIFIED_WARNING)
    if job.runtime == "vllm" and b.headroom_short:
        warnings.append(GRAPH_HEADROOM_WARNING)
    return tuple(warnings)


@dataclass(frozen=True, slots=True)
class DecodeStep:
    """What one decode step costs on each GPU: bytes read and the fixed time beside them."""

    bytes_read: int
    fixed_seconds: float

    def seconds(self, bandwidth_gbps: float, efficiency: float = DECODE_EFFICIENCY) -> float:
        return self.bytes_read / (bandwidth_gbps * 1e9 * efficiency) + self.fixed_seconds


def decode_step(shape: ModelShape, layout: KvLayout, job: ServingJob, gpu: ServingGpu, *,
                weights_total: int | None = None) -> DecodeStep:
    """One step at ``job.concurrency`` requests of ``job.context`` tokens: the weights the batch
    touches and each request's KV cache once, on every GPU in parallel, plus the per-layer
    fixed time (and the all-reduces under tensor parallelism)."""
    batch = job.concurrency
    weights = active_weight_bytes(shape, job.weights, job.gpus, batch, total=weights_total)
    kv = batch * _request_bytes(layout, job, _batched_tokens(job, gpu))
    fixed = shape.num_layers * (DECODE_LAYER_OVERHEAD_S
                                + (2 * TP_ALLREDUCE_S if job.gpus > 1 else 0))
    return DecodeStep(bytes_read=weights + kv, fixed_seconds=fixed)


def decode_speed(shape: ModelShape, layout: KvLayout, job: ServingJob, gpu: ServingGpu, *,
                 weights_total: int | None = None) -> DecodeSpeed | None:
    """Tokens per second per request and in total at ``job.concurrency`` requests."""
    if not gpu.memory_bandwidth_gbps:
        return None
    step = decode_step(shape, layout, job, gpu, weights_total=weights_total)
    per_request = 1 / step.seconds(gpu.memory_bandwidth_gbps)
    return DecodeSpeed(per_request=round(per_request, 2),
                       total=round(per_request * job.concurrency, 2))


def compute_tflops(job: ServingJob, gpu: ServingGpu) -> float | None:
    """The peak the format's matrix multiplies run at on this card: FP4 only on Blackwell, FP8
    from compute capability 8.9, otherwise 16-bit (weight-only kernels, AWQ/GPTQ/GGUF and FP4
    through Marlin before Blackwell, dequantise to 16-bit)."""
    cc = parse_compute_capability(gpu.compute_capability)
    if job.weights in ("nvfp4", "mxfp4") and cc >= BLACKWELL_MIN_CC and gpu.fp4_tflops:
        return gpu.fp4_tflops
    if job.weights == "fp8" and cc >= FP8_MIN_CC and gpu.fp8_tflops:
        return gpu.fp8_tflops
    return gpu.bf16_tflops


def prefill_speed(shape: ModelShape, job: ServingJob, gpu: ServingGpu) -> float | None:
    """Prompt tokens per second over the job's GPUs, compute-bound."""
    tflops = compute_tflops(job, gpu)
    if not tflops:
        return None
    return round(job.gpus * tflops * 1e12 * PREFILL_MFU / (2 * shape.active_params), 1)


def _breakdown_without_card(shape: ModelShape, job: ServingJob, request: int
                            ) -> ServingBreakdown:
    weights = weight_bytes(shape, job.weights, job.gpus).total
    kv = request * job.concurrency
    return ServingBreakdown(weights, 0, 0, 0, kv, weights + kv)


def _lever_jobs(shape: ModelShape, job: ServingJob, gpu: ServingGpu
                ) -> list[tuple[str, dict[str, object]]]:
    options: list[tuple[str, dict[str, object]]] = []
    if job.kv_cache != "fp8":
        options.append(("fp8_kv_cache", {"kv_cache": "fp8"}))
    if job.weights not in FOUR_BIT_FORMATS:
        blackwell = parse_compute_capability(gpu.compute_capability) >= BLACKWELL_MIN_CC
        if job.runtime == "llama.cpp":
            options.append(("four_bit_weights", {"weights": "gguf-q4_k_m"}))
        else:
            options.append(("four_bit_weights", {"weights": "nvfp4" if blackwell else "awq"}))
    if job.runtime != "llama.cpp" and job.gpus < 8:
        options.append(("more_gpus", {"gpus": min(8, job.gpus * 2)}))
    if job.context > 2 * BLOCK_TOKENS:
        options.append(("shorter_context", {"context": job.context // 2}))
    return options


def _levers(shape: ModelShape, layout: KvLayout, job: ServingJob, gpus: Sequence[ServingGpu],
            fits: Sequence[ServingFit], memo: WeightMemo) -> tuple[ServingLever, ...]:
    """For each card the job does not fit: each change that makes it fit, alone."""
    levers: list[ServingLever] = []
    for gpu, fit in zip(gpus, fits, strict=True):
        if fit.fits:
            continue
        for name, change in _lever_jobs(shape, job, gpu):
            changed = replace(job, **change)  # type: ignore[arg-type]
            b = _budget(shape, changed, gpu, memo)
            capacity = max(0, b.available)
            request = _request_bytes(layout, changed, b.batched)
            if b.available <= 0 or request * changed.concurrency > capacity:
                continue
            speed = decode_speed(shape, layout, changed, gpu, weights_total=b.weights)
            if speed is not None and speed.per_request < changed.min_tokens_per_s:
                continue
            limit = max(shape.max_positions or MAX_CONTEXT, changed.context)
            levers.append(ServingLever(
                gpu.slug, name, change, min(capacity // request, MAX_CONCURRENCY),
                _longest_context(layout, changed, capacity, b.batched, limit)))
    return tuple(levers)


def assumption_items(shape: ModelShape, layout: KvLayout, job: ServingJob
                     ) -> tuple[ServingAssumption, ...]:
    """What the figures take for granted, as keys and values a page can translate."""
    items: list[ServingAssumption] = []
    if shape.approximation is not None:
        items.append(("approximate", {"model_type": shape.approximation.model_type,
                                      "fields": ", ".join(shape.approximation.fields)}))
        items += [(f"approximate_{part}", {}) for part in shape.approximation.missing]
    items.append(("units", {}))
    if shape.audio_tower_params:
        items.append(("tower_audio", {"params": shape.tower_params,
                                      "audio": shape.audio_tower_params}))
    elif shape.tower_params:
        items.append(("tower", {"params": shape.tower_params}))
    if job.runtime == "vllm":
        items += [("vllm", {"version": VLLM_VERSION}), ("vllm_graphs", {})]
    elif job.runtime == "sglang":
        items.append(("sglang", {"version": SGLANG_VERSION}))
    else:
        items.append(("llama_cpp", {}))
    items.append(("weights", {"format": job.weights}))
    items.append(("kv", {"dtype": "bf16" if job.kv_cache == "auto" else job.kv_cache,
                         "bytes": _kv_per_token(layout, job)}))
    if layout.is_mla:
        items.append(("mla", {"latent": layout.mla_latent}))
    if layout.sliding_layers:
        items.append(("sliding", {"layers": layout.sliding_layers, "window": layout.window}))
    if layout.linear_layers:
        items.append(("linear", {"layers": layout.linear_layers}))
    if any(kind.layers for kind in layout.compressed):
        items.append(("compressed", {
            "layers": sum(kind.layers for kind in layout.compressed),
            "rates": "/".join(str(kind.rate) for kind in layout.compressed if kind.layers)}))
    if layout.indexer_layers:
        items.append(("indexer", {"layers": layout.indexer_layers, "width": layout.indexer_dim}))
    if job.gpus > 1:
        items.append(("tp", {"gpus": job.gpus}))
    if shape.is_moe:
        items.append(("moe", {}))
    items.append(("decode", {"efficiency": f"{DECODE_EFFICIENCY:.0%}"}))
    items.append(("prefill", {"mfu": f"{PREFILL_MFU:.0%}"}))
    return tuple(items)
