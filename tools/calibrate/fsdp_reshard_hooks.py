"""Does FSDP1 hold every layer's input and its gradient to the end of the backward when the
checkpoint sits around frozen units, reentrant, as transformers places it?

docs/accuracy.md, "PEFT's FSDP QLoRA screenshots" (the third pass): FSDP1's ``_pre_forward``
registers ``_register_post_backward_reshard_only_hook`` for a unit whose flat parameter needs no
gradient, a ``register_multi_grad_hook`` on the unit's inputs kept until ``_finalize_params``.
Under ``checkpoint(unit.__call__, use_reentrant=True)`` the recompute feeds the unit detached
leaves, whose ``AccumulateGrad`` the hook's closure keeps, and with it the leaf and its
``.grad``. This script measures that on one CUDA device in one process (FSDP1 turns FULL_SHARD
into NO_SHARD there; the hooks do not depend on the strategy). Plain torch, random weights, no
download::

    python -m tools.calibrate.fsdp_reshard_hooks --out fsdp-reshard-hooks.json

Variants, one step each after a warm-up step:

* ``plain``: no FSDP, reentrant checkpoint around each block (the single-GPU baseline);
* ``fsdp-outside``: FSDP1 units as PEFT's wrap policy makes them (every block, and every LoRA
  linear on its own), reentrant checkpoint around each block unit, as transformers does;
* ``fsdp-inside``: the same units, the reentrant checkpoint inside each block unit
  (``apply_activation_checkpointing`` after ``FSDP(...)``), as Answer.AI's train.py does;
* ``fsdp-outside-nonreentrant``: as ``fsdp-outside`` with ``use_reentrant=False``.

``end_of_backward`` is ``memory_allocated`` when the gradient of the first block's input
arrives, before FSDP's final callback: if the mechanism holds, ``fsdp-outside`` exceeds
``plain`` there by about ``held_bytes_expected`` (every block's input and input gradient), and
the other variants do not. Untested where it was written (no torch there); each variant's
failure is recorded, not raised.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

VARIANTS = ("plain", "fsdp-outside", "fsdp-inside", "fsdp-outside-nonreentrant")


class LoraLinear(nn.Module):
    """A frozen linear with a trainable low-rank pair beside it (PEFT's LoRA layer)."""

    def __init__(self, d_in: int, d_out: int, rank: int) -> None:
        super().__init__()
        self.base = nn.Linear(d_in, d_out, bias=False).requires_grad_(False)
        self.lora_a = nn.Linear(d_in, rank, bias=False)
        self.lora_b = nn.Linear(rank, d_out, bias=False)
        nn.init.zeros_(self.lora_b.weight)

    def forward(self, x: Any) -> Any:
        return self.base(x) + self.lora_b(self.lora_a(x))


class Block(nn.Module):
    """A Llama decoder layer: RMSNorm, causal attention (SDPA), RMSNorm, SwiGLU MLP."""

    def __init__(self, hidden: int, inter: int, heads: int, rank: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.Parameter(torch.ones(hidden), requires_grad=False)
        self.norm2 = nn.Parameter(torch.ones(hidden), requires_grad=False)
        self.q, self.k, self.v, self.o = (LoraLinear(hidden, hidden, rank) for _ in range(4))
        self.gate, self.up = LoraLinear(hidden, inter, rank), LoraLinear(hidden, inter, rank)
        self.down = LoraLinear(inter, hidden, rank)

    @staticmethod
    def _rms(x: Any, weight: Any) -> Any:
        y = x.float()
        return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * weight

    def forward(self, x: Any) -> Any:
        b, s, h = x.shape
        n = self._rms(x, self.norm1)
        q, k, v = (proj(n).view(b, s, self.heads, -1).transpose(1, 2)
                   for proj in (self.q, self.k, self.v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(attn.transpose(1, 2).reshape(b, s, h))
        n = self._rms(x, self.norm2)
        return x + self.down(F.silu(self.gate(n)) * self.up(n))


class Model(nn.Module):
    """Frozen embedding, norm and head around the blocks; the loss as transformers computes it
    (fp32 logits, cross-entropy). ``mode`` says where the checkpoint sits; ``probe`` records
    ``memory_allocated`` when the first block's input gets its gradient."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.embed = nn.Embedding(args.vocab, args.hidden).requires_grad_(False)
        self.blocks = nn.ModuleList(Block(args.hidden, args.intermediate, args.heads, args.rank)
                                    for _ in range(args.layers))
        self.norm = nn.Parameter(torch.ones(args.hidden), requires_grad=False)
        self.head = nn.Linear(args.hidden, args.vocab, bias=False).requires_grad_(False)
        self.mode = "plain"
        self.probe: list[int] = []

    def forward(self, ids: Any) -> Any:
        x = self.embed(ids).requires_grad_(True)  # enable_input_require_grads
        x.register_hook(lambda grad: self.probe.append(torch.cuda.memory_allocated()))
        for block in self.blocks:
            if self.mode == "fsdp-inside":
                x = block(x)
            else:
                x = checkpoint(block.__call__, x,
                               use_reentrant=self.mode != "fsdp-outside-nonreentrant")
        logits = self.head(Block._rms(x, self.norm)).float()
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                               ids[:, 1:].reshape(-1))


def _wrapped(model: Model, mode: str) -> Any:
    """The model as the variant runs it: on the GPU alone, or under FSDP1 with PEFT's units."""
    if mode == "plain":
        return model
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        apply_activation_checkpointing,
        checkpoint_wrapper,
    )
    from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy
    from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy

    def unit(module: nn.Module) -> bool:
        trainable_leaf = isinstance(module, nn.Linear) and module.weight.requires_grad
        return isinstance(module, Block) or trainable_leaf

    fsdp = FullyShardedDataParallel(
        model, sharding_strategy=ShardingStrategy.FULL_SHARD, use_orig_params=False,
        auto_wrap_policy=functools.partial(lambda_auto_wrap_policy, lambda_fn=unit),
        device_id=torch.cuda.current_device(), limit_all_gathers=True)
    if mode == "fsdp-inside":
        apply_activation_checkpointing(
            fsdp, checkpoint_wrapper_fn=functools.partial(
                checkpoint_wrapper, checkpoint_impl=CheckpointImpl.REENTRANT),
            check_fn=lambda module: isinstance(module, Block))
    return fsdp


def _step(runner: Any, model: Model, ids: Any) -> dict[str, int]:
    """One forward and backward; what was allocated at its moments."""
    model.probe.clear()
    before = torch.cuda.memory_allocated()
    loss = runner(ids)
    after_forward = torch.cuda.memory_allocated()
    loss.backward()
    for param in model.parameters():
        param.grad = None
    return {"before_step": before, "after_forward": after_forward,
            "end_of_backward": model.probe[0] if model.probe else -1,
            "after_backward": torch.cuda.memory_allocated()}


def run_variant(args: argparse.Namespace, mode: str) -> dict[str, Any]:
    """Build, wrap, warm up and measure one variant; free it again."""
    gc.collect()
    torch.cuda.empty_cache()
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Model(args).to(torch.bfloat16)
    model.mode = mode
    runner = _wrapped(model, mode)
    # What building and wrapping left cached would count in the measured step's reserved.
    gc.collect()
    torch.cuda.empty_cache()
    ids = torch.randint(0, args.vocab, (args.batch, args.seq), device="cuda")
    _step(runner, model, ids)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    moments = _step(runner, model, ids)
    torch.cuda.synchronize()
    result: dict[str, Any] = {**moments, "max_allocated": torch.cuda.max_memory_allocated(),
                              "max_reserved": torch.cuda.max_memory_reserved()}
    del runner, model
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in (("layers", 8), ("hidden", 8192), ("intermediate", 28672),
                          ("heads", 64), ("rank", 8), ("vocab", 32000), ("batch", 2),
                          ("seq", 2048)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--out", type=Path, default=Path("fsdp-reshard-hooks.json"))
    args = parser.parse_args(argv)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("nccl", rank=0, world_size=1)
    tokens = args.batch * args.seq
    report: dict[str, Any] = {
        "torch": torch.__version__, "device": torch.cuda.get_device_name(),
        "config": vars(args) | {"out": str(args.out)},
        "held_bytes_expected": 2 * 2 * args.hidden * tokens * args.layers, "variants": {}}
    for mode in VARIANTS:
        try:
            report["variants"][mode] = run_variant(args, mode)
        except Exception as exc:  # one variant's failure must not lose the others
            report["variants"][mode] = {"error": f"{type(exc).__name__}: {exc}"}
        print(mode, json.dumps(report["variants"][mode]), flush=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
