"""What a training step keeps alive besides the model states, per token and per phase.

The per-token counts are derived from what a real Hugging Face training step keeps alive,
measured tensor by tensor with PyTorch's MemTracker (``shared/reference/activation-findings.md``;
re-measured by our own harness in ``tools/calibrate/``), not from the GPT-era ``34*s*b*h``
formula (Korthikanti et al., arXiv 2205.05198), which misses SwiGLU's four intermediate-wide
tensors, RMSNorm's fp32 upcast and the fp32 loss head, and assumes eager attention.

Symbols: h hidden, i intermediate, hkv = kv heads x head_dim, nh heads, V vocabulary, r LoRA
rank, t = micro-batch x sequence tokens, s sequence length. Bytes per token per decoder layer.

Regimes (which tensors are bf16 or fp32):

* ``bf16``: full fine-tuning of a bf16 model whose fp32 master copy lives in the optimizer
  (the ZeRO accounting; DeepSpeed/FSDP bf16 mixed precision).
* ``amp``: fp32 weights under ``torch.autocast(bfloat16)``: the Hugging Face Trainer with
  ``bf16=True`` (the hf accounting). Autocast keeps a bf16 copy of each linear weight alive
  from its forward use until its backward.
* ``lora``: frozen bf16 base, fp32 PEFT adapters, autocast (the usual LoRA recipe; QLoRA in
  pure bf16).
* ``qlora``: the Hugging Face/PEFT QLoRA recipe: NF4 linear layers after
  ``prepare_model_for_kbit_training``, whose fp32 embeddings and norms put the residual stream
  in fp32; each 4-bit layer returns its output in its input's dtype (bitsandbytes
  ``Linear4bit.forward``: ``.to(inp_dtype)``), so the MLP's intermediate tensors are fp32 too.
  Measured with bitsandbytes 0.50.2 (``tools/calibrate/results/cpu-qlora.json``).

The peak is a maximum over phases, not a sum: at the start of backward (the usual peak) no
gradient exists yet, and by the optimizer step every activation is gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from itertools import compress
from operator import attrgetter, floordiv, lt, mul
from typing import Literal

from app.engine import framework_unsloth as unsloth
from app.engine.activations_hybrid import average_layer_bytes
from app.engine.shapes import ModelShape
from app.engine.states import LoraSetup, Method, MoeLora, lora_target_specs, packed_specs

Attention = Literal["flash", "sdpa", "eager"]
LossHead = Literal["standard", "chunked"]
Regime = Literal["bf16", "amp", "lora", "qlora"]

ATTENTIONS: tuple[Attention, ...] = ("flash", "sdpa", "eager")
LOSS_HEADS: tuple[LossHead, ...] = ("standard", "chunked")

# Per-layer constant: the fp32 rsqrt statistics of two RMSNorms (2 x 4 bytes per token).
NORM_STATS_BYTES = 8

# Eager attention keeps the fp32 softmax output and its bf16 copy: 6 * nh * s bytes per token
# per layer (activation-findings.md, "Eager attention adds 6*nh*s"); SDPA/flash keep only the
# fp32 logsumexp (4 * nh), linear in s.
EAGER_SCORE_BYTES = 6
LOGSUMEXP_BYTES = 4
# Eager attention while one layer computes its scores: beyond what is saved, the masked bf16
# scores (forward) and the gradient through the softmax (backward), bytes per score; with
# attention sinks, multiples of the sink logit's bytes (eager_score_bytes). Fitted on
# tools/calibrate/results/cpu-moe.json (eager cases of tiny DeepSeek-V3 and gpt-oss).
EAGER_FORWARD_TRANSIENT_BYTES = 2
EAGER_BACKWARD_TRANSIENT_BYTES = 6
SINK_FORWARD_TRANSIENT_SCORES = 2
SINK_BACKWARD_TRANSIENT_SCORES = 2
# Gemma 2's attention soft-capping (scores / cap, tanh, * cap) keeps tanh's bf16 output for
# its backward: 2 more bytes per score (transformers' Gemma2 eager_attention_forward; our grid,
# tools/calibrate/results/cpu-grid.json, tiny-gemma2 cases).
SOFTCAP_SCORE_BYTES = 2
# The same for the final logits: tanh's bf16 output, 2 bytes per token per vocabulary entry,
# alive from the forward through the loss head's backward.
SOFTCAP_LOGIT_BYTES_PER_VOCAB = 2
# Eager attention takes an additive 4D causal mask (batch x 1 x s x s) in the activations'
# dtype: bf16 (2 bytes) on a bf16 base, fp32 (4) under amp with fp32 weights. It lives through
# the forward; gradient checkpointing (non-reentrant) saves it with each layer's inputs, so
# then it lives until the backward too. SDPA and flash attention use is_causal and build none.
MASK_BYTES: dict[str, int] = {"bf16": 2, "lora": 2, "amp": 4, "qlora": 4}

# Loss head, bytes per token per vocabulary entry (activation-findings.md, "The loss head"):
# forward at the log-softmax: bf16 logits + fp32 copy + fp32 log-softmax = 2 + 4 + 4;
# saved at the end of the forward: the fp32 log-softmax, 4;
# start of backward: log-softmax + two fp32 gradients = 4 + 8.
LOSS_FORWARD_BYTES_PER_VOCAB = 10
LOSS_SAVED_BYTES_PER_VOCAB = 4
LOSS_BACKWARD_EXTRA_BYTES_PER_VOCAB = 8
# Full fine-tuning also holds the fp32 gradient of the final hidden state at that moment.
LOSS_BACKWARD_HIDDEN_BYTES_FULL = 8

# Chunked / fused cross-entropy (Liger Kernel's fused linear cross-entropy, torchtune's chunked
# loss) materialises logits for one chunk of tokens at a time. Modelled, not yet measured.
CHUNKED_LOSS_TOKENS = 1024

# Gradient checkpointing (non-reentrant) keeps only each layer's input: bf16 (2h) or, under
# amp with fp32 weights, fp32 (4h) (activation-findings.md, last row of the table).
CHECKPOINT_INPUT_BYTES: dict[Regime, int] = {"bf16": 2, "lora": 2, "amp": 4, "qlora": 4}

# QLoRA under prepare_model_for_kbit_training: the gated MLP's three saved intermediate tensors
# (gate output, its activation, up output) are fp32 (4 bytes) instead of bf16 (2): 6i more per
# token per layer than a bf16 base (2i for a plain MLP's two). Measured, tiny-llama 2 and 4
# layers (tools/calibrate/results/cpu-qlora.json).
QLORA_FP32_MLP_EXTRA_BYTES = 4 - 2

# bitsandbytes before 0.43.2 kept every 4-bit layer's input A for the backward
# (``ctx.tensors = (A, B)`` in MatMul4Bit.forward: 0.41.0 bitsandbytes/autograd/_functions.py
# line 523, 0.43.1 line 516; removed by commit 9e753741, "fix QLoRA mem bug: delete useless
# buffered activation", #1270, released in 0.43.2; 0.50.1 line 358 keeps ``(None, B)``). A is
# ``x.to(compute_dtype)``: a new bf16 copy (2 bytes per input feature) wherever the input is
# fp32, the same tensor where it is already bf16. Measured by emulating the old line on
# bitsandbytes 0.50.2 (tools/calibrate/harness.py, bnb_saves_inputs_emulation).
BNB_SAVED_INPUT_BYTES = 2

# Activation offloading (torchtune's OffloadActivations; DeepSpeed CPU checkpointing) keeps
# about two layers' activations on the GPU (one being computed, one in transfer).
OFFLOADED_LAYERS_ON_GPU = 2
# With gradient checkpointing as well (the pair torchtune's memory-optimisation docs recommend),
# the tensors offloaded are the checkpoints: one saved input per layer. OffloadActivations keeps
# up to ``max_fwd_stash_size`` = 5 offloaded tensors alive on the GPU until their copy to the
# CPU has finished (torchtune/training/_activation_offloading.py, default 5), so at most five
# layers' inputs stay; the layer recomputed in the backward is counted as before.
OFFLOAD_STASH_TENSORS = 5


@dataclass(frozen=True, slots=True)
class ActivationSetup:
    method: Method
    regime: Regime
    attention: Attention = "flash"
    gradient_checkpointing: bool = False
    lora: LoraSetup | None = None
    loss_head: LossHead = "standard"
    activation_offload: bool = False
    bnb_saves_inputs: bool = False
    # Unsloth's LoRA kernels and checkpointing (framework_unsloth.py, points 3 and 5).
    unsloth: bool = False


@dataclass(frozen=True, slots=True)
class ActivationProfile:
    """Activation bytes as coefficients, so that any micro-batch b and sequence s cost O(1).

    A term is ``per_token * t + per_token_per_seq * t * s`` (the second only for eager
    attention, quadratic in s).
    """

    layer_per_token: int
    layer_per_token_per_seq: int
    saved_per_token: int
    saved_per_token_per_seq: int
    loss_forward_per_token: int
    loss_backward_per_token: int
    chunked_loss: bool
    vocab_size: int
    # Alive only until the end of the forward (eager attention's causal masks without
    # checkpointing), per token per key position.
    forward_only_per_token_per_seq: int = 0
    # Eager attention's scores beyond what is saved, alive while one layer computes them
    # (forward) or differentiates them (backward), per token per key position.
    attention_forward_per_token_per_seq: int = 0
    attention_backward_per_token_per_seq: int = 0

    def saved_layers_bytes(self, tokens: int, seq_len: int) -> int:
        """Activations saved by all decoder layers for the backward pass."""
        return tokens * (self.saved_per_token + self.saved_per_token_per_seq * seq_len)

    def one_layer_bytes(self, tokens: int, seq_len: int) -> int:
        """One layer's full activations (recomputed during backward under checkpointing)."""
        return tokens * (self.layer_per_token + self.layer_per_token_per_seq * seq_len)

    def loss_forward_bytes(self, tokens: int) -> int:
        return self._loss_tokens(tokens) * self.loss_forward_per_token

    def loss_backward_bytes(self, tokens: int) -> int:
        return self._loss_tokens(tokens) * self.loss_backward_per_token

    def _loss_tokens(self, tokens: int) -> int:
        return min(tokens, CHUNKED_LOSS_TOKENS) if self.chunked_loss else tokens


def regime_for(method: Method, accounting: str) -> Regime:
    """The precision regime a method and accounting imply (module docstring)."""
    if method != "full":
        return "lora"
    return "amp" if accounting == "hf" else "bf16"


def full_layer_bytes_per_token(shape: ModelShape, regime: Regime) -> int:
    """Full fine-tuning, one decoder layer, SDPA: bf16 ``8i + 20h + 4hkv + 4nh + 8``;
    amp ``8i + 30h + 4hkv + 4nh + 8`` (activation-findings.md, table "Per decoder layer").

    Where the bf16 bytes go: the gated MLP keeps four i-wide tensors (8i); each of the two
    RMSNorms feeding a linear keeps an fp32 copy of its input and its bf16 normalised input and
    output (8h each); q after RoPE and the attention output (4h); k and v (4hkv); the fp32
    logsumexp (4nh). Under amp the residual stream and the norms run in fp32 (13h per norm).
    Norms beyond those two (Gemma's post-attention/post-feed-forward norms) keep their fp32
    input and normalised value; Qwen3's and Gemma 3's per-head q/k norms likewise.
    """
    h = shape.hidden_size
    main_norm, extra_norm, qk_norm_per_width = (13, 8, 8) if regime == "amp" else (8, 6, 6)
    norms = 2 * main_norm * h + (shape.norms_per_layer - 2) * extra_norm * h
    norms += main_norm * shape.latent_norm_width  # MLA's latent norms feed linear layers
    attention = 4 * shape.q_width + 4 * shape.kv_width + LOGSUMEXP_BYTES * shape.num_heads
    qk_norm = qk_norm_per_width * (shape.q_width + shape.kv_width) if shape.qk_norm else 0
    if shape.mixer is not None:  # a hybrid: the average of its layers (activations_hybrid.py)
        return average_layer_bytes(
            shape, attention=attention + qk_norm, mlp=_mlp_bytes(shape, trainable=True),
            norms=main_norm * h + NORM_STATS_BYTES // 2, adapters_total=0, trained=True,
        )
    return _mlp_bytes(shape, trainable=True) + norms + attention + qk_norm + NORM_STATS_BYTES


def lora_layer_bytes_per_token(shape: ModelShape, lora: LoraSetup) -> int:
    """LoRA on a frozen bf16 base under autocast, one decoder layer, SDPA.

    Frozen linear layers save nothing for their weights, so the base keeps
    ``6i + 12h + 4hkv + 4nh + 8`` (RMSNorm's fp32 inputs, q and attention output, k, v, the
    three SwiGLU tensors). Each adapted linear of input width w adds ``(2 + m) * w + 2r``: its
    own bf16 copy of the input, a 1-byte dropout mask when dropout > 0 (m = 1), and the
    rank-wide output of lora_A (activation-findings.md, "a per-module rule fits every target
    set measured").
    """
    h = shape.hidden_size
    mlp = _mlp_bytes(shape, trainable=False)
    norms = shape.norms_per_layer * 4 * h + 4 * shape.latent_norm_width
    attention = 2 * shape.q_width + 2 * shape.q_width + 4 * shape.kv_width
    attention += LOGSUMEXP_BYTES * shape.num_heads
    qk_norm = 4 * (shape.q_width + shape.kv_width) if shape.qk_norm else 0
    mask = 1 if lora.dropout > 0 else 0
    adapters = 0
    for spec in lora_target_specs(shape, lora.targets, lora.moe_lora):
        if spec.role == "lm_head":
            continue  # outside the decoder layers: lora_head_bytes_per_token
        per_layer = spec.layers / shape.num_layers
        routed = spec.active_copies if spec.copies > 1 else 1
        # A fused gate/up expert tensor: one input copy and a 2r-wide lora_A output (fused),
        # or the two layers' own each (per-expert). Modelled from the per-module rule.
        factor = spec.lora_rank_factor
        inputs = 1 if lora.moe_lora == "fused" else factor
        per_module = inputs * (2 + mask) * spec.in_features + 2 * lora.rank * factor
        adapters += round(per_layer * routed * per_module)
    if shape.mixer is not None:  # a hybrid: the average of its layers (activations_hybrid.py)
        return average_layer_bytes(
            shape, attention=attention + qk_norm, mlp=mlp, norms=4 * h + NORM_STATS_BYTES // 2,
            adapters_total=adapters * shape.num_layers, trained=False,
        )
    return mlp + norms + attention + qk_norm + adapters + NORM_STATS_BYTES


def lora_head_bytes_per_token(shape: ModelShape, lora: LoraSetup | None) -> int:
    """A LoRA adapter on lm_head, the same per-module rule as in the layers: its bf16 copy of
    the final hidden state (2h), a dropout mask (h) when dropout > 0, and lora_A's rank-wide
    output (2r). It sits after the last decoder layer, outside any checkpointed block, so it is
    saved with or without gradient checkpointing; 0 when lm_head is not a target."""
    if lora is None or not any(
        spec.role == "lm_head" for spec in lora_target_specs(shape, lora.targets, lora.moe_lora)
    ):
        return 0
    mask = 1 if lora.dropout > 0 else 0
    return (2 + mask) * shape.hidden_size + 2 * lora.rank


def qlora_fp32_mlp_bytes_per_token(shape: ModelShape) -> int:
    """The extra bytes of the MLP's fp32 intermediates under the ``qlora`` regime, per token per
    layer: 6i for a gated MLP (three tensors), 2i for a plain one (two)."""
    width = mlp_width_per_token(shape)[0]
    tensors = 3 if shape.gated_mlp else 2
    return QLORA_FP32_MLP_EXTRA_BYTES * tensors * width


def bnb_saved_inputs_bytes_per_token(shape: ModelShape, regime: Regime,
                                     moe_lora: MoeLora = "fused") -> tuple[int, int]:
    """What bitsandbytes < 0.43.2 kept per token per decoder layer: the input of every 4-bit
    layer (:data:`BNB_SAVED_INPUT_BYTES`; :func:`states.packed_specs`: fused experts are not
    4-bit), as ``(all layers, the attention projections' share)``.

    ``qlora`` regime (fp32 residual stream, measured): each 4-bit layer casts its fp32 input to
    its own bf16 copy (q, k and v each one), except o_proj, whose input is the attention
    kernel's bf16 output, which the kernel saves anyway. Otherwise (pure bf16, unmeasured) the
    input is already bf16 and only the tensor itself is kept alive: once per distinct input
    (the normalised input of the attention block, of the MLP, and down_proj's input).

    The second number is the share of the layers reading the attention block's input: without
    checkpointing the first layer's input needs no gradient (the frozen embedding), so its
    projections keep nothing (bitsandbytes saves A only when an input needs a gradient).
    """
    if regime == "qlora":
        attention = sum(BNB_SAVED_INPUT_BYTES * spec.in_features * spec.copies
                        for spec in shape.linears if spec.role in ("q", "k", "v", "qkv"))
        rest = sum(BNB_SAVED_INPUT_BYTES * spec.in_features * spec.active_copies
                   for spec in packed_specs(shape, moe_lora)
                   if spec.role not in ("q", "k", "v", "qkv", "o"))
        return attention + rest, attention
    width = mlp_width_per_token(shape)[0]
    attention = BNB_SAVED_INPUT_BYTES * shape.hidden_size
    return attention + BNB_SAVED_INPUT_BYTES * (shape.hidden_size + width), attention


def mlp_width_per_token(shape: ModelShape) -> tuple[int, float]:
    """The MLP width one token passes through, averaged over the decoder layers, and the share
    of layers that route (``(width, sparse share)``).

    A dense model: ``intermediate_size``. A mixture of experts (not a hybrid, whose average is
    activations_hybrid.py's): read off its linear layers, so that first dense layers
    (DeepSeek, GLM: ``first_k_dense_replace``; Qwen3-MoE's ``mlp_only_layers``; Llama 4's
    interleaved dense layers) count their own width and a shared expert (DeepSeek, GLM, Llama
    4) counts beside the routed ones: every up (or fc) projection's width, the fused gate/up's
    half, times the experts a token passes, weighted by the layers that have it. Measured
    against tiny DeepSeek-V3 at 3 and 5 layers (one dense, a shared expert;
    tools/calibrate/results/cpu-moe.json)."""
    if not shape.is_moe:
        return shape.intermediate_size, 0.0
    routed = shape.moe_intermediate_size * shape.experts_per_token
    if shape.mixer is not None:
        return routed, 1.0
    # itertools/operator: no Python-level step per kind (test_config_bounds counts them)
    roles = map(attrgetter("role"), shape.linears)
    ups = tuple(compress(shape.linears, map(_UP_WIDTH_DIVISOR.__contains__, roles)))
    widths = map(floordiv, map(attrgetter("out_features"), ups),
                 map(_UP_WIDTH_DIVISOR.__getitem__, map(attrgetter("role"), ups)))
    width = sum(map(mul, map(mul, widths, map(attrgetter("active_copies"), ups)),
                    map(attrgetter("layers"), ups)))
    experts = compress(ups, map(partial(lt, 1), map(attrgetter("copies"), ups)))
    sparse = max(map(attrgetter("layers"), experts), default=0)
    layers = shape.num_layers
    return round(width / layers), sparse / layers


_UP_WIDTH_DIVISOR: dict[str, int] = {"up": 1, "fc": 1, "gate_up": 2}
"""The MLP projections whose output width a token's MLP activations follow, and the share of
that width per tensor (a fused gate/up holds both halves)."""


def _mlp_bytes(shape: ModelShape, *, trainable: bool) -> int:
    """The MLP's saved bf16 tensors per token.

    Gated MLP (SwiGLU, GeGLU): gate output, act(gate), up output and their product (8i) when
    trained; the product (down_proj's input) is not saved when down_proj is frozen (6i). Plain
    MLP (GPT-2): fc output and its activation (4i), 2i when frozen. A mixture of experts sends
    each token through ``experts_per_token`` experts of width ``moe_intermediate_size``; the
    router keeps fp32 logits and routing weights and each routed token its gathered input.
    """
    width, sparse = mlp_width_per_token(shape)
    routing = round(sparse * (8 * shape.num_experts
                              + 4 * shape.hidden_size * shape.experts_per_token))
    if shape.gated_mlp:
        per_width = 8 if trainable else 6
    else:
        per_width = 4 if trainable else 2
    return per_width * width + routing


def sink_score_bytes(regime: Regime) -> int:
    """Bytes of one attention-sink logit (gpt-oss): transformers' GptOss eager attention adds
    the mask and concatenates the sinks to the bf16 scores, so the softmax runs in the dtype
    they promote to: fp32 where the parameters are fp32 (full fine-tuning under amp, QLoRA
    after prepare_model_for_kbit_training), bf16 on a bf16 base."""
    return 4 if regime in ("amp", "qlora") else 2


def eager_score_bytes(shape: ModelShape, regime: Regime) -> tuple[int, int, int]:
    """Eager attention, bytes per score (one head, one query, one key), as ``(saved for the
    backward, more alive while one layer's forward computes them, more while one layer's
    backward differentiates them)``.

    Standard (transformers' ``eager_attention_forward``): the fp32 softmax and its bf16 copy
    are saved (6; Gemma 2's soft-capping 2 more, tanh's output); the masked bf16 scores are
    alive beside them until the copy exists (2). With sinks (gpt-oss, :func:`sink_score_bytes`
    = d): the softmax output is saved in d, with a bf16 copy when d is 4; the masked scores,
    the concatenation with the sinks less its maximum and the softmax are alive together
    (``attn_weights``, ``combined_logits`` and ``probs`` are held by name until the function
    returns). The backward's transient is the gradient flowing through the softmax (fp32 for
    the standard path) beside what is saved. Fitted on whole steps with small vocabularies,
    where one layer's scores, not the loss head, set the peak: tiny DeepSeek-V3 and gpt-oss
    (tools/calibrate/results/cpu-moe.json)."""
    if shape.attention_sinks:
        d = sink_score_bytes(regime)
        saved = d + (2 if d == 4 else 0)
        return saved, SINK_FORWARD_TRANSIENT_SCORES * d, SINK_BACKWARD_TRANSIENT_SCORES * d
    saved = EAGER_SCORE_BYTES + (SOFTCAP_SCORE_BYTES if shape.attention_softcap else 0)
    return saved, EAGER_FORWARD_TRANSIENT_BYTES, EAGER_BACKWARD_TRANSIENT_BYTES


def eager_bytes_per_token_per_seq(shape: ModelShape, attention: Attention,
                                  regime: Regime = "lora") -> int:
    """Eager attention's saved score matrices per token per key position: ``6 * nh`` (``8 *
    nh`` with Gemma 2's soft-capping, :func:`eager_score_bytes` with sinks)."""
    if attention != "eager":
        return 0
    return eager_score_bytes(shape, regime)[0] * shape.num_heads


def mask_bytes_per_token_per_seq(shape: ModelShape, attention: Attention, regime: Regime) -> int:
    """Eager attention's causal masks, one per mask kind the model builds."""
    return shape.mask_kinds * MASK_BYTES[regime] if attention == "eager" else 0


def _layer_bytes_per_token(shape: ModelShape, setup: ActivationSetup) -> int:
    """One decoder layer's saved tensors per token under the setup's method and kernels."""
    if setup.method == "full":
        return full_layer_bytes_per_token(shape, setup.regime)
    if setup.unsloth and unsloth.fast_lora_applies(shape, setup.lora):
        return unsloth.fast_lora_layer_bytes_per_token(shape)
    layer = lora_layer_bytes_per_token(shape, setup.lora or LoraSetup())
    if setup.regime == "qlora":
        layer += qlora_fp32_mlp_bytes_per_token(shape)
    return layer


def activation_profile(shape: ModelShape, setup: ActivationSetup) -> ActivationProfile:
    """Coefficients of every activation term for this model and setup."""
    layer = _layer_bytes_per_token(shape, setup)
    quad = eager_bytes_per_token_per_seq(shape, setup.attention, setup.regime)
    fwd_transient = bwd_transient = 0
    if setup.attention == "eager":
        _, fwd_score, bwd_score = eager_score_bytes(shape, setup.regime)
        fwd_transient, bwd_transient = fwd_score * shape.num_heads, bwd_score * shape.num_heads
    layers = shape.num_layers
    bnb_inputs, bnb_first_layer_skip = (
        bnb_saved_inputs_bytes_per_token(shape, setup.regime, (setup.lora or LoraSetup()).moe_lora)
        if setup.method == "qlora" and setup.bnb_saves_inputs else (0, 0)
    )
    masks = mask_bytes_per_token_per_seq(shape, setup.attention, setup.regime)
    forward_only_quad = masks
    if setup.gradient_checkpointing:
        stash = unsloth.CHECKPOINTS_ON_GPU if setup.unsloth else OFFLOAD_STASH_TENSORS
        kept_inputs = min(layers, stash) if setup.activation_offload else layers
        saved = CHECKPOINT_INPUT_BYTES[setup.regime] * shape.hidden_size * kept_inputs
        saved_quad = masks
        forward_only_quad = 0
        if setup.unsloth and setup.activation_offload:
            # Unsloth's GPU copy buffers stay allocated through the backward, one of them
            # holding the recomputed layer's input (framework_unsloth.py, point 5).
            layer += saved
    elif setup.activation_offload:
        kept = min(layers, OFFLOADED_LAYERS_ON_GPU)
        saved, saved_quad = (layer + bnb_inputs) * kept, quad * kept
    else:
        saved, saved_quad = layer * layers, quad * layers
        saved += bnb_inputs * layers - bnb_first_layer_skip
    # The layer recomputed in the backward (checkpointing: reentrant, as prepare_model_for_
    # kbit_training leaves it, runs the old bitsandbytes forward under grad there) keeps its
    # inputs until its own backward too.
    layer += bnb_inputs
    if setup.method != "full":
        saved += lora_head_bytes_per_token(shape, setup.lora)
    v = shape.vocab_size
    backward_hidden = LOSS_BACKWARD_HIDDEN_BYTES_FULL * shape.hidden_size
    softcap = SOFTCAP_LOGIT_BYTES_PER_VOCAB * v if shape.final_logit_softcap else 0
    return ActivationProfile(
        layer_per_token=layer,
        layer_per_token_per_seq=quad,
        saved_per_token=saved,
        saved_per_token_per_seq=saved_quad,
        loss_forward_per_token=LOSS_FORWARD_BYTES_PER_VOCAB * v + softcap,
        loss_backward_per_token=(LOSS_SAVED_BYTES_PER_VOCAB + LOSS_BACKWARD_EXTRA_BYTES_PER_VOCAB)
        * v
        + softcap
        + (backward_hidden if setup.method == "full" else 0),
        chunked_loss=setup.loss_head == "chunked",
        vocab_size=v,
        forward_only_per_token_per_seq=forward_only_quad,
        attention_forward_per_token_per_seq=fwd_transient,
        attention_backward_per_token_per_seq=bwd_transient,
    )
