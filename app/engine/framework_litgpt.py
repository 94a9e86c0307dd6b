"""What LitGPT's fine-tuning scripts hold beyond the model the other stacks build
(``framework="litgpt"``).

Read from the source, not fitted: Lightning-AI/litgpt at ``e5493986`` (2024-07-22, the config
hub's QLoRA rows) and ``00af8b0d`` (2024-09-27, its Llama 3.2 rows), lit-gpt at ``8641822``
(2023-10-16, the resource tables), Lightning's bitsandbytes plugin
(``src/lightning/fabric/plugins/precision/bitsandbytes.py``, lightning 2.3.0, which those
litgpt releases pin) and bitsandbytes 0.42.0 (the release litgpt pins:
``"bitsandbytes==0.42.0"`` in pyproject.toml at ``00af8b0d``).

1. **Its own output layer.** ``convert_hf_checkpoint.py`` copies a tied embedding into
   ``lm_head.weight`` (``copy_weights_hf_llama`` and ``copy_weights_gemma_2``: ``if
   "lm_head.weight" not in state_dict: state_dict["lm_head.weight"] =
   state_dict["transformer.wte.weight"]``, lines 206-207 and 281-282 at ``00af8b0d``) and
   ``GPT`` builds ``self.lm_head = nn.Linear(...)`` next to the embedding without tying them
   (``litgpt/model.py`` line 25); the fine-tuning scripts refuse ``tie_embeddings``
   (``validate_args``). A checkpoint with tied embeddings therefore holds vocabulary x hidden
   more parameters under LitGPT (Llama 3.2 1B: 263 M; Gemma 2 9B: 918 M): :func:`as_built`.
2. **QLoRA quantises the output layer too.** Lightning's ``BitsandbytesPrecision`` replaces
   every ``torch.nn.Linear`` (``module_init_context``: ``_ClassReplacementContextManager(
   {"torch.nn.Linear": self._linear_cls})``; ``convert_module``: ``_convert_layers`` with no
   ``ignore_modules``, and litgpt passes none), so ``lm_head`` is NF4 like the block layers:
   :func:`quantised_head_bytes`.
3. **Dequantised in fp16, then cast.** Lightning quantises each weight from an fp16 copy
   (``_Linear4bit.quantize``: ``w = weight.contiguous().to(device=device, dtype=torch.half)``),
   so bitsandbytes records fp16 as the weight's dtype (``quantize_4bit``: ``QuantState(...,
   dtype=A.dtype)``) and ``dequantize_4bit`` returns fp16 (``torch.empty(quant_state.shape,
   dtype=quant_state.dtype)``). ``MatMul4Bit`` then casts it to the activations' bf16
   (``F.dequantize_4bit(B, quant_state).to(A.dtype)``, forward line 516 and backward line 546
   of ``bitsandbytes/autograd/_functions.py`` 0.42.0): the fp16 weight and its bf16 copy, 4
   bytes per parameter, of the layer being computed. The largest 4-bit layer is the output
   layer: :func:`dequantised_bytes`.
4. **What bitsandbytes before 0.43.2 keeps** (``ctx.tensors = (A, B)``, activations.py) is each
   4-bit layer's input, one tensor per distinct input: in LitGPT ``norm_1``'s output (the fused
   qkv), the attention output, ``norm_2``'s output (``fc_1`` and ``fc_2`` share it), the MLP
   product (``proj``), and once per token the final norm's output for the 4-bit ``lm_head``.
   The attention output is a copy only the 4-bit ``proj`` keeps: ``scaled_dot_product_attention``
   returns ``y.transpose(1, 2)`` and ``y.reshape(B, T, ...)`` re-assembles it (``model.py``
   lines 313 and 286 at ``e5493986``). The engine's pure-bf16 count has the other three
   (:func:`activations.bnb_saved_inputs_bytes_per_token`); :func:`extra_bnb_inputs` adds these
   two.
5. **The previous micro-step lives into the next forward.** ``fit()`` assigns ``logits =
   model(input_ids, lm_head_chunk_size=128)`` (``litgpt/finetune/lora.py``, line 304 at
   ``e5493986``, line 355 at ``26857050``): the previous step's list of bf16 logit chunks is let
   go only when the new forward returns, and through their ``grad_fn`` it keeps the previous
   step's autograd graph. PyTorch frees what ``save_for_backward`` saved once the backward has
   run, but bitsandbytes before 0.43.2 keeps ``A`` as a plain attribute of ``ctx``, which lives
   as long as the graph: through the whole next forward every 4-bit layer's input of the
   previous step is still allocated, beside the previous logits. The peak of such a run is the
   larger of the step's own peak and the end of the next forward with that step's inputs and
   logits still held (:func:`retained_per_token`); with bitsandbytes 0.43.2 or later only the
   previous logits stay. A run whose longest batch comes first and is followed by shorter ones
   (lit-gpt 2023 forced the longest sample into the first step) never reaches that moment at
   its longest length; the engine sizes steady steps, every one at the job's batch and length.
6. **Gradient accumulation under FSDP keeps whole gradients.** The scripts accumulate with
   ``fabric.no_backward_sync(model, enabled=is_accumulating)`` (``finetune/lora.py`` at
   ``8641822``, line 215; ``litgpt/finetune/lora.py`` at ``e5493986``, line 303), which
   Lightning's FSDP strategy turns into ``module.no_sync()`` (``_FSDPBackwardSyncControl``,
   ``src/lightning/fabric/strategies/fsdp.py`` line 773 at lightning ``71aed751``). Under
   ``no_sync`` FSDP keeps each unit's gradient unsharded until the step that synchronises
   (PyTorch pull request 90546: "``no_sync()`` introduces a separate case where a
   ``FlatParameter`` maintains an *unsharded* gradient"). Lightning sets ``use_orig_params=True``
   (line 175 there), with which a unit holding any trainable parameter makes its whole flat
   parameter require a gradient (PyTorch issue 91167): with LoRA on the blocks, every block's
   frozen weights get a gradient too. Each GPU therefore holds the unsharded gradients of every
   block that trains anything, in the parameters' dtype, for all but the last micro-step:
   :func:`no_sync_gradient_bytes`. The published 2-GPU and 4-GPU LoRA runs of the resource
   tables (Llama 2 7B: 22.18 GB on 2 GPUs against 21.30 on one) are this.
7. **The value keeps the fused qkv output alive.** LitGPT computes q, k and v with one fused
   linear layer and takes them apart as views: ``qkv.view(B, T, n_query_groups, total_qkv,
   head_size).permute(0, 2, 3, 1, 4)``, ``q, k, v = qkv.split((q_per_kv, 1, 1), dim=2)`` and
   ``v.reshape(B, -1, T, head_size)`` (``lit_gpt/model.py`` lines 201-215 at ``8641822``;
   ``litgpt/model.py`` lines 243-254 at ``e5493986``). q and k become new tensors through
   ``apply_rope`` and ``torch.cat`` (lines 217-220 there), but with one key/value head per query
   head the ``expand`` is a no-op (``8641822``) or skipped (``if self.config.n_query_groups !=
   self.config.n_head``, ``e5493986`` line 248), so ``reshape`` returns a view and ``v`` stays a
   strided view of the fused output. ``scaled_dot_product_attention`` saves its ``value`` for the
   backward (PyTorch ``derivatives.yaml``, ``_scaled_dot_product_flash_attention``: ``query,
   key, value, output, logsumexp``; the flash kernel takes a strided value, it only needs the
   last stride to be 1), and a saved view holds its whole storage: every layer keeps the q and k
   parts of its fused output beside the q and k copies that attention saved. The Hugging Face
   models the shared counts were measured on project v on its own (``v_proj``), so the count has
   only v's width: :func:`fused_value_view_per_token` adds the q and k widths. With grouped
   query attention the ``expand`` and ``reshape`` copy v to the query width, which frees the
   fused output, as Hugging Face's ``repeat_kv`` copies; nothing is added there.
"""

from __future__ import annotations

import dataclasses

from app.engine.activations import OFFLOADED_LAYERS_ON_GPU, ActivationProfile
from app.engine.precision import Framework
from app.engine.shapes import ModelShape
from app.engine.states import (
    LM_HEAD_TARGET,
    NF4_BITS,
    QUANT_STATE_MODULE_BYTES,
    LoraSetup,
    Quant,
    lora_target_specs,
)

LITGPT: Framework = "litgpt"

# Bytes per element of LitGPT's logits: its lm_head runs in the training dtype (bf16-true, or
# bf16 under bf16-mixed's autocast) and the chunks are kept as computed.
LOGIT_BYTES = 2
# bf16 bytes per element of a 4-bit layer's saved input (bitsandbytes casts A to the compute
# dtype, bf16 under LitGPT).
INPUT_BYTES = 2
# bf16 bytes per element of the fused qkv output (bf16-true, and bf16-mixed's autocast, compute
# the linear layer in bf16).
QKV_BYTES = 2
# The fp16 tensor dequantize_4bit returns plus the bf16 copy MatMul4Bit multiplies with
# (point 3 of the module docstring).
DEQUANTISED_BYTES_PER_PARAM = 2 + 2
# The moment point 5 adds to the step (StepModel.moments; EstimateResult.phases).
NEXT_FORWARD_MOMENT = "end of the next forward (previous step still held)"


def as_built(shape: ModelShape, framework: Framework) -> ModelShape:
    """The model as LitGPT holds it: a tied output layer becomes its own vocabulary x hidden
    parameter (point 1). Idempotent, and the identity for every other framework."""
    if framework != LITGPT or not shape.tied_embeddings:
        return shape
    head = shape.vocab_size * shape.hidden_size
    split = dataclasses.replace(shape.split, lm_head=shape.split.lm_head + head)
    return dataclasses.replace(shape, tied_embeddings=False, split=split)


def quantised_head_bytes(shape: ModelShape, quant: Quant, base_bytes: int) -> int:
    """What storing ``lm_head`` in NF4 with its quantisation state rather than at
    ``base_bytes`` per parameter changes in the weights (point 2; negative: it saves)."""
    head = shape.split.lm_head
    nf4 = round(head * NF4_BITS[quant] / 8) + QUANT_STATE_MODULE_BYTES[quant]
    return nf4 - base_bytes * head


def dequantised_bytes(shape: ModelShape) -> int:
    """The largest 4-bit layer's fp16 dequantised weight and its bf16 copy (point 3): the
    output layer, or a block layer where one is larger (LitGPT fuses q, k and v)."""
    fused_qkv = shape.hidden_size * (shape.q_width + 2 * shape.kv_width)
    block = max(max(s.in_features * s.out_features for s in shape.linears), fused_qkv)
    return DEQUANTISED_BYTES_PER_PARAM * max(shape.split.lm_head, block)


def extra_bnb_inputs(shape: ModelShape) -> tuple[int, int]:
    """Bytes per token bitsandbytes before 0.43.2 keeps under LitGPT beyond the engine's
    pure-bf16 count (point 4): ``(per decoder layer, once)``, the attention output's copy and
    the 4-bit ``lm_head``'s input."""
    return INPUT_BYTES * shape.q_width, INPUT_BYTES * shape.hidden_size


def _saved_layers(shape: ModelShape, gradient_checkpointing: bool,
                  activation_offload: bool) -> int:
    """How many decoder layers' saved tensors the graph holds at the end of a forward (as
    activations.activation_profile counts them): none under checkpointing, whose recomputed
    layers' graphs live only inside the backward."""
    if gradient_checkpointing:
        return 0
    if activation_offload:
        return min(shape.num_layers, OFFLOADED_LAYERS_ON_GPU)
    return shape.num_layers


def with_extra_bnb_inputs(profile: ActivationProfile, shape: ModelShape, *,
                          gradient_checkpointing: bool,
                          activation_offload: bool) -> ActivationProfile:
    """``profile`` with point 4's inputs: in every layer whose tensors are saved, in the layer
    recomputed under checkpointing, and the output layer's input once."""
    per_layer, once = extra_bnb_inputs(shape)
    layers = _saved_layers(shape, gradient_checkpointing, activation_offload)
    return dataclasses.replace(
        profile,
        saved_per_token=profile.saved_per_token + per_layer * layers + once,
        layer_per_token=profile.layer_per_token + per_layer,
    )


def fused_value_view_per_token(shape: ModelShape) -> int:
    """Bytes per token and decoder layer of the fused qkv output that the value's view keeps
    beyond v itself (point 7): its q and k parts in bf16, with one key/value head per query
    head; 0 with grouped or multi-query attention, where v is a copy."""
    if shape.kv_width != shape.q_width:
        return 0
    return QKV_BYTES * (shape.q_width + shape.kv_width)


def with_fused_value_view(profile: ActivationProfile, shape: ModelShape, *,
                          gradient_checkpointing: bool,
                          activation_offload: bool) -> ActivationProfile:
    """``profile`` with point 7's bytes in every layer whose tensors are saved and in the layer
    recomputed under checkpointing."""
    per_layer = fused_value_view_per_token(shape)
    layers = _saved_layers(shape, gradient_checkpointing, activation_offload)
    return dataclasses.replace(
        profile,
        saved_per_token=profile.saved_per_token + per_layer * layers,
        layer_per_token=profile.layer_per_token + per_layer,
    )


def retained_per_token(shape: ModelShape, *, bnb_layer_inputs: int, bnb_first_layer_skip: int,
                       gradient_checkpointing: bool, activation_offload: bool) -> int:
    """Bytes per token the previous micro-step still holds at the end of the next forward
    (point 5): its bf16 logits and, with bitsandbytes before 0.43.2, every 4-bit input its
    graph keeps (``bnb_layer_inputs`` per layer from
    :func:`activations.bnb_saved_inputs_bytes_per_token`, less the first layer's attention
    inputs, plus :func:`extra_bnb_inputs`); 0 inputs with bitsandbytes 0.43.2 or later
    (``bnb_layer_inputs`` 0)."""
    logits = LOGIT_BYTES * shape.vocab_size
    if bnb_layer_inputs == 0:
        return logits
    per_layer, once = extra_bnb_inputs(shape)
    layers = _saved_layers(shape, gradient_checkpointing, activation_offload)
    skip = bnb_first_layer_skip if layers == shape.num_layers else 0
    return logits + (bnb_layer_inputs + per_layer) * layers - skip + once


def current_logits_per_token(shape: ModelShape) -> int:
    """The step's own logits at the end of its forward: LitGPT computes ``lm_head`` in chunks
    of 128 tokens and keeps every chunk (``[self.lm_head(x_i) for x_i in x.split(...)]``)."""
    return LOGIT_BYTES * shape.vocab_size


def no_sync_gradient_bytes(shape: ModelShape, *, lora: LoraSetup | None, grad_bytes: int) -> int:
    """The unsharded gradients one GPU holds while FSDP accumulates under ``no_sync`` (point 6):
    every wrapped decoder block (the ``auto_wrap_policy={Block}`` litgpt passes) that trains
    anything, whole, at ``grad_bytes`` per parameter; the root unit (embedding, final norm,
    lm_head) too when it trains (a full fine-tune, or LoRA on lm_head). A full fine-tune trains
    every unit; LoRA trains the blocks it adapts (every block, for any block target)."""
    outside_blocks = shape.split.embedding + shape.split.lm_head
    blocks = shape.total_params - outside_blocks
    if lora is None:
        return grad_bytes * shape.total_params
    targets = lora_target_specs(shape, lora.targets, lora.moe_lora)
    trained = blocks if any(s.role != "lm_head" for s in targets) else 0
    if any(s.name == LM_HEAD_TARGET for s in targets):
        trained += outside_blocks
    return grad_bytes * trained
