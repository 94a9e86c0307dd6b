"""Memory a training process uses beyond the tensors it keeps alive.

Tensor trackers (MemTracker, ``torch.cuda.memory_allocated``) do not see these; a card must
hold them all the same. Until the calibration issue's GPU runs measure them per card
generation, they are set from published observations, stated here with their range.
"""

from __future__ import annotations

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

# PyTorch's caching allocator reserves more than it hands out: reserved minus allocated was
# typically 5-15 % (activation-findings.md). Weights and optimizer states are allocated once
# and hardly fragment, so the margin applies to the per-step tensors (activations, gradients,
# autocast copies), mid-range.
FRAGMENTATION_FRACTION = 0.10


def fixed_overhead_bytes(gpus: int) -> int:
    """Context and communication buffers: per GPU, independent of the job's size."""
    return CUDA_CONTEXT_BYTES + (NCCL_BUFFER_BYTES if gpus > 1 else 0)


def fragmentation_bytes(dynamic_bytes: int) -> int:
    """The allocator's margin on the per-step tensors."""
    return int(dynamic_bytes * FRAGMENTATION_FRACTION + 0.999999)
