"""Activations of hybrid models: Gated DeltaNet (Qwen3-Next, Qwen3.5) and Mamba-2 (Nemotron-H)
layers beside softmax attention.

A hybrid's layers are not alike, so the per-layer bytes of :mod:`activations` are replaced by
their average over the model's layers: attention layers keep what an attention layer keeps
(activations.py), MLP and expert layers what those keep, and each linear-attention or Mamba
layer what transformers' PyTorch path keeps for it.

The mixer terms were measured tensor by tensor: the bytes of every tensor one mixer saves for
its backward (``torch.autograd.graph.saved_tensors_hooks``, storages counted once), under
bf16 autocast, on transformers 5.24's ``Qwen3NextGatedDeltaNet`` at 6 geometries and
``NemotronHMamba2Mixer`` at 8 (heads, head widths, state sizes, groups varied), 512 tokens,
fitted by least squares (largest residual 0.1 % for LoRA's frozen base, 0.8 % for full
fine-tuning), Mamba-2 at its chunk of 128 tokens and scaled to other chunks below; whole
training steps of scaled-down models are held to the engine in
``tools/calibrate/results/cpu-hybrid.json``. Those are the PyTorch reference paths
transformers runs without the optional kernels (``flash-linear-attention``, ``mamba_ssm``,
``causal_conv1d``): they keep fp32 copies of q, k, v, the chunk matrices and a state per
chunk, so with the kernels installed a GPU keeps less and these terms are an upper bound.

Widths (``shapes.MixerLayers``): K key width, KE key width after the value heads' grouping,
V value (Mamba: inner) width, H heads, S = H x state per head. Gated DeltaNet runs in chunks
of 64 tokens (``torch_chunk_gated_delta_rule``), Mamba-2 in chunks of ``chunk_size`` (128 in
every Nemotron-H release).
"""

from __future__ import annotations

from typing import Final

from app.engine.shapes import MixerLayers, ModelShape

# Gated DeltaNet, bytes per token per layer on a frozen bf16 base (LoRA):
# 8 K + 37.5 KE + 30 V + 930 H + S / 8 (fit above; the chunk matrices are 930 bytes per
# head, about 3.6 fp32 rows of 64, the chunk states 8 bytes per state element per 64 tokens).
DELTANET_KEY: Final = 8
DELTANET_EXPANDED_KEY_HALVES: Final = 75
DELTANET_VALUE: Final = 30
DELTANET_HEAD: Final = 930
DELTANET_STATE_DIVISOR: Final = 8
# Full fine-tuning keeps 6 V more (out_proj's input for its weight gradient and the gated
# norm's fp32 tensors; autocast's weight copies are counted with the weights, estimate.py).
DELTANET_FULL_VALUE_EXTRA: Final = 6

# Mamba-2, bytes per token per layer on a frozen bf16 base (LoRA):
# 32 V + 8 K + 1045 H + 12 KE + 441 S / 12800, where K is the groups' B/C width (groups x
# state), KE the heads' (heads x state); the chunk matrices are 1045 bytes per head (128-token
# chunks), the chunk states 4.4 bytes per state element per 128 tokens.
MAMBA_VALUE: Final = 32
MAMBA_KEY: Final = 8
MAMBA_HEAD: Final = 1045
MAMBA_EXPANDED_KEY: Final = 12
MAMBA_STATE_NUM, MAMBA_STATE_DEN = 441, 12_800
# Full fine-tuning keeps 9 V more (the fit under autocast less the weight copies).
MAMBA_FULL_VALUE_EXTRA: Final = 9
# The chunk length of that fit. transformers' torch_forward keeps, per head and chunk, matrices
# of chunk x chunk (the segment sums and their decay): per token the head term grows with the
# chunk, and the chunk states, one per chunk, shrink with it. Measured on whole steps of a
# Granite-4.0-H-like tiny model (no experts, full fine-tuning, b2 x 1024) at 128 and 256:
# 7,980 bytes more per token and Mamba layer at 256, where these two scalings give 8,078.
MAMBA_FIT_CHUNK: Final = 128
# The fit's mixer gates its output through an RMSNorm (Nemotron-H's, in fp32). Without it
# (Falcon-H1's mamba_rms_norm false) the mixer keeps 10 V less on a frozen base and 8 V less
# when trained: whole steps of a tiny Falcon-H1 with and without it (b2 x 1024, 4 layers,
# V 512: 5,128 and 4,107 bytes per token and layer; tools/calibrate/results/cpu-hybrid.json).
MAMBA_GATED_NORM_VALUE: Final = 10
MAMBA_GATED_NORM_FULL_VALUE: Final = 8

# Qwen's hybrid attention multiplies its output by a sigmoid gate from q_proj's second half:
# the gate and its sigmoid, bf16, 4 bytes per q width.
OUTPUT_GATE_BYTES: Final = 4


def mixer_bytes_per_token(mixer: MixerLayers, *, trained: bool) -> int:
    """One linear-attention or Mamba layer's saved bytes per token (module docstring)."""
    if mixer.kind == "gated_deltanet":
        frozen = (DELTANET_KEY * mixer.key_dim
                  + DELTANET_EXPANDED_KEY_HALVES * mixer.expanded_key_dim // 2
                  + DELTANET_VALUE * mixer.value_dim + DELTANET_HEAD * mixer.heads
                  + mixer.heads * mixer.state_per_head // DELTANET_STATE_DIVISOR)
        return frozen + (DELTANET_FULL_VALUE_EXTRA * mixer.value_dim if trained else 0)
    chunk = mixer.chunk_size or MAMBA_FIT_CHUNK
    frozen = (MAMBA_VALUE * mixer.value_dim + MAMBA_KEY * mixer.key_dim
              + MAMBA_HEAD * mixer.heads * chunk // MAMBA_FIT_CHUNK
              + MAMBA_EXPANDED_KEY * mixer.expanded_key_dim
              + mixer.heads * mixer.state_per_head * MAMBA_STATE_NUM * MAMBA_FIT_CHUNK
              // (MAMBA_STATE_DEN * chunk))
    if not mixer.gated_norm:
        frozen -= (MAMBA_GATED_NORM_FULL_VALUE if trained else MAMBA_GATED_NORM_VALUE
                   ) * mixer.value_dim
    return frozen + (MAMBA_FULL_VALUE_EXTRA * mixer.value_dim if trained else 0)


def average_layer_bytes(shape: ModelShape, *, attention: int, mlp: int, norms: int,
                        adapters_total: int, trained: bool) -> int:
    """The average over the layers of a hybrid's per-token bytes.

    ``attention``: one attention layer's own tensors; ``mlp``: one MLP (or experts) layer's;
    ``norms``: one norm's, counted ``norms_per_layer`` times a layer (Qwen's hybrids, Granite
    4.0 H and Falcon-H1 two, Nemotron-H one a block; the gated RMSNorm inside a Mamba-2 mixer
    is in the mixer's own terms);
    ``adapters_total``: every LoRA adapter's, all layers together."""
    mixer = shape.mixer
    assert mixer is not None
    blocks = shape.num_layers
    norm_count = shape.norms_per_layer * blocks
    gate = OUTPUT_GATE_BYTES * shape.q_width if mixer.kind == "gated_deltanet" else 0
    total = (mixer.attention_layers * (attention + gate)
             + mixer.layers * mixer_bytes_per_token(mixer, trained=trained)
             + mixer.mlp_layers * mlp + norm_count * norms + adapters_total)
    return -(-total // blocks)
