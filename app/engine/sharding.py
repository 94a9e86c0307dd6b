"""What ZeRO-3 and FSDP hold on each GPU beyond the shards (issue 15, point 3).

Sharding divides the model states by the number of cards (``states.shard_states``), but each
card still holds, while it computes, whole copies of some parameters and a few fixed buffers.
Those are the terms here, each from the implementation's documented default:

DeepSpeed ZeRO-3 (``deepspeed/runtime/zero/config.py``, class ``DeepSpeedZeroConfig``, read at
commit 50c6d6f244ea of 2024-01-04; line numbers there. The same defaults stand at 38327e07f of
2025-02-21, lines 98, 109, 128, 208, 214 and 231; the bucket's allocation is ``stage3.py``
line 538 there):

* ``reduce_bucket_size`` (line 105, default ``5e8`` elements): with ``contiguous_gradients``
  (line 94, default True) ``stage3.py`` allocates the gradient bucket once, on the GPU, at the
  optimizer's construction: ``torch.empty(self.reduce_bucket_size, dtype=..., device=<gpu>)``,
  one per gradient dtype. It is held for the whole run, LoRA or not, offload or not: 5e8
  bf16 elements are 1 GB.
* ``stage3_prefetch_bucket_size`` (line 194, default ``5e7`` elements): parameters fetched
  ahead of use, on top of the module being computed.
* ``stage3_max_live_parameters`` (line 217, default ``1e9`` elements): the cap on gathered
  parameters resident at once; the prefetch only fills the room the gathered layer leaves
  under it (a layer above the cap, as Llama 3.1 405B's, is still gathered, with no prefetch).
* ``stage3_param_persistence_threshold`` (line 200, default ``1e5`` elements): parameters
  smaller than this are never partitioned. Every norm weight of the supported models
  (``hidden_size`` elements, at most 16 384) is below it, so each card keeps them whole: a few
  MB (2.3 MB for a 70B Llama), which the engine names and does not add, since the shards
  already count the norms and the difference is below the figures' precision.
* ``allgather_bucket_size`` (line 124, default ``5e8``) is used by stages 1 and 2 only (the
  all-gather of updated partitions after the step); stage 3 gathers per module through its
  parameter coordinator, so it is named here and not added.

Hugging Face's Trainer replaces the bucket sizes with ``hidden_size**2``-based values only
when the config file says ``"auto"``; Accelerate's DeepSpeed plugin without a config file (as
the PEFT docs' ZeRO-3 recipes run it) passes none, so DeepSpeed's own defaults apply. The
engine takes those defaults.

PyTorch FSDP (``torch/distributed/fsdp/fully_sharded_data_parallel.py``, the constructor's
defaults ``backward_prefetch=BackwardPrefetch.BACKWARD_PRE`` and ``limit_all_gathers=True``):
with ``FULL_SHARD`` a wrapped unit (one decoder layer
under the transformer auto-wrap policy every recipe uses) is all-gathered before its forward
and its backward and freed after. ``backward_prefetch`` defaults to ``BACKWARD_PRE``, which
issues the next unit's all-gather before the current unit's gradient computation, and
``limit_all_gathers=True`` (FSDP1's default since PyTorch 2.1) allows at most two units in
flight; FSDP2 (``fully_shard``) prefetches the next unit in forward and backward by default.
So two whole layers are live at the peak: the one computing and the prefetched next one.
FSDP reduce-scatters each unit's gradient straight from the unsharded gradient tensor and has
no standing bucket; its communication buffers are NCCL's (``overhead.NCCL_BUFFER_BYTES``).

With CPU offload (DeepSpeed ``offload_param``/``offload_optimizer``; FSDP
``CPUOffload(offload_params=True)``) the shards and the optimizer live in CPU memory, but the
gathered layers, the prefetch and DeepSpeed's gradient bucket are still allocated on the GPU:
computation happens there. The terms below therefore do not depend on offload.

A gathered layer is counted at 2 bytes per parameter (bf16 weights; 4 for a base kept in
fp32), and a 4-bit base at its packed NF4 storage (``states.NF4_BITS`` / 8, about 0.52 byte per
parameter), which is what QLoRA under FSDP or ZeRO-3 all-gathers (bitsandbytes' bf16
``quant_storage``). Engine 1.4.0 kept 2 bytes there because the published multi-GPU QLoRA
runs lay above the estimate even so; engine 1.5.0 found that difference in the caching
allocator's reserve under FSDP (``overhead.FSDP_ALLOCATOR_RESERVE_FRACTION``).
bitsandbytes' per-matmul dequantised weight is ``estimate``'s ``dequantised`` term.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from app.engine.errors import EngineError
from app.engine.shapes import ModelShape

ShardingImpl = Literal["deepspeed", "fsdp"]
SHARDING_IMPLS: tuple[ShardingImpl, ...] = ("deepspeed", "fsdp")

# DeepSpeed's DeepSpeedZeroConfig defaults, in elements (config.py at 50c6d6f, lines above).
DS_REDUCE_BUCKET_SIZE = 500_000_000
DS_ALLGATHER_BUCKET_SIZE = 500_000_000  # stages 1 and 2 only; named, not added for ZeRO-3
DS_PREFETCH_BUCKET_SIZE = 50_000_000
DS_MAX_LIVE_PARAMETERS = 1_000_000_000
DS_PARAM_PERSISTENCE_THRESHOLD = 100_000

# FSDP: the unit computing plus the prefetched next one (BACKWARD_PRE, limit_all_gathers).
FSDP_LIVE_UNITS = 2

# Bytes per element of the bf16 weights ZeRO-3/FSDP gather and of DeepSpeed's gradient
# bucket (the low-precision gradient dtype under mixed precision).
HALF_BYTES = 2


@dataclass(frozen=True, slots=True)
class ShardedExtras:
    """Per-GPU bytes beyond the shards. ``gathered`` is live while a layer computes (forward
    and backward); ``buffers`` is allocated once and held for the whole run."""

    gathered: int
    buffers: int
    terms: tuple[tuple[str, int], ...]


def sharded_extras(shape: ModelShape, impl: ShardingImpl, *, gpus: int,
                   weight_bytes_per_param: float) -> ShardedExtras:
    """The gathered layers and fixed buffers of ZeRO-3 (``deepspeed``) or FSDP on one card.

    One card holds no shards, so nothing is gathered and no bucket is allocated."""
    if gpus <= 1:
        return ShardedExtras(0, 0, ())
    layer = shape.largest_layer_params()
    if impl == "fsdp":
        gathered = math.ceil(FSDP_LIVE_UNITS * layer * weight_bytes_per_param)
        return ShardedExtras(gathered, 0, (("fsdp_gathered_units", gathered),))
    # The layer computing is gathered whole (ZeRO-3 gathers module by module; counting the
    # whole decoder layer is the safe side); the prefetch fills up to max_live_parameters.
    prefetch = max(0, min(DS_PREFETCH_BUCKET_SIZE, DS_MAX_LIVE_PARAMETERS - layer))
    gathered_layer = math.ceil(layer * weight_bytes_per_param)
    prefetched = math.ceil(prefetch * weight_bytes_per_param)
    bucket = HALF_BYTES * DS_REDUCE_BUCKET_SIZE
    return ShardedExtras(
        gathered_layer + prefetched,
        bucket,
        (
            ("ds_gathered_layer", gathered_layer),
            ("ds_prefetch_bucket", prefetched),
            ("ds_reduce_bucket", bucket),
        ),
    )


def checked_impl(impl: str, sharding: str) -> ShardingImpl:
    """The ``Job.sharding_impl`` a surface was given, checked against its ``sharding``.

    The implementation only changes what ZeRO-3 (FSDP's FULL_SHARD) holds beyond the shards;
    FSDP's other strategies are not modelled, so ``fsdp`` with sharding ``none``, ``zero1`` or
    ``zero2`` is a contradiction and refused (field ``sharding_impl``), as ``bnb_version`` 0.41
    on LoRA is, rather than silently ignored; every surface shares this one rule."""
    for known in SHARDING_IMPLS:
        if impl == known:
            if known == "fsdp" and sharding != "zero3":
                raise EngineError("sharding_impl", "fsdp_needs_zero3")
            return known
    raise EngineError("sharding_impl", "not_one_of", value=repr(impl),
                      allowed=", ".join(SHARDING_IMPLS))
