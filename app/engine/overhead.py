"""Memory a training process uses beyond the tensors it keeps alive.

Tensor trackers (MemTracker, ``torch.cuda.max_memory_allocated``) do not see these; a card must
hold them all the same. Out-of-memory happens at what the card holds, not at the live-tensor
peak:

    allocated  = the live-tensor peak of the step (``max_memory_allocated``; the engine's
                 ``allocated_bytes``)
    reserved   = allocated + the caching allocator's reserve (``max_memory_reserved``; the
                 engine's ``reserved_bytes``)
    card       = reserved + CUDA context (+ NCCL buffers on more than one GPU): what nvidia-smi
                 shows, and what the verdict holds against the card's usable memory.

**The allocator's reserve.** PyTorch's CUDA caching allocator
(``c10/cuda/CUDACachingAllocator.cpp``; PyTorch docs, "CUDA semantics", "Memory management"
and "Optimizing memory usage with PYTORCH_CUDA_ALLOC_CONF") rounds every request up to a
multiple of 512 bytes (``kMinBlockSize``), serves requests of at most 1 MiB (``kSmallSize``)
from 2 MiB segments (``kSmallBuffer``), requests under 10 MiB (``kMinLargeAlloc``) from 20 MiB
segments (``kLargeBuffer``), and rounds larger ``cudaMalloc`` segments up to 2 MiB
(``kRoundLarge``): for a training step's tensors that rounding is well under 1 %. A request
takes the smallest cached free block of its pool that is large enough (best fit, split when
larger); a block is never merged with a block of another segment, and segments are returned to
the driver only by ``empty_cache()`` or an out-of-memory retry, so ``max_memory_reserved`` is
every segment the run ever needed. Reserved exceeds allocated by the cached blocks that were
freed before the peak and that the peak's requests cannot use (engine 1.15.0, measured on the
15 H200 steps of ``tests/fixtures/h200_steps/h200-steps.json``; docs/accuracy.md, "Reserved on a
real GPU"):

* **the bf16 logits.** Hugging Face's causal-LM loss casts the bf16 logits to fp32
  (``ForCausalLMLoss``: ``logits.float()``); the Trainer drops the model's output, bf16 logits
  included, before ``backward()``. The loss backward then asks for fp32 blocks of twice that
  size (the gradients of the log-softmax, 4 bytes per token per vocabulary entry), which the
  freed bf16 block cannot serve: :data:`STRANDED_LOGITS_BYTES_PER_VOCAB` per token per entry
  stays cached, unused, at the loss head's peak. A chunked loss strands one chunk's.
* **the layers' blocks.** The segments that one decoder layer's tensors were carved from (its
  activations and the gradients of the layer being differentiated) are too small for the loss
  head's vocabulary-wide blocks and stay cached beside them:
  :data:`LAYER_WORKSET_SEGMENTS` times one layer's activations (default allocator), at the
  moments whose requests are the loss head's and the forward's (the backward's layers and the
  optimizer step split the cached blocks: ``fit.PhaseTerms.strands``). A chunked or fused loss
  asks for blocks smaller than a layer's, which those segments serve: none stay beside it. Measured:
  (reserved - allocated - the logits block) / one layer's activations on the 12 steps of the
  default allocator whose peak is the loss head: 0.53-1.45, median 0.91; the constant is the
  top of that range rounded up, so that no calibration step is under-sized.
* ``expandable_segments:True`` (``PYTORCH_CUDA_ALLOC_CONF``; set by Unsloth, axolotl and
  llm-foundry) maps 2 MiB pages into one growing segment per stream, so a request at the
  segment's end grows it through the free blocks there: the layers' blocks are reused and only
  the logits block, freed in the middle, stays: :data:`EXPANDABLE_LAYER_WORKSET_SEGMENTS`
  (measured 0.16 on Llama 3.1 8B LoRA at 32k tokens, reserved 85.9 GB against 95.9 GB without;
  a quarter is kept as the margin).
* **a loss head in segments of its own.** A full fine-tune creates its gradients in the first
  backward and AdamW's states at the first optimizer step out of the blocks the loss head
  freed; the next step's loss head then needs new segments for all of its blocks, so reserved
  is at least the states alive between steps plus the loss head's backward bytes
  (``floor``; full amp Llama 3.2 3B at b2 x 4096: reserved rose by exactly 12 bytes per token
  per vocabulary entry from the first step to the second, 52.1 -> 64.7 GB, with or without
  expandable segments).
* **the second step's loss head** (``ReserveTerms.second_step``). The floor takes the states
  as the first step's reserve; where the first step's loss head peaked above them (a small
  model: weights, checkpoints and a loss head over a 128k vocabulary, no optimizer states
  yet) its segments stay reserved, and the second step's loss head comes on top of them.
  The loss head asks for :data:`LOSS_HEAD_SEGMENTS_BYTES_PER_VOCAB` (2, 4, 4, 4 bytes per
  token per entry: the bf16 logits, ``logits.float()``, the log-softmax's output, and in the
  backward the log-softmax's input gradient; the loss's gradient of the log-softmax output
  takes the freed copy's block). The gradients and optimizer states the first step creates
  after its loss head take the smallest cached blocks that fit (best fit over the large
  pool, blocks split, never merged across segments): the other cached blocks first, then the
  loss head's from the smallest, and each block they reach into is lost to the second loss
  head whole. Which blocks that is jumps with the tokens, and a total that falls as the batch
  grows would mislead the searches, so the engine takes a bound that grows with them: new
  segments for no more than the whole head, than the states plus a whole head plus one (the
  largest) block beyond the first step's reserve, and than the kept tensors plus that block.
  Measured on the seven H200 full fine-tunes with checkpointing and fused AdamW, the rise
  from the first step to the second was 4 (Llama 3.1 8B), 12, 12 and 12 (Llama 3.2 1B and
  3B in amp), 14, 4 and 4 bytes per token per entry; the bound gives 14, 14, 14, 14, 14,
  5.5 and 4.7: never fewer, up to 10 more (the blocks ``zero_grad(set_to_none=True)`` frees
  before the second forward are not followed).
* runs sharded by PyTorch FSDP keep the earlier fit: FSDP gathers layers on its own CUDA
  stream, and a block cached in one stream's pool is not reused by another. The same
  fms-acceleration A100-80GB benchmark's 22 two-GPU FSDP runs, Answer.AI's two FSDP LoRA runs
  (fsdp_qlora ``benchmarks_03_2024.md``) and the three of llama-recipes pull request 41 give
  (nvidia-smi - max allocated - context) / (max allocated - allocated after training) a median
  of 0.38 (0.22-2.5): :data:`FSDP_ALLOCATOR_RESERVE_FRACTION`, for ``sharding_impl="fsdp"`` on
  more than one GPU, in place of the stranded blocks (the fraction was fitted on the whole
  reserve); the floor holds there too.

The fraction that 18 single-GPU runs of that benchmark imply without FSDP (median 0.255,
:data:`ALLOCATOR_RESERVE_FRACTION`, ``tools/calibrate/external/reserved.json``) was the engine's
reserve until 1.14.0; it over-sized every H200 step without checkpointing by 11-16 % (its
share of the saved activations is no block that stays free) and under-sized long sequences by
5 %, so it is kept only as the published cross-check ``tools/calibrate/external/reserved.py``
reports.

**The CUDA context.** What the device holds outside the caching allocator (the CUDA context,
cuBLAS/cuBLASLt workspaces, the kernel images PyTorch and bitsandbytes load), measured as
total - free - reserved by ``torch.cuda.mem_get_info``. It depends on the CUDA and PyTorch
versions, above all on whether kernels are loaded lazily, when first used, or all at start-up
(:data:`CUDA_CONTEXTS`, one row per stack, each with the card it was seen on and its source):

* CUDA 11.7 introduced lazy module loading (``CUDA_MODULE_LOADING=LAZY``), off by default;
  CUDA 12.2 made it the default on Linux, 12.3 on Windows (NVIDIA, CUDA C++ Programming
  Guide, "Lazy Loading", "Select Lazy Loading Changes by CUDA Version"). Libraries built with
  an older CUDA runtime load all their modules eagerly whatever the variable says.
* PyTorch sets ``CUDA_MODULE_LOADING=LAZY`` itself when the user has not set it since 1.13
  (``maybe_set_cuda_module_loading("LAZY")`` in ``aten/src/ATen/cuda/detail/CUDAHooks.cpp``,
  pytorch/pytorch pull request 86509 to the 1.13 release branch, merged 2022-10-07; 1.13.0
  was released 2022-10-28). So every PyTorch from 1.13 on a CUDA 11.7+ build loads lazily.
  The pull request measured ``total - free`` after one small tensor: 287,047,680 bytes lazy,
  666,632,192 bytes with ``CUDA_MODULE_LOADING=DEFAULT`` (eager on CUDA 11.7-12.1), card
  not stated (rows ``lazy-bare`` and ``eager-bare``).
* Before CUDA 11.7 every kernel was loaded into the context with the library, "which took
  >1000MB" (PyTorch's ptrblck, pytorch/pytorch issue 107667, 2023-08-28; the same maintainer
  gives about 400 MB for the lazy context with CUDA 11.7+ in issue 109888): row ``eager-cuda``.
* ``current``: 685-777 MiB on the H200 with PyTorch 2.11.0 and CUDA 13.0 (driver 580; 685 MiB
  before the first case, 767-777 MiB once cuBLAS and bitsandbytes were loaded), over the 15
  steps of ``tests/fixtures/h200_steps/h200-steps.json``: the largest rounded up to 10 MiB.
  This is PyTorch's current release, the stack a customer installs today, and the row the
  engine sizes with: :data:`CUDA_CONTEXT_BYTES`. A training process holds more than the bare
  rows above (cuBLAS workspaces, the kernels a step loads), so they are not added to it.
* ``published-runs``: the fms-acceleration A100-80GB benchmark whose nvidia-smi figures
  ``tools/calibrate/external/reserved.py`` takes the context off (its
  ``scripts/benchmarks/refs/requirements.txt``, commit 0aab2c6: PyTorch 2.4.1 with the CUDA
  12.1 wheels, so lazy loading): 1 GiB, the top of the 0.3-1 GiB
  that the project's activation findings give for context and NCCL buffers ("Not covered by
  tensor trackers"); no source measured that run's context itself.

A driver or library that loads more moves the figure, not the shape of the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.engine.fit import ReserveTerms

GIB = 1024**3
MIB = 1024**2


@dataclass(frozen=True, slots=True)
class CudaContext:
    """What the device held outside the caching allocator on one software stack (module
    docstring): the figure, the stack, the card it was seen on, what it covers, its source."""

    key: str
    bytes: int
    pytorch: str
    """The PyTorch release(s); empty where any release on that CUDA behaves alike."""
    cuda: str
    loading: str
    """``lazy`` or ``eager`` kernel loading (``CUDA_MODULE_LOADING``)."""
    card: str
    """The card the figure was seen on; empty where the source does not say."""
    whole_process: bool
    """True: a training process (context, cuBLAS workspaces, the kernels a step loads);
    False: the bare context after one small tensor."""
    source: str

    @property
    def mib(self) -> int:
        """The figure in whole MiB, as the sources and /how-we-calculate state it."""
        return round(self.bytes / MIB)


CURRENT_CONTEXT = "current"
"""The row the engine sizes with: the stack a customer installs today."""
PUBLISHED_RUNS_CONTEXT = "published-runs"
"""The row tools/calibrate/external/reserved.py takes off the published nvidia-smi figures."""
CUDA_CONTEXTS: tuple[CudaContext, ...] = (
    CudaContext(CURRENT_CONTEXT, 780 * MIB, "2.11", "13.0", "lazy", "H200", True,
                "tests/fixtures/h200_steps/h200-steps.json (685-777 MiB over 15 steps)"),
    CudaContext("lazy-bare", 287_047_680, "1.13", "11.7+", "lazy", "", False,
                "pytorch/pytorch pull request 86509 (2022-10-07)"),
    CudaContext("eager-bare", 666_632_192, "< 1.13", "11.7-12.1", "eager", "", False,
                "pytorch/pytorch pull request 86509 (2022-10-07)"),
    CudaContext("eager-cuda", 1000 * MIB, "", "< 11.7", "eager", "", False,
                "pytorch/pytorch issue 107667 (2023-08-28: \">1000MB\")"),
    CudaContext(PUBLISHED_RUNS_CONTEXT, GIB, "2.4.1", "12.1", "lazy", "A100-80GB", True,
                "activation-findings.md, \"Not covered by tensor trackers\" (0.3-1 GiB, "
                "the top)"),
)
"""The CUDA context by PyTorch and CUDA version (module docstring)."""


def cuda_context(key: str = CURRENT_CONTEXT) -> CudaContext:
    """The row of :data:`CUDA_CONTEXTS` named ``key`` (the current stack's by default)."""
    return next(row for row in CUDA_CONTEXTS if row.key == key)


CUDA_CONTEXT_BYTES = cuda_context().bytes
"""The context the engine adds per GPU: the current stack's row."""
CUDA_CONTEXT_STACK = f"PyTorch {cuda_context().pytorch}, CUDA {cuda_context().cuda}"
"""The software the context was measured with (what the pages say it holds for)."""

# NCCL communicator buffers for data-parallel training on more than one GPU (NCCL's default
# NCCL_BUFFSIZE of 4 MiB per channel and peer, for each protocol). ZeRO-3's and FSDP's own
# gathered layers and buckets are counted apart, from their defaults (sharding.py).
NCCL_BUFFER_BYTES = GIB // 2

# The blocks the caching allocator keeps beyond the live-tensor peak (module docstring).
STRANDED_LOGITS_BYTES_PER_VOCAB = 2
"""The bf16 logits, freed before the loss backward asks for fp32 blocks (per token per entry)."""
LAYER_WORKSET_SEGMENTS = 1.5
"""One layer's activations' worth of cached segments, default allocator (measured 0.53-1.45)."""
EXPANDABLE_LAYER_WORKSET_SEGMENTS = 0.25
"""The same with expandable segments (measured 0.16 on one step)."""
FSDP_ALLOCATOR_RESERVE_FRACTION = 0.38
"""FSDP's per-stream pools, a fraction of the peak's per-step tensors (fitted on 27 runs)."""
ALLOCATOR_RESERVE_FRACTION = 0.255
"""The published single-GPU runs' median fraction: a cross-check, not used by the engine."""
LOSS_HEAD_SEGMENTS_BYTES_PER_VOCAB = (2, 4, 4, 4)
"""The loss head's blocks in the order it asks for them, bytes per token per vocabulary entry:
the bf16 logits, their fp32 copy, the fp32 log-softmax, and in the backward the log-softmax's
input gradient (the loss's gradient of the log-softmax takes the copy's freed block)."""


def fixed_overhead_bytes(gpus: int) -> int:
    """Context and communication buffers: per GPU, independent of the job's size."""
    return CUDA_CONTEXT_BYTES + (NCCL_BUFFER_BYTES if gpus > 1 else 0)


def layer_segments(*, expandable_segments: bool) -> float:
    """How many layers' activations of cached segments the peak cannot reuse."""
    return EXPANDABLE_LAYER_WORKSET_SEGMENTS if expandable_segments else LAYER_WORKSET_SEGMENTS


def loss_head_segments(vocab_size: int, *, extra_per_token: int = 0) -> tuple[int, ...]:
    """The unchunked loss head's blocks per token in request order (module docstring, "the
    second step's loss head"); ``extra_per_token``: a block of its own beside them (Gemma 2's
    soft-capped logits)."""
    blocks = tuple(b * vocab_size for b in LOSS_HEAD_SEGMENTS_BYTES_PER_VOCAB)
    return (*blocks, extra_per_token) if extra_per_token else blocks


def reserve_terms(*, logits_per_token: int, layer_per_token: int, layer_per_token_seq: int,
                  states_bytes: int, loss_head_per_token: int, expandable_segments: bool,
                  fsdp: bool = False, first_step_absent: int = 0,
                  first_step_created: int = 0,
                  head_blocks: tuple[int, ...] = ()) -> ReserveTerms:
    """The caching allocator's reserve for a step (module docstring).

    ``logits_per_token``: the bf16 logits' bytes per token (0 where no full logits exist);
    ``layer_per_token``/``layer_per_token_seq``: one layer's activations; ``states_bytes`` and
    ``loss_head_per_token``: the floor (states between steps, the loss backward's bytes per
    token); ``first_step_absent``, ``first_step_created`` and ``head_blocks``: the second
    step's loss head (the optimizer states the first step's loss head ran without, what the
    first step creates after its loss head and keeps, the loss head's blocks per token in
    request order); ``fsdp``: sharded by PyTorch FSDP on more than one GPU."""
    if fsdp and not expandable_segments:
        # The published FSDP runs' fraction already holds the stranded blocks.
        return ReserveTerms(fraction=FSDP_ALLOCATOR_RESERVE_FRACTION,
                            floor_static=states_bytes, floor_per_token=loss_head_per_token,
                            first_step_absent=first_step_absent,
                            first_step_created=first_step_created, head_blocks=head_blocks)
    share = layer_segments(expandable_segments=expandable_segments)
    return ReserveTerms(per_token=logits_per_token + math.ceil(share * layer_per_token),
                        per_token_seq=math.ceil(share * layer_per_token_seq),
                        floor_static=states_bytes, floor_per_token=loss_head_per_token,
                        first_step_absent=first_step_absent,
                        first_step_created=first_step_created, head_blocks=head_blocks)


def reserve_bytes(dynamic_bytes: int, fraction: float) -> int:
    """A reserve of ``fraction`` on ``dynamic_bytes`` of per-step tensors (the published
    runs' cross-check, tools/calibrate/external/reserved.py)."""
    return math.ceil(dynamic_bytes * fraction)


def reserve_fraction(*, expandable_segments: bool, fsdp: bool = False) -> float:
    """The fraction the published runs imply (the cross-check above); the engine's reserve is
    :func:`reserve_terms`."""
    del expandable_segments
    return FSDP_ALLOCATOR_RESERVE_FRACTION if fsdp else ALLOCATOR_RESERVE_FRACTION
