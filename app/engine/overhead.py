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
(``kRoundLarge``). That rounding bounds the waste of one allocation by 2 MiB: for the few
thousand tensors of a training step it is well under 1 % of the step's memory. What makes
reserved exceed allocated is fragmentation: a freed block stays cached in its segment (and in
its stream's pool), a larger request that no free block can serve gets a new segment, and the
segments of the biggest step stay reserved. It grows with the tensors allocated and freed in
each step (activations, gradients, loss head, dequantised and gathered weights), not with the
weights and optimizer states allocated once, so the engine models it as a fraction of the
per-step tensors at the peak, fitted on published runs that report both counters for the same
step (``tools/calibrate/external/reserved.json``; docs/accuracy.md, "Reserved against
allocated"):

* expandable segments off (PyTorch's default, the Hugging Face Trainer's): 18 single-GPU
  runs of foundation-model-stack/fms-acceleration's A100-80GB benchmark (Mistral 7B,
  Mixtral 8x7B, Llama 2 70B; full, LoRA, QLoRA, GPTQ-LoRA; micro-batch 4 and 8) give
  (nvidia-smi − max allocated − context) / (max allocated − allocated after training) from
  0.13 to 0.41, median 0.255: :data:`ALLOCATOR_RESERVE_FRACTION`.
* runs sharded by PyTorch FSDP reserve more: the same benchmark's 22 two-GPU FSDP runs,
  Answer.AI's two FSDP LoRA runs (fsdp_qlora ``benchmarks_03_2024.md``) and the three of
  llama-recipes pull request 41 (Llama 2 7B LoRA on 4 GPUs) give a median of 0.38 (0.22-2.5;
  FSDP gathers layers on its own CUDA stream, and a block cached in one stream's pool is not
  reused by another): :data:`FSDP_ALLOCATOR_RESERVE_FRACTION`, for ``sharding_impl="fsdp"``
  on more than one GPU. DeepSpeed ZeRO-3 allocates its buckets once and keeps the default.
* ``expandable_segments:True`` (``PYTORCH_CUDA_ALLOC_CONF``; set by Unsloth, axolotl and
  llm-foundry): segments grow by 2 MiB pages instead of new ``cudaMalloc`` calls, which the
  PyTorch docs describe as reducing fragmentation (torchtune issue 1185 reports a QLoRA peak of
  16.39 GiB falling to 10.83 GiB with it). No published run we found reports both counters
  with it on, so :data:`EXPANDABLE_SEGMENTS_RESERVE_FRACTION` keeps the earlier, unfitted
  midpoint of the 5-15 % observed in activation-findings.md.
"""

from __future__ import annotations

import math

GIB = 1024**3

# CUDA context, cuBLAS/cuBLASLt workspaces and PyTorch's kernel images on one GPU. Observed
# 0.3-1 GiB for context plus NCCL buffers (activation-findings.md, "Not covered by tensor
# trackers"); PyTorch's CUDA semantics notes describe the context as "hundreds of MB". We take
# the top of that range so that a "fits" is not undone by a driver or library version.
CUDA_CONTEXT_BYTES = 1 * GIB

# NCCL communicator buffers for data-parallel training on more than one GPU (NCCL's default
# NCCL_BUFFSIZE of 4 MiB per channel and peer, for each protocol). ZeRO-3's and FSDP's own
# gathered layers and buckets are counted apart, from their defaults (sharding.py).
NCCL_BUFFER_BYTES = GIB // 2

# The caching allocator's reserve beyond the live-tensor peak, as a fraction of the step's
# per-step tensors (see the module docstring for the fit and its sources).
ALLOCATOR_RESERVE_FRACTION = 0.255
FSDP_ALLOCATOR_RESERVE_FRACTION = 0.38
EXPANDABLE_SEGMENTS_RESERVE_FRACTION = 0.10


def fixed_overhead_bytes(gpus: int) -> int:
    """Context and communication buffers: per GPU, independent of the job's size."""
    return CUDA_CONTEXT_BYTES + (NCCL_BUFFER_BYTES if gpus > 1 else 0)


def reserve_fraction(*, expandable_segments: bool, fsdp: bool = False) -> float:
    """The allocator's reserve per byte of per-step tensors (module docstring); ``fsdp``: the
    job is sharded by PyTorch FSDP on more than one GPU."""
    return (EXPANDABLE_SEGMENTS_RESERVE_FRACTION if expandable_segments
            else FSDP_ALLOCATOR_RESERVE_FRACTION if fsdp else ALLOCATOR_RESERVE_FRACTION)


def reserve_bytes(dynamic_bytes: int, fraction: float) -> int:
    """The allocator's reserve on ``dynamic_bytes`` of per-step tensors."""
    return math.ceil(dynamic_bytes * fraction)
