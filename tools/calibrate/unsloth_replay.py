"""One Unsloth QLoRA training step's per-token blocks, replayed through PyTorch's caching
allocator: what the live tensors and the reserve come to, without a GPU.

The requests are read off Unsloth's source (app/engine/framework_unsloth.py lists the files),
in the order its code makes and frees them, for a dense Llama decoder with its LoRA kernels
(adapters on all seven linear layers, dropout 0), offloaded checkpointing and a fused loss, at
batch 1. Two versions of that code:

* ``"today"``: unslothai/unsloth ``015bdef0`` with unsloth-zoo's ``UnslothCheckpointFunction``:
  two GPU copy buffers and the last layer's input stay on the GPU, ``matmul_lora`` adds the
  adapter's product in place (``addmm``), and so do the MLP's and QKV's backward into ``dX``;
* ``"2024-12"``: unslothai/unsloth ``0e0d8fc3`` ("Llama 3.3 (#1393)", 2024-12-06) with
  unsloth-zoo ``ab9637ed``, with which Unsloth's long-context table was measured:
  ``Unsloth_Offloaded_Gradient_Checkpointer`` reloads each layer's input into a tensor of its
  own, ``matmul_lora`` and the backward add every adapter's product out of place
  (``out += (X @ A) @ (s * B)``, ``dX += df @ upB.t() @ ...``), a temporary of the output's width,
  and every attention layer keeps RoPE tables of its own for the whole sequence (its own
  ``rotary_emb``, one per layer on transformers up to 4.47.1; a shared one since unsloth
  ``63782ea3``, 2025-01-07), built in the first step's forward (:meth:`_Step.rope_cache`).

Only blocks that grow with the tokens are replayed (the dequantised weights, the adapters and
their gradients are fixed and small beside them at long context). The allocator follows
``c10/cuda/CUDACachingAllocator.cpp``: sizes rounded up to 512 bytes (``kMinBlockSize``), the
smallest free block that fits is taken (best fit, lowest address first), split when more than
1 MiB (``kSmallSize``) would remain, and freed blocks merge with free neighbours of their own
segment; requests of at most 1 MiB come from the small pool's 2 MiB segments, counted apart.
Without expandable segments a request that no free block serves gets a segment of its own;
with ``expandable_segments:True`` the pool is one segment that grows at its end (through a
free block there). Reserved is every segment's bytes at their largest.

It does not know the order in which Python drops a frame's locals, nor the attention kernel's
own workspace; it shows what the requests and the allocator's rules make of the peak, not a
measurement.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from app.engine.shapes import ModelShape

Code = Literal["today", "2024-12"]
BLOCK_ROUND_BYTES = 512
SPLIT_REMAINDER_BYTES = 1 << 20
BF16, FP32 = 2, 4
SMALL_POOL = -1
ROPE_CACHE_TABLES = 2
"""cos and sin: each layer's own RoPE cache in the figures' code, ``head_dim`` values a position."""
ROPE_POSITIONS_STEP = 8192
"""``extend_rope_embedding`` grows the cache to a multiple of 8,192 positions."""


@dataclasses.dataclass(eq=False)
class Block:
    """A block of the pool: its address, size, whether it is free, and its segment."""

    addr: int
    size: int
    free: bool
    segment: int


class CachingAllocator:
    """Best fit over one pool of large blocks (module docstring)."""

    def __init__(self, *, expandable: bool) -> None:
        self.expandable = expandable
        self.blocks: list[Block] = []
        self.live = self.peak_live = self.peak_reserved = self.small = 0
        self._segments = 0

    def _end(self) -> int:
        return self.blocks[-1].addr + self.blocks[-1].size if self.blocks else 0

    def _grow(self, size: int) -> Block:
        last = self.blocks[-1] if self.blocks else None
        if self.expandable and last is not None and last.free:
            last.size, last.free = size, False
            return last
        self._segments += 0 if self.expandable else 1
        block = Block(self._end(), size, False, self._segments)
        self.blocks.append(block)
        return block

    def malloc(self, nbytes: int) -> Block:
        size = -(-nbytes // BLOCK_ROUND_BYTES) * BLOCK_ROUND_BYTES
        if size <= SPLIT_REMAINDER_BYTES:
            # The small pool's 2 MiB segments (kSmallBuffer): counted, not placed.
            self.live += size
            self.small += size
            self.peak_live = max(self.peak_live, self.live)
            self.peak_reserved = max(self.peak_reserved, self._end() + self.small)
            return Block(-1, size, False, SMALL_POOL)
        fits = [b for b in self.blocks if b.free and b.size >= size]
        if not fits:
            block = self._grow(size)
        else:
            block = min(fits, key=lambda b: (b.size, b.addr))
            if block.size - size > SPLIT_REMAINDER_BYTES:
                rest = Block(block.addr + size, block.size - size, True, block.segment)
                self.blocks.insert(self.blocks.index(block) + 1, rest)
                block.size = size
            block.free = False
        self.live += block.size
        self.peak_live = max(self.peak_live, self.live)
        self.peak_reserved = max(self.peak_reserved, self._end() + self.small)
        return block

    def free(self, block: Block) -> None:
        block.free = True
        self.live -= block.size
        if block.segment == SMALL_POOL:
            self.small -= block.size
            return
        k = self.blocks.index(block)
        after = self.blocks[k + 1] if k + 1 < len(self.blocks) else None
        if after is not None and after.free and after.segment == block.segment:
            block.size += after.size
            del self.blocks[k + 1]
        before = self.blocks[k - 1] if k > 0 else None
        if before is not None and before.free and before.segment == block.segment:
            before.size += block.size
            del self.blocks[k]


@dataclasses.dataclass(frozen=True)
class Replay:
    """The step's peaks per token: live tensors and the allocator's reserved bytes."""

    live_per_token: float
    reserved_per_token: float


class _Step:
    """The requests of one step (module docstring), ``tokens`` at batch 1."""

    def __init__(self, shape: ModelShape, code: Code, tokens: int, *, expandable: bool) -> None:
        self.s, self.today, self.tokens = shape, code == "today", tokens
        self.pool = CachingAllocator(expandable=expandable)

    def new(self, bytes_per_token: int) -> Block:
        return self.pool.malloc(bytes_per_token * self.tokens)

    def gone(self, *blocks: Block) -> None:
        for block in blocks:
            self.pool.free(block)

    def temporary(self, bytes_per_token: int) -> None:
        """A product added out of place (the figures' code only)."""
        if not self.today:
            self.gone(self.new(bytes_per_token))

    def matmul_lora(self, width: int) -> Block:
        out = self.new(BF16 * width)
        self.temporary(BF16 * width)
        return out

    def rope_cache(self) -> None:
        """The figures' code gives every attention layer its own RoPE module, whose
        ``extend_rope_embedding`` rebuilds cos and sin for the sequence rounded up to 8,192
        positions (``_set_cos_sin_cache``: positions as int64 then fp32, their outer product
        with ``inv_freq``, its doubled fp32 copy, the fp32 cos and sin) and keeps them in bf16."""
        d = self.s.head_dim
        positions = -(-self.tokens // ROPE_POSITIONS_STEP) * ROPE_POSITIONS_STEP
        grow = self.pool.malloc
        t = grow(8 * positions)
        t32 = grow(FP32 * positions)
        self.gone(t)
        freqs = grow(FP32 * d // 2 * positions)
        emb = grow(FP32 * d * positions)
        for _ in range(ROPE_CACHE_TABLES):
            table = grow(FP32 * d * positions)
            grow(BF16 * d * positions)  # kept for the run
            self.gone(table)
        self.gone(t32, freqs, emb)

    def layer(self, grad: bool, first_step: bool = False) -> tuple[Block, list[Block]]:
        """One decoder layer's forward from its input; with ``grad`` what it saves stays."""
        s = self.s
        n1, r1 = self.new(BF16 * s.hidden_size), self.new(FP32)  # the norm's output and rstd
        q, k, v = (self.matmul_lora(w) for w in (s.q_width, s.kv_width, s.kv_width))
        if first_step and not self.today:
            self.rope_cache()
        attn, lse = self.new(BF16 * s.q_width), self.new(FP32 * s.num_heads)
        o = self.matmul_lora(s.hidden_size)
        if not grad:
            self.gone(q, k, v, attn, lse, n1, r1)
        h1 = self.new(BF16 * s.hidden_size)
        self.gone(o)
        n2, r2 = self.new(BF16 * s.hidden_size), self.new(FP32)
        e, g = self.matmul_lora(s.intermediate_size), self.matmul_lora(s.intermediate_size)
        h = self.new(BF16 * s.intermediate_size)
        mlp_out = self.matmul_lora(s.hidden_size)
        self.gone(h)
        if not grad:
            self.gone(e, g, n2, r2)
        y = self.new(BF16 * s.hidden_size)
        self.gone(mlp_out)
        if not grad:
            self.gone(h1)
            return y, []
        return y, [n1, r1, q, k, v, attn, lse, h1, n2, r2, e, g]

    def layer_backward(self, saved: list[Block]) -> Block:
        """The recomputed layer's backward: the MLP's, then the attention's (flash-attention 2's
        ``mha_bwd`` for a grouped-query layout); returns the input's gradient."""
        s = self.s
        n1, r1, q, k, v, attn, lse, h1, n2, r2, e, g = saved
        dw = self.matmul_lora(s.intermediate_size)
        for _ in range(3):
            self.temporary(BF16 * s.hidden_size)
        self.gone(dw, e, g)
        dh1 = self.new(BF16 * s.hidden_size)
        self.gone(n2, r2, h1)
        d_attn = self.matmul_lora(s.q_width)
        grads = [self.new(BF16 * s.q_width) for _ in range(3)]
        self.gone(self.new(FP32 * s.q_width), self.new(FP32 * s.num_heads))
        dk, dv = self.new(BF16 * s.kv_width), self.new(BF16 * s.kv_width)
        self.gone(grads[1], grads[2], q, k, v, attn, lse, d_attn)
        for _ in range(2):
            self.temporary(BF16 * s.hidden_size)
        self.gone(grads[0], dk, dv)
        dx = self.new(BF16 * s.hidden_size)
        self.gone(n1, r1, dh1)
        return dx

    def run(self) -> Replay:
        h = BF16 * self.s.hidden_size
        buffers = [self.new(h), self.new(h)] if self.today else []
        x, layers = self.new(h), self.s.num_layers
        last_input = None
        for index in range(layers):
            y, _ = self.layer(grad=False, first_step=True)
            if self.today and index == layers - 1:
                last_input = x
            else:
                self.gone(x)
            x = y
        loss = [self.new(h), self.new(FP32), self.new(FP32)]  # final norm, lse, -dot
        dy = self.new(h)
        self.gone(*loss, x)
        for index in reversed(range(layers)):
            reloaded = None if self.today else self.new(h)
            y, saved = self.layer(grad=True)
            dx = self.layer_backward(saved)
            self.gone(y, dy)
            if reloaded is not None:
                self.gone(reloaded)
            if last_input is not None and index == layers - 1:
                self.gone(last_input)
            dy = dx
        del buffers
        return Replay(self.pool.peak_live / self.tokens, self.pool.peak_reserved / self.tokens)


def replay(shape: ModelShape, code: Code, tokens: int, *, expandable: bool = True) -> Replay:
    """The step of ``shape`` under Unsloth's ``code`` at ``tokens`` (batch 1)."""
    return _Step(shape, code, tokens, expandable=expandable).run()
