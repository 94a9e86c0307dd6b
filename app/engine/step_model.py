"""The step model: the phases of one training step on one GPU as named terms.

:func:`step_model` adds up one function per term family: the weights (:func:`weight_terms`,
with autocast's copies; :func:`merged_expert_terms`; :func:`dequantised_terms`), the gradients
(:func:`gradient_terms`), the optimizer states (:func:`optimizer_terms`), the activations
(:func:`activation_terms`, the profile of :mod:`activations`), the loss head
(:func:`loss_head_rate`) and the overhead (:func:`overhead_terms`: the CUDA context and the
caching allocator's reserve, :mod:`overhead`). Two layers adjust the terms apart from the
arithmetic of one card: the sharding layer (what ZeRO-3/FSDP hold beyond the shards,
:mod:`sharding`) and the framework layer (what LitGPT holds beyond the shared model,
:mod:`framework_litgpt`; Unsloth's run is the job it rewrites, :mod:`framework_unsloth`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from app.engine import framework_litgpt as litgpt
from app.engine import framework_unsloth as unsloth
from app.engine.activations import (
    CHUNKED_LOSS_TOKENS,
    LOSS_FORWARD_BYTES_PER_VOCAB,
    ActivationProfile,
    ActivationSetup,
    Regime,
    activation_profile,
    bnb_saved_inputs_bytes_per_token,
    regime_for,
)
from app.engine.fit import PhaseTerms, ReserveTerms, StepModel
from app.engine.job import (
    Job,
    fsdp_gathers_bf16,
    fsdp_sharded,
    prepares_kbit,
    stored_bytes_per_param,
    with_changes,
)
from app.engine.overhead import (
    STRANDED_LOGITS_BYTES_PER_VOCAB,
    fixed_overhead_bytes,
    loss_head_segments,
    reserve_terms,
)
from app.engine.precision import Framework, TrainingPrecision
from app.engine.shapes import ModelShape
from app.engine.sharding import sharded_extras, unsharded_quant_state
from app.engine.states import (
    KBIT_PREPARED_BYTES,
    Accounting,
    LoraSetup,
    Method,
    ModelStates,
    MoeLora,
    Offload,
    Optimizer,
    Quant,
    Sharding,
    merged_parameter_params,
    packed_specs,
    quant_state_bytes,
    shard_states,
    single_gpu_states,
)


@dataclass(slots=True)
class StepParts:
    """The parts of a step model that do not depend on how many cards the job is spread over,
    kept for one shape as built: the activation profile of each setup, the one-GPU states
    of each recipe and the 4-bit quantisation statistics. One sizing builds the step models
    of dozens of variants of one job (ZeRO-3 over n cards, levers, setups), and most of them
    share these parts. :class:`StepModels` holds one for its sizing, so it grows with the
    variants that sizing tries and is let go with it; a part of another shape object is
    computed afresh, not kept."""

    shape: ModelShape
    profiles: dict[tuple[object, ...], ActivationProfile] = field(default_factory=dict)
    """The activation profiles by what their setup is made of (:func:`activation_terms`)."""
    states: dict[tuple[object, ...], ModelStates] = field(default_factory=dict)
    quant_stats: dict[tuple[Quant, MoeLora], int] = field(default_factory=dict)
    """The 4-bit quantisation statistics' bytes by quantisation and MoE adapter layout."""
    largest_layer: int | None = None
    """:meth:`ModelShape.largest_layer_params` of the shape, once asked."""

    def largest_layer_params(self, shape: ModelShape) -> int:
        """``shape.largest_layer_params()``, kept for this part's own shape."""
        if shape is not self.shape:
            return shape.largest_layer_params()
        if self.largest_layer is None:
            self.largest_layer = shape.largest_layer_params()
        return self.largest_layer


def model_states(shape: ModelShape, job: Job, *, gpus: int | None = None,
                 sharding: Sharding | None = None, parts: StepParts | None = None
                 ) -> ModelStates:
    """Per-GPU model states for the job (the article's arithmetic, then sharding; ``parts``:
    where the one-GPU states are kept).

    With the optimizer step fused into backward (PyTorch's "optimizer in backward"), each
    layer's gradients are applied and freed as soon as they are complete, so only the largest
    layer's gradients are ever held."""
    single = single_gpu_job_states(litgpt.as_built(shape, job.framework), job, job.accounting,
                                   parts)
    sharded = shard_states(
        single, gpus=gpus or job.gpus, sharding=sharding or job.sharding, offload=job.offload
    )
    if not job.fused_optimizer_step:
        return sharded
    layer_share = shape.largest_layer_params() / shape.total_params
    return dataclasses.replace(
        sharded,
        gradients_bytes=math.ceil(sharded.gradients_bytes * layer_share),
        adapter_grad_bytes=math.ceil(sharded.adapter_grad_bytes * layer_share),
    )


def single_gpu_job_states(shape: ModelShape, job: Job, accounting: Accounting,
                          parts: StepParts | None = None) -> ModelStates:
    """The job's states on one GPU under ``accounting``; under LitGPT QLoRA with the output
    layer in NF4 as well (framework_litgpt.py, point 2). ``parts``: kept there by recipe."""
    recipe = (accounting, job.method, job.optimizer, job.lora, job.effective_quant,
              job.training_precision, prepares_kbit(job), job.framework)
    if parts is None or shape is not parts.shape:
        return _recipe_states(shape, *recipe)
    found = parts.states.get(recipe)
    if found is None:
        found = parts.states[recipe] = _recipe_states(shape, *recipe)
    return found


def _recipe_states(shape: ModelShape, accounting: Accounting, method: Method,
                   optimizer: Optimizer, lora: LoraSetup | None, quant: Quant,
                   dtypes: TrainingPrecision, prepared: bool, framework: Framework
                   ) -> ModelStates:
    """:func:`single_gpu_job_states` from exactly what it reads of the job (its recipe)."""
    single = single_gpu_states(
        shape, method=method, optimizer=optimizer, accounting=accounting,
        lora=lora, quant=quant, precision=dtypes, kbit_prepare=prepared,
    )
    if framework != litgpt.LITGPT or method != "qlora":
        return single
    base_bytes = KBIT_PREPARED_BYTES if prepared else dtypes.base_bytes
    head = litgpt.quantised_head_bytes(shape, quant, base_bytes)
    return dataclasses.replace(single, weights_bytes=single.weights_bytes + head)


# Bytes per element of autocast's bf16 copy of an fp32 weight.
BF16_HEAD_COPY_BYTES = 2


class StepContext(NamedTuple):
    """What every term of one step reads: the job as it runs (Unsloth's rewritten), the shape as
    the framework builds it, its per-GPU model states and dtypes. (Named tuples, this and
    :class:`StepTerms`: built for every step model, at a fraction of a frozen dataclass's
    cost.)"""

    shape: ModelShape
    job: Job
    states: ModelStates
    dtypes: TrainingPrecision
    prepared: bool
    """QLoRA after ``prepare_model_for_kbit_training``: fp32 embeddings, norms and lm_head."""
    weight_shards: int
    """The cards ZeRO-3/FSDP shards the weights over (1: unsharded)."""
    parts: StepParts | None = None
    """Where the parts shared with other variants of the job are kept (None: nowhere)."""

    @property
    def pure_bf16(self) -> bool:
        return self.dtypes.precision == "bf16"

    @property
    def zero3(self) -> bool:
        return self.weight_shards > 1

    @property
    def on_litgpt(self) -> bool:
        return self.job.framework == litgpt.LITGPT


class StepTerms(NamedTuple):
    """The named terms of one step, in bytes (``profile``: the per-token activations)."""

    profile: ActivationProfile
    weights: int
    """Resident weights and adapters (0 with parameters offloaded)."""
    copies: int
    """autocast's bf16 copies, held from their forward to their backward."""
    head_copies: int
    """Those of the output head, which no checkpointing recomputes."""
    merged_saved: int
    """PEFT's merged expert weights every layer saved for its backward."""
    merged_layer: int
    """Those of the layer being differentiated."""
    optimizer: int
    gradients: int
    held_gradients: int
    """Gradients held across micro-steps (gradient accumulation)."""
    dequantised: int
    """One layer's 4-bit (or frozen fp32) weight cast to bf16 for its matmul."""
    old_bnb: bool
    """bitsandbytes before 0.43.2 keeps every 4-bit layer's input (not prepared QLoRA)."""
    buffers: int = 0
    """ZeRO-3/FSDP buffers for the whole run (sharding layer)."""
    whole_stats: int = 0
    """4-bit quantisation statistics whole on every sharded card (sharding layer)."""
    gathered: int = 0
    """The gathered layer(s) while computing (sharding layer)."""
    gathered_grads: int = 0
    """A gathered layer's unsharded gradients (sharding layer)."""

    @property
    def static(self) -> int:
        """Bytes alive through the whole step."""
        return self.weights + self.optimizer + self.buffers + self.whole_stats


ShardingTerms = tuple[int, int, int, int]
"""What the sharding layer adds to a card's terms: ``StepTerms``' ``buffers``,
``whole_stats``, ``gathered`` and ``gathered_grads``, in that order."""


def step_model(shape: ModelShape, job: Job, parts: StepParts | None = None) -> StepModel:
    """The phases of one training step on one GPU, with their fixed bytes and coefficients:
    the terms of one card, then the sharding layer, then the framework layer (``parts``: the
    parts it shares with other variants of the job, :class:`StepParts`)."""
    ctx = step_context(shape, job, parts)
    terms = framework_layer(ctx, card_terms(ctx, sharding_layer(ctx)))
    resident = resident_bytes(ctx, terms)
    return StepModel(
        moments=moments(ctx, terms),
        model_states_bytes=resident,
        fixed_overhead_bytes=fixed_overhead_bytes(ctx.job.gpus),
        reserve=overhead_terms(ctx, terms, resident),
    )


def step_context(shape: ModelShape, job: Job, parts: StepParts | None = None) -> StepContext:
    """The job as it runs and the shape as its framework builds it, with their states."""
    job = unsloth.as_run(job)
    shape = litgpt.as_built(shape, job.framework)
    zero3 = job.sharding == "zero3" and job.gpus > 1
    return StepContext(shape=shape, job=job, states=model_states(shape, job, parts=parts),
                       dtypes=job.training_precision, prepared=prepares_kbit(job),
                       weight_shards=job.gpus if zero3 else 1, parts=parts)


def card_terms(ctx: StepContext, sharded: ShardingTerms) -> StepTerms:
    """Every term on one card, with what the sharding layer adds (``sharded``:
    :func:`sharding_layer`'s terms), before the framework layer adjusts them."""
    weights, copies, head_copies = weight_terms(ctx)
    merged_saved, merged_layer = merged_expert_terms(ctx)
    gradients, held_gradients = gradient_terms(ctx)
    buffers, whole_stats, gathered, gathered_grads = sharded
    return StepTerms(
        profile=activation_terms(ctx), weights=weights, copies=copies, head_copies=head_copies,
        merged_saved=merged_saved, merged_layer=merged_layer, optimizer=optimizer_terms(ctx),
        gradients=gradients, held_gradients=held_gradients, dequantised=dequantised_terms(ctx),
        old_bnb=ctx.job.method == "qlora" and ctx.job.bnb_saves_inputs and not ctx.prepared,
        buffers=buffers, whole_stats=whole_stats, gathered=gathered,
        gathered_grads=gathered_grads,
    )


def weight_terms(ctx: StepContext) -> tuple[int, int, int]:
    """The resident weights and adapters, autocast's bf16 copies and those of the head."""
    job, shape, states = ctx.job, ctx.shape, ctx.states
    if job.method == "full" and job.accounting == "hf" and not ctx.pure_bf16:
        # The hf count's 6 bytes are fp32 weights (4) plus autocast's bf16 copies (2), which
        # exist only for linear weights and only between their forward and backward use.
        weights_static = states.weights_bytes * 4 // 6
        # A tied lm_head still gets its own bf16 copy of the shared fp32 embedding matrix.
        lm_head = shape.vocab_size * shape.hidden_size if shape.tied_embeddings else 0
        copies = 2 * (shape.split.linear + shape.split.lm_head + lm_head) // ctx.weight_shards
        head_copies = 2 * (shape.split.lm_head + lm_head) // ctx.weight_shards
    else:
        weights_static = states.weights_bytes
        # autocast's bf16 copies of fp32 adapters, kept from their forward to their backward;
        # bf16 adapters need none.
        # (Unsloth's kernels cast per matmul and save the fp32 originals: framework_unsloth.)
        fp32_adapters = job.method != "full" and ctx.dtypes.adapter_dtype == "fp32" \
            and job.framework != unsloth.UNSLOTH
        copies = 2 * states.trainable_params // ctx.weight_shards if fp32_adapters else 0
        head_copies = 0
    if ctx.prepared:
        # The frozen fp32 lm_head (or the tied fp32 embedding) is cast to bf16 by autocast for
        # its matmul and that copy is saved for the input gradient, until the head's backward:
        # autocast caches only weights that require grad, so this copy is per use, not cached
        # (measured: tools/calibrate/results/cpu-qlora.json).
        copies += BF16_HEAD_COPY_BYTES * shape.vocab_size * shape.hidden_size
        head_copies += BF16_HEAD_COPY_BYTES * shape.vocab_size * shape.hidden_size
    if job.offload == "optimizer+params":
        weights_static = 0
    return weights_static + states.adapter_weight_bytes, copies, head_copies


def merged_expert_terms(ctx: StepContext) -> tuple[int, int]:
    """PEFT's merged expert weights (W + BA per adapted fused tensor, in the base's dtype),
    saved from their forward to their backward: every layer's until the backward starts
    (none with checkpointing, whose forward keeps nothing), then the layer being
    differentiated (recomputed, with checkpointing)."""
    job = ctx.job
    if job.lora is None:
        return 0, 0
    every, widest = merged_parameter_params(ctx.shape, job.lora)
    merged_bytes = KBIT_PREPARED_BYTES if ctx.prepared else ctx.dtypes.base_bytes
    merged_saved = 0 if job.gradient_checkpointing else merged_bytes * every
    return merged_saved, merged_bytes * widest


def optimizer_terms(ctx: StepContext) -> int:
    """The optimizer states of the weights and of the adapters."""
    return ctx.states.optimizer_bytes + ctx.states.adapter_optimizer_bytes


def gradient_terms(ctx: StepContext) -> tuple[int, int]:
    """The gradients, and those held across micro-steps under gradient accumulation."""
    gradients = ctx.states.gradients_bytes + ctx.states.adapter_grad_bytes
    return gradients, gradients if ctx.job.gradient_accumulation > 1 else 0


def dequantised_terms(ctx: StepContext) -> int:
    """One layer's weight in bf16 for its matmul: bitsandbytes dequantises one 4-bit weight to
    bf16 for each matmul; autocast casts a frozen fp32 weight to bf16 for each matmul likewise
    (it caches only weights that require grad), one layer at a time. FSDP's mixed precision
    gathers such a base in bf16 already (sharding.py), leaving autocast nothing to cast."""
    job, shape = ctx.job, ctx.shape
    if job.method == "qlora" or (job.method == "lora" and ctx.dtypes.base_dtype == "fp32"
                                 and not fsdp_gathers_bf16(job)):
        layers = packed_specs(shape, job.moe_lora) if job.method == "qlora" else ()
        return 2 * max(s.in_features * s.out_features for s in layers or shape.linears)
    return 0


def activation_terms(ctx: StepContext) -> ActivationProfile:
    """The per-token activations of the job's regime (activations.py), kept in ``ctx.parts``
    by what the setup is made of: the setup itself costs more to build and hash than its
    profile costs to find, and every card count of a search asks for the same one."""
    job = ctx.job
    # Pure bf16 full fine-tuning keeps bf16 activations, as the zero accounting's bf16 model.
    regime = "bf16" if ctx.pure_bf16 and job.method == "full" else regime_for(job.method,
                                                                               job.accounting)
    # QLoRA after prepare_model_for_kbit_training: fp32 embeddings, norms and lm_head.
    if ctx.prepared:
        regime = "qlora"
    parts = ctx.parts
    if parts is None or ctx.shape is not parts.shape:
        return activation_profile(ctx.shape, _activation_setup(job, regime))
    recipe = (regime, job.method, job.attention, job.gradient_checkpointing, job.lora_rank,
              job.lora_targets, job.lora_dropout, job.moe_lora, job.loss_head,
              job.activation_offload, job.bnb_saves_inputs, job.framework)
    found = parts.profiles.get(recipe)
    if found is None:
        found = parts.profiles[recipe] = activation_profile(ctx.shape,
                                                            _activation_setup(job, regime))
    return found


def _activation_setup(job: Job, regime: Regime) -> ActivationSetup:
    """The job's activation setup in ``regime``: what ``activation_terms``' recipe holds (a
    job field read here must join that recipe, or two setups would share one profile)."""
    return ActivationSetup(
        method=job.method, regime=regime, attention=job.attention,
        gradient_checkpointing=job.gradient_checkpointing, lora=job.lora,
        loss_head=job.loss_head, activation_offload=job.activation_offload,
        bnb_saves_inputs=job.bnb_saves_inputs, unsloth=job.framework == unsloth.UNSLOTH,
    )


def sharding_layer(ctx: StepContext) -> ShardingTerms:
    """What ZeRO-3/FSDP hold beyond the shards: the gathered layer(s) while computing (FSDP:
    and its root unit) and DeepSpeed's gradient bucket for the whole run (sharding.py, with
    the sources); :func:`card_terms` builds them into the step's terms at once."""
    job, shape = ctx.job, ctx.shape
    offload_params = job.offload == "optimizer+params"
    layer = None  # the largest layer's parameters, gathered only over several cards
    if ctx.zero3:
        layer = (shape.largest_layer_params() if ctx.parts is None
                 else ctx.parts.largest_layer_params(shape))
    extras = sharded_extras(shape, job.sharding_impl, gpus=ctx.weight_shards,
                            weight_bytes_per_param=stored_bytes_per_param(job),
                            offload_params=offload_params,
                            mixed_precision=ctx.dtypes.precision == "amp", layer_params=layer)
    # bitsandbytes' quantisation statistics are no parameters: whole on every card
    # (sharding.py). torchtune quantises with torchao's NF4Tensor instead, whose scalers are
    # inner tensors sharded with the data (torchao/dtypes/nf4tensor.py,
    # _INNER_TENSOR_NAMES_FOR_SHARDING).
    # (None on one card, where nothing is sharded: the statistics are in the states.)
    whole_stats = 0
    if job.method == "qlora" and job.framework != "torchtune" and ctx.weight_shards > 1:
        whole_stats = unsharded_quant_state(
            _quant_state_bytes(ctx), gpus=ctx.weight_shards, offload_params=offload_params)
    gathered_grads = 0
    if layer is not None and job.method == "full":
        gathered_grads = (4 if job.accounting == "hf" else 2) * layer
    return extras.buffers, whole_stats, extras.gathered, gathered_grads


def _quant_state_bytes(ctx: StepContext) -> int:
    """:func:`quant_state_bytes` of the job's base, kept in ``ctx.parts`` where there are
    parts: the same for every card count a search asks."""
    job = ctx.job
    if ctx.parts is None or ctx.shape is not ctx.parts.shape:
        return quant_state_bytes(ctx.shape, job.effective_quant, job.moe_lora)
    key = (job.effective_quant, job.moe_lora)
    found = ctx.parts.quant_stats.get(key)
    if found is None:
        found = ctx.parts.quant_stats[key] = quant_state_bytes(ctx.shape, *key)
    return found


def framework_layer(ctx: StepContext, terms: StepTerms) -> StepTerms:
    """What LitGPT holds beyond the shared model (framework_litgpt.py); other frameworks
    change the job itself (Unsloth: framework_unsloth.as_run) or nothing."""
    if not ctx.on_litgpt:
        return terms
    job, shape = ctx.job, ctx.shape
    held_gradients, dequantised, profile = terms.held_gradients, terms.dequantised, terms.profile
    if ctx.zero3 and job.sharding_impl == "fsdp" and job.gradient_accumulation > 1:
        # Lightning accumulates under FSDP's no_sync: whole gradients of every block that
        # trains anything (framework_litgpt.py, point 6), instead of the sharded ones.
        held_gradients = litgpt.no_sync_gradient_bytes(
            shape, lora=job.lora, grad_bytes=2 if ctx.pure_bf16 or job.method != "full" else 4)
    if job.method == "qlora":
        # Lightning's 4-bit layers, lm_head among them, dequantise to fp16 and are cast to
        # bf16 (framework_litgpt.py, points 2 and 3).
        dequantised = litgpt.dequantised_bytes(shape)
    if terms.old_bnb:
        # LitGPT's attention output and lm_head input, kept by the old 4-bit layers too.
        profile = litgpt.with_extra_bnb_inputs(
            profile, shape, gradient_checkpointing=job.gradient_checkpointing,
            activation_offload=job.activation_offload)
    # LitGPT's attention keeps its whole fused qkv output through the value's view, with
    # one key/value head per query head (framework_litgpt.py, point 7).
    profile = litgpt.with_fused_value_view(
        profile, shape, gradient_checkpointing=job.gradient_checkpointing,
        activation_offload=job.activation_offload)
    return terms._replace(held_gradients=held_gradients, dequantised=dequantised,
                          profile=profile)


def moments(ctx: StepContext, terms: StepTerms) -> tuple[PhaseTerms, ...]:
    """The moments of the step whose live bytes may peak, from the terms."""
    job, profile, static = ctx.job, terms.profile, terms.static
    fwd_fixed = (terms.copies + terms.held_gradients + terms.gathered + terms.dequantised
                 + terms.merged_saved)
    # autocast caches its bf16 weight copies until the autocast context ends with the forward;
    # under checkpointing no layer's forward saved them, so the backward starts with only the
    # copies the (never checkpointed) lm_head saved (H200 steps: full amp Llama 3.2 3B peaks
    # at the end of the forward, 58.7 GB, not at the start of the backward).
    bwd_fixed = (fwd_fixed - terms.copies + terms.head_copies if job.gradient_checkpointing
                 else fwd_fixed)
    found: tuple[PhaseTerms, ...] = (
        *_attention_moment(job, profile, static, fwd_fixed),
        PhaseTerms(
            "end of forward (loss head)", "forward", static, fwd_fixed,
            profile.saved_per_token + loss_head_rate(profile, "forward", job),
            profile.saved_per_token_per_seq + profile.forward_only_per_token_per_seq,
        ),
        PhaseTerms(
            "start of backward", "backward", static, bwd_fixed,
            profile.saved_per_token + loss_head_rate(profile, "backward", job),
            profile.saved_per_token_per_seq,
        ),
        PhaseTerms(
            "end of backward", "backward", static,
            max(terms.gradients, terms.held_gradients) + terms.gathered + terms.gathered_grads
            + terms.dequantised + terms.merged_layer,
            profile.layer_per_token,
            profile.layer_per_token_per_seq + profile.attention_backward_per_token_per_seq,
            strands=False,
        ),
        PhaseTerms("optimizer step", "optimizer", static, terms.gradients, 0, 0, strands=False),
    )
    if ctx.on_litgpt:
        found += (_litgpt_next_forward(ctx.shape, job, profile, static, fwd_fixed,
                                       terms.old_bnb),)
    return found


def _attention_moment(job: Job, profile: ActivationProfile, static: int,
                      fwd_fixed: int) -> tuple[PhaseTerms, ...]:
    """Eager attention's scores while the last layer computes them: beside what every layer
    saved, its own score tensors (with checkpointing its forward saves them only for the
    moment, so they are added here) and the transient ones. SDPA and flash keep none."""
    if not profile.attention_forward_per_token_per_seq:
        return ()
    in_layer_quad = profile.saved_per_token_per_seq + profile.forward_only_per_token_per_seq
    if job.gradient_checkpointing:
        in_layer_quad += profile.layer_per_token_per_seq
    return (PhaseTerms(
        "inside a layer's attention (forward)", "forward", static, fwd_fixed,
        profile.saved_per_token,
        in_layer_quad + profile.attention_forward_per_token_per_seq,
    ),)


def resident_bytes(ctx: StepContext, terms: StepTerms) -> int:
    """The floor under every moment: the states that are all alive at once. Under the hf
    accounting the article's 6 B/param of weights include autocast's bf16 copies, which are
    freed by the optimizer step; the grid measures 16, not 18, B/param there."""
    job, states = ctx.job, ctx.states
    hf_full = job.method == "full" and job.accounting == "hf" and not ctx.pure_bf16
    transient_copies = states.weights_bytes - states.weights_bytes * 4 // 6 if hf_full else 0
    return states.total_bytes - transient_copies + terms.whole_stats


def overhead_terms(ctx: StepContext, terms: StepTerms, resident: int) -> ReserveTerms:
    """The overhead beyond the CUDA context (``fixed_overhead_bytes``): the caching allocator's
    reserve for the step (overhead.py)."""
    job, profile = ctx.job, terms.profile
    return reserve_terms(
        logits_per_token=stranded_logits_rate(profile, job),
        # A chunked loss asks for blocks smaller than a layer's, which the layers' cached
        # segments serve: none stay stranded beside it (overhead.py).
        layer_per_token=0 if profile.chunked_loss else profile.layer_per_token,
        layer_per_token_seq=0 if profile.chunked_loss else profile.layer_per_token_per_seq,
        states_bytes=resident, loss_head_per_token=loss_head_rate(profile, "backward", job),
        expandable_segments=job.expandable_segments, fsdp=fsdp_sharded(job),
        first_step_absent=terms.optimizer,
        first_step_created=terms.optimizer + terms.gradients,
        head_blocks=() if profile.chunked_loss else loss_head_segments(
            profile.vocab_size,
            extra_per_token=profile.loss_forward_per_token
            - LOSS_FORWARD_BYTES_PER_VOCAB * profile.vocab_size))


def stranded_logits_rate(profile: ActivationProfile, job: Job) -> int:
    """The bf16 logits' bytes per token that the loss backward cannot reuse (overhead.py); a
    chunked loss strands one chunk's, spread over the tokens like :func:`loss_head_rate`."""
    per_token = STRANDED_LOGITS_BYTES_PER_VOCAB * profile.vocab_size
    if not profile.chunked_loss:
        return per_token
    tokens = job.batch_size * job.seq_len
    return math.ceil(per_token * min(tokens, CHUNKED_LOSS_TOKENS) / tokens)


def _litgpt_next_forward(shape: ModelShape, job: Job, profile: ActivationProfile, static: int,
                         fixed: int, old_bnb: bool) -> PhaseTerms:
    """The end of a LitGPT forward while the previous micro-step's logits (and, with
    bitsandbytes before 0.43.2, every 4-bit input of its graph) are still held
    (framework_litgpt.py, point 5), besides this step's saved tensors and logits."""
    layer_inputs, first_layer_skip = (
        bnb_saved_inputs_bytes_per_token(shape, "lora") if old_bnb else (0, 0))
    retained = litgpt.retained_per_token(
        shape, bnb_layer_inputs=layer_inputs, bnb_first_layer_skip=first_layer_skip,
        gradient_checkpointing=job.gradient_checkpointing,
        activation_offload=job.activation_offload)
    return PhaseTerms(
        litgpt.NEXT_FORWARD_MOMENT, "forward", static, fixed,
        profile.saved_per_token + litgpt.current_logits_per_token(shape) + retained,
        profile.saved_per_token_per_seq + profile.forward_only_per_token_per_seq,
    )


class StepModels:
    """Step models of one shape, memoised by job: one estimate asks for the same variants
    (sharded over n cards, a lever applied) once per card."""

    def __init__(self, shape: ModelShape) -> None:
        self.shape = shape
        self.parts = StepParts(shape)
        self._cache: dict[Job, StepModel] = {}
        self._sharded: dict[tuple[Job, int], Job] = {}
        self._variants: dict[tuple[Job, tuple[tuple[str, object], ...]], Job] = {}
        self._totals: dict[Job, int] = {}
        self._counts: dict[Job, dict[int, int]] = {}

    def get(self, job: Job) -> StepModel:
        model = self._cache.get(job)
        if model is None:
            model = self._cache[job] = step_model(self.shape, job, self.parts)
        return model

    def total_bytes(self, job: Job) -> int:
        """The job's memory per GPU at its own micro-batch and sequence: what every search
        holds against a card, the same for every card (only the card's side differs)."""
        total = self._totals.get(job)
        if total is None:
            total = self._totals[job] = self.get(job).total_bytes(job.batch_size, job.seq_len)
        return total

    def variant(self, job: Job, **changes: object) -> Job:
        """``with_changes(job, **changes)``, made once per job and changes: the setups' searches
        try the same variants of a job for every card size, and the one object a variant is
        each time is the key its step model and totals are then found under at once."""
        key = (job, tuple(changes.items()))
        variant = self._variants.get(key)
        if variant is None:
            variant = self._variants[key] = with_changes(job, **changes)
        return variant

    def sharded_job(self, job: Job, gpus: int) -> Job:
        """The job spread over ``gpus`` cards with ZeRO-3 (one card: no sharding)."""
        key = (job, gpus)
        variant = self._sharded.get(key)
        if variant is None:
            variant = self._sharded[key] = _sharded(job, gpus)
        return variant

    def sharded_total(self, job: Job, gpus: int) -> int:
        """:meth:`total_bytes` of :meth:`sharded_job`, remembered by card count for
        :meth:`known_bracket`."""
        known = self._counts.setdefault(job, {})
        total = known.get(gpus)
        if total is None:
            total = known[gpus] = self.total_bytes(self.sharded_job(job, gpus))
        return total

    def known_bracket(self, job: Job, usable_bytes: int, low: int, high: int) -> tuple[int, int]:
        """The narrowest bracket inside (``low``, ``high``) that card counts already asked of
        :meth:`sharded_total` for this job settle: the most cards seen over ``usable_bytes``
        below the fewest seen within it. Per-GPU bytes fall as cards are added, so a search
        for one card size starts where the searches for the others left off."""
        for gpus, total in self._counts.get(job, {}).items():
            if low < gpus < high:
                if total <= usable_bytes:
                    high = gpus
                else:
                    low = gpus
        return low, high

    def sharded(self, job: Job, gpus: int) -> StepModel:
        """The step model of :meth:`sharded_job`."""
        return self.get(self.sharded_job(job, gpus))


def loss_head_rate(profile: ActivationProfile, moment: Literal["forward", "backward"],
                   job: Job) -> int:
    """Loss-head bytes per token; a chunked loss holds one chunk, spread here over the tokens."""
    per_token = (
        profile.loss_forward_per_token if moment == "forward" else profile.loss_backward_per_token
    )
    if not profile.chunked_loss:
        return per_token
    tokens = job.batch_size * job.seq_len
    chunk_bytes = (
        profile.loss_forward_bytes(tokens) if moment == "forward"
        else profile.loss_backward_bytes(tokens)
    )
    return math.ceil(chunk_bytes / tokens)


def _sharded(job: Job, gpus: int) -> Job:
    if gpus == 1:
        offload: Offload = "optimizer" if job.offload == "optimizer+params" else job.offload
        return with_changes(job, gpus=1, sharding="none", offload=offload)
    return with_changes(job, gpus=gpus, sharding="zero3")
