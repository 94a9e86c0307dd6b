"""What ZeRO-3 and FSDP hold on each GPU beyond the shards.

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

Engine 1.7.0 adds what the published FSDP runs showed beyond the decoder layers (Answer.AI's
fsdp_qlora ``benchmarks_03_2024.md``: the engine matched their allocated peak only with it):

* **FSDP's root unit.** The transformer auto-wrap policy (Accelerate's
  ``TRANSFORMER_BASED_WRAP``, PEFT's ``fsdp_auto_wrap_policy``, fsdp_qlora's
  ``get_wrapping_policy``, llama-recipes, LitGPT's ``Block`` policy) wraps each decoder layer;
  what is left, the embeddings, the final norm and lm_head, belongs to the root unit. FSDP1
  does not reshard the root after the forward (``_runtime_utils._post_forward_reshard``: "Do
  not free the root's parameters in the post-forward for ``FULL_SHARD`` with the intention
  that they are immediately used for backward computation", PyTorch 2.0 on), and FSDP2 sets
  the root's ``reshard_after_forward`` to False for the same reason. Frozen (LoRA, QLoRA), the
  root gets no post-backward hook: its inputs (token ids) need no gradient, so
  ``_register_post_backward_reshard_only_hook`` finds nothing to hook, and the final callback
  (``_catch_all_reshard``) frees it at the end of the backward; trained, its post-backward
  hook fires with the embedding's gradient, which is the last the backward computes. Either
  way the root is whole, beside its shard, from its forward to the end of the backward:
  :func:`fsdp_root_params` at :data:`HALF_BYTES` (the embeddings are never 4-bit; under amp
  Accelerate's ``MixedPrecision(param_dtype=bfloat16)`` gathers them in bf16). torchtune's
  70B and 405B configs shard ``tok_embeddings`` and ``output`` as units of their own
  (``custom_sharded_layers``), which this term does not model.
* **Mixed precision.** Under ``MixedPrecision(param_dtype=bfloat16)`` (what Accelerate sets
  for ``mixed_precision: bf16``) FSDP casts an fp32 shard to bf16 before the all-gather
  (``FlatParamHandle._use_low_precision_shard``), so a base loaded in fp32 is gathered at 2
  bytes per parameter and autocast has no fp32 weight left to cast.
* **CPU offload.** With ``CPUOffload(offload_params=True)`` and no mixed precision (pure
  bf16, as fsdp_qlora trains) FSDP1 copies a unit's shard to the GPU before the all-gather
  (``FlatParamHandle.pre_unshard``: ``flat_param_to(self.device)``) and moves it back only when
  the unit reshards: each gathered unit also holds its shard's GPU copy, 1/N of it. Under
  mixed precision the GPU copy is the low-precision shard, freed right after the all-gather
  (``post_unshard``: ``_free_low_precision_sharded_param``), so nothing stays.
* **4-bit quantisation statistics.** bitsandbytes keeps each 4-bit weight's absmax (and, with
  double quantisation, its second-level statistics) in a ``QuantState`` object, not as a
  parameter or buffer; FSDP and ZeRO-3 partition parameters only ("FSDP only syncs parameters
  and buffers, so the quant_state isn't copied", fsdp_qlora ``train.py``, ``load_and_quantize``),
  so every GPU keeps the whole statistics, CPU offload or not: :func:`unsharded_quant_state`.
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


def fsdp_root_params(shape: ModelShape) -> int:
    """The parameters of FSDP's root unit under the transformer auto-wrap policy: everything
    outside the wrapped decoder layers, i.e. the embeddings, lm_head (none when tied) and the
    final norm's ``hidden_size`` weights (module docstring)."""
    return shape.split.embedding + shape.split.lm_head + shape.hidden_size


def sharded_extras(shape: ModelShape, impl: ShardingImpl, *, gpus: int,
                   weight_bytes_per_param: float, offload_params: bool = False,
                   mixed_precision: bool = True, layer_params: int | None = None
                   ) -> ShardedExtras:
    """The gathered layers and fixed buffers of ZeRO-3 (``deepspeed``) or FSDP on one card.

    One card holds no shards, so nothing is gathered and no bucket is allocated. FSDP also
    holds its root unit whole through the forward and the backward, and with CPU offload
    (``offload_params``) but no ``mixed_precision`` a GPU copy of each gathered unit's shard
    (module docstring). ``layer_params``: ``shape.largest_layer_params()`` where the caller
    keeps it."""
    if gpus <= 1:
        return ShardedExtras(0, 0, ())
    layer = shape.largest_layer_params() if layer_params is None else layer_params
    if impl == "fsdp":
        units = math.ceil(FSDP_LIVE_UNITS * layer * weight_bytes_per_param)
        root = HALF_BYTES * fsdp_root_params(shape)
        held_copy = offload_params and not mixed_precision
        copies = math.ceil((units + root) / gpus) if held_copy else 0
        terms: tuple[tuple[str, int], ...] = (("fsdp_gathered_units", units),
                                              ("fsdp_root_unit", root))
        if copies:
            terms += (("fsdp_offload_shard_copies", copies),)
        return ShardedExtras(units + root + copies, 0, terms)
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


def unsharded_quant_state(stats_bytes: int, *, gpus: int, offload_params: bool) -> int:
    """What every card holds of the 4-bit quantisation statistics beyond its share in the
    sharded model states: the model states divide them by the cards (or, offloaded, put them
    on the CPU) like the packed weights, but they are not parameters and stay whole on each
    GPU (module docstring). 0 on one card."""
    if gpus <= 1:
        return 0
    in_states = 0 if offload_params else math.ceil(stats_bytes / gpus)
    return stats_bytes - in_states


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
