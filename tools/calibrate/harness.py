"""Run ONE steady-state Hugging Face training step and record the memory it keeps alive.

The step is what the Hugging Face Trainer does for one micro-batch without gradient accumulation:

    forward(input_ids, labels=input_ids) under torch.autocast(bfloat16)   # HF causal-LM loss
    loss.backward()
    clip_grad_norm_(trainable, 1.0)
    optimizer.step()                                                      # torch.optim.AdamW
    optimizer.zero_grad(set_to_none=True)

A warm-up step runs first (untracked) so that AdamW's state already exists; the second step is
measured with PyTorch's own tensor tracker, ``torch.distributed._tools.mem_tracker.MemTracker``,
which counts the bytes of every live tensor storage and labels it parameter, buffer, gradient,
optimizer state, activation (made in the forward or in a checkpoint recomputation), temporary
(made in the backward) or other (the input ids).

Precision regimes (``precision`` in the record):
  * ``amp-fp32-master`` (full fine-tuning): fp32 weights, fp32 gradients, fp32 AdamW states, the
    forward under bf16 autocast -- the Trainer with ``bf16=True`` on an fp32 model.
  * ``bf16-base-amp`` (LoRA): bf16 base weights, PEFT LoRA adapters in fp32 (PEFT's default
    ``autocast_adapter_dtype=True``), the forward under bf16 autocast.
  * ``nf4-base-amp`` (QLoRA): the model loaded through transformers with a bitsandbytes
    ``BitsAndBytesConfig`` (nf4, with or without double quantisation, bf16 compute dtype), then
    ``peft.prepare_model_for_kbit_training`` (freezes everything, casts every non-4-bit bf16
    parameter -- embeddings, norms, lm_head -- to fp32, and turns gradient checkpointing on
    when the case asks for it) and ``get_peft_model``, as the QLoRA recipes do.  bitsandbytes
    keeps each layer's packed uint8 weight as a ``Params4bit`` parameter and its absmax (and
    the double-quantisation state) in a ``QuantState`` outside the module's parameters and
    buffers; the tracker counts those as buffers (``PhaseMemTracker``).

``mode="fake"`` runs the very same code under ``FakeTensorMode`` (the model is built inside the
mode), so tensors have shapes, dtypes and storages but no memory: real model shapes can be
"measured" on a laptop.  ``mode="real"`` allocates everything.

Import-time dependencies are torch, transformers and peft (the ``calibrate`` extra); QLoRA
cases also need bitsandbytes (0.50.x runs NF4 forward and backward on a CPU).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import platform
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict

import torch
import torch.nn.functional as F
from torch.distributed._tools.mem_tracker import _TOTAL_KEY, MemTracker, _MemRefType
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map_only

# MemTracker's labels -> the record's names.
CATEGORY_NAMES = {
    "Parameter": "parameters",
    "Buffer": "buffers",
    "Gradient": "gradients",
    "Optstate": "optimizer_states",
    "Activation": "activations",
    "Temp": "temporaries",
    "Other": "other",
}
PHASES = ("forward", "backward", "optimizer")
# The record's ``precision`` and ``weights_dtype`` per method (module docstring).
PRECISIONS = {"full": "amp-fp32-master", "lora": "bf16-base-amp", "qlora": "nf4-base-amp"}
WEIGHT_DTYPES = {"full": "float32", "lora": "bfloat16", "qlora": "nf4"}

# Config keys that describe the checkpoint file rather than the architecture, or that would
# make transformers pick a dtype / remote code on its own.
_DROP_CONFIG_KEYS = {
    "_name_or_path",
    "architectures",
    "auto_map",
    "transformers_version",
    "torch_dtype",
    "dtype",
    "model_type",
    "use_cache",
}


@dataclasses.dataclass
class Case:
    """One measurement. ``config`` is a path to a Hugging Face config.json."""

    config: str
    method: str = "full"  # full | lora | qlora
    b: int = 1
    s: int = 256
    attention: str = "sdpa"  # eager | sdpa
    checkpointing: bool = False
    mode: str = "real"  # real | fake
    lora_r: int = 16
    lora_alpha: int | None = None  # None -> 2 * r (no effect on memory)
    lora_targets: str | list[str] = "all-linear"
    lora_dropout: float = 0.0
    quant: str = "nf4-dq"  # qlora only: nf4 | nf4-dq (nf4 with double quantisation)
    # qlora only: keep every 4-bit layer's input for the backward, as bitsandbytes 0.41-0.43.1
    # did (see bnb_saves_inputs_emulation)
    bnb_saves_inputs: bool = False
    optimizer: str = "auto"  # auto (fused if it runs, else foreach) | fused | foreach
    dropout_routing: str = "native"  # native: F.dropout -> aten.native_dropout (bool mask, as CUDA)
    device: str = "auto"  # auto -> cuda if available and mode == real, else cpu
    seed: int = 0
    id: str | None = None

    def slug(self) -> str:
        return Path(self.config).stem

    def default_id(self) -> str:
        parts = [self.slug(), self.method]
        if self.method in ("lora", "qlora"):
            if self.method == "qlora":
                parts.append(self.quant + ("-savesinputs" if self.bnb_saves_inputs else ""))
            tgt = (
                self.lora_targets
                if isinstance(self.lora_targets, str)
                else "+".join(self.lora_targets)
            )
            parts.append(f"r{self.lora_r}-{tgt}-do{self.lora_dropout:g}")
        parts += [
            f"b{self.b}",
            f"s{self.s}",
            self.attention,
            "gc" if self.checkpointing else "nogc",
            self.mode,
        ]
        return "_".join(parts)


# --------------------------------------------------------------------------------------------
# tracker


class PhaseMemTracker(MemTracker):
    """MemTracker that also keeps a peak (and the split at that peak) per named phase."""

    def __init__(self) -> None:
        super().__init__()
        self.phase: str | None = None
        self.phase_peak: dict[str, int] = {}
        self.phase_peak_snap: dict[str, dict[str, int]] = {}
        self.phase_start: dict[str, dict[str, int]] = {}

    def current_split(self) -> dict[str, int]:
        """Current live bytes per MemTracker label, summed over devices (plus 'Total')."""
        out: dict[str, int] = {}
        for dev_snap in self._curr_mem_snap.values():
            for k, v in dev_snap.items():
                key = k if isinstance(k, str) else str(k)
                key = getattr(k, "value", key)
                out[key] = out.get(key, 0) + int(v)
        out.setdefault(_TOTAL_KEY, 0)
        return out

    def set_phase(self, name: str | None) -> None:
        self.phase = name
        if name is not None:
            snap = self.current_split()
            self.phase_start[name] = snap
            self.phase_peak[name] = snap[_TOTAL_KEY]
            self.phase_peak_snap[name] = snap

    def _track_quant_states(self, module: torch.nn.Module) -> int:
        """Count bitsandbytes' quantisation state as buffers.

        A ``Params4bit`` weight holds only the packed uint8 codes; its ``quant_state`` keeps the
        per-block absmax (fp32, or uint8 with double quantisation plus the second-level fp32
        absmax, code book and offset) as plain tensor attributes, which MemTracker does not see
        through ``module.buffers()``.  They live as long as the model, like buffers.
        """
        total = 0
        for param in module.parameters():
            for tensor in quant_state_tensors(param):
                winfos = self._update_and_maybe_create_winfos(tensor, _MemRefType.BUFFER)
                total += sum(w.mem_consumed for w in winfos)
        return total

    def _track_module_params_and_buffers(
        self, module: torch.nn.Module, install_grad_hooks: bool = True
    ) -> tuple[int, int]:
        # Same as MemTracker's, except that it installs gradient hooks only on parameters that
        # require gradients (MemTracker 2.13 raises on the frozen base weights of a LoRA model).
        def _grad_hook(grad: torch.Tensor) -> None:
            self._update_and_maybe_create_winfos(grad, _MemRefType.GRAD)

        param_memory = 0
        for param in module.parameters():
            winfos = self._update_and_maybe_create_winfos(param, _MemRefType.PARAM)
            param_memory += sum(w.mem_consumed for w in winfos)
            if param.grad is not None:
                self._update_and_maybe_create_winfos(param.grad, _MemRefType.GRAD)
            if (
                install_grad_hooks
                and param.requires_grad
                and self._param_to_grad_hook_handles.get(param, None) is None
            ):
                self._param_to_grad_hook_handles[param] = (
                    param.register_hook(_grad_hook),
                    param.register_post_accumulate_grad_hook(lambda p: _grad_hook(p.grad)),
                )
        buffer_memory = 0
        for buffer in module.buffers():
            winfos = self._update_and_maybe_create_winfos(buffer, _MemRefType.BUFFER)
            buffer_memory += sum(w.mem_consumed for w in winfos)
        buffer_memory += self._track_quant_states(module)
        return param_memory, buffer_memory

    def _update_peak_stats(self, peak_state: Any) -> None:  # called after every op
        # MemTracker's version also refreshes a per-module peak for every module currently
        # active, a scan over all modules on every op (quadratic in depth: minutes for an 80-layer
        # model).  Per-module peaks are not used here, so only the global peak is kept, exactly
        # as MemTracker computes it.
        for dev, dev_snap in self._curr_mem_snap.items():
            if self._peak_mem.get(dev, 0) < dev_snap[_TOTAL_KEY]:
                self._peak_mem[dev] = dev_snap[_TOTAL_KEY]
                self._peak_mem_snap[dev] = dict(dev_snap)
        if self.phase is not None:
            total = sum(int(d[_TOTAL_KEY]) for d in self._curr_mem_snap.values())
            if total > self.phase_peak[self.phase]:
                self.phase_peak[self.phase] = total
                self.phase_peak_snap[self.phase] = self.current_split()


def quant_state_tensors(param: torch.Tensor) -> list[torch.Tensor]:
    """The tensors of a bitsandbytes ``Params4bit``'s ``QuantState`` (empty for other params):
    absmax, code, offset and, with double quantisation, ``state2``'s absmax and code."""
    state = getattr(param, "quant_state", None)
    out: list[torch.Tensor] = []
    while state is not None:
        out += [
            t
            for t in (getattr(state, "absmax", None), getattr(state, "code", None),
                      getattr(state, "offset", None))
            if isinstance(t, torch.Tensor)
        ]
        state = getattr(state, "state2", None)
    return out


def _named_split(snap: dict[str, int]) -> dict[str, int]:
    out = {name: int(snap.get(label, 0)) for label, name in CATEGORY_NAMES.items()}
    out["total"] = int(snap.get(_TOTAL_KEY, 0))
    return out


# --------------------------------------------------------------------------------------------
# model construction


def load_config_dict(path: str | os.PathLike[str]) -> dict[str, Any]:
    with open(path) as f:
        raw = json.load(f)
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: a model config is a JSON object, not {type(raw).__name__}")
    return raw


def build_model(case: Case, device: torch.device) -> tuple[torch.nn.Module, dict[str, Any]]:
    """Random-init causal LM from the config file (nothing downloaded), wrapped by PEFT for LoRA."""
    from transformers import AutoConfig, AutoModelForCausalLM

    raw = load_config_dict(case.config)
    model_type = raw["model_type"]
    kwargs = {k: v for k, v in raw.items() if k not in _DROP_CONFIG_KEYS and not k.startswith("_")}
    cfg = AutoConfig.for_model(model_type, **kwargs)
    cfg.use_cache = False
    dtype = torch.float32 if case.method == "full" else torch.bfloat16
    torch.manual_seed(case.seed)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=case.attention, dtype=dtype)
    if case.method == "qlora":
        model = _load_in_4bit(model, case, device)
    elif device.type != "cpu":
        model.to(device)
    model.train()
    if case.checkpointing and case.method != "qlora":  # qlora: prepare_model_for_kbit_training
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    info: dict[str, Any] = {
        "model_type": model_type,
        "vocab": int(cfg.vocab_size),
        "hidden": int(cfg.hidden_size),
        "layers": int(cfg.num_hidden_layers),
        "intermediate": int(getattr(cfg, "intermediate_size", 0) or 0),
        "heads": int(cfg.num_attention_heads),
        "kv_heads": int(getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads),
        "head_dim": int(
            getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        ),
        "tie_word_embeddings": bool(getattr(cfg, "tie_word_embeddings", False)),
        "attention_used": str(getattr(model.config, "_attn_implementation", case.attention)),
    }
    experts_impl = getattr(model.config, "_experts_implementation", None)
    if experts_impl is not None and hasattr(cfg, "num_local_experts"):
        info["experts_implementation"] = str(experts_impl)
    if model_type == "mixtral":
        info["experts"] = int(cfg.num_local_experts)
        info["experts_per_token"] = int(cfg.num_experts_per_tok)
    if case.method in ("lora", "qlora"):
        from peft import LoraConfig, get_peft_model

        lcfg = LoraConfig(
            r=case.lora_r,
            lora_alpha=case.lora_alpha or 2 * case.lora_r,
            target_modules=case.lora_targets,
            lora_dropout=case.lora_dropout,
            bias="none",
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(model, lcfg)  # autocast_adapter_dtype=True: adapters in fp32
        model.train()
    elif case.method != "full":
        raise ValueError(f"unknown method {case.method!r}")
    return model, info


def _load_in_4bit(
    model: torch.nn.Module, case: Case, device: torch.device
) -> torch.nn.Module:
    """Quantise a random-init bf16 model the way the QLoRA recipes load a checkpoint.

    The model is saved to a temporary directory and loaded back with
    ``from_pretrained(quantization_config=BitsAndBytesConfig(load_in_4bit=True, nf4,
    double quant per case, compute dtype bf16), dtype=bfloat16)``: transformers replaces every
    ``nn.Linear`` except ``lm_head`` (its ``get_keys_to_not_convert``) with bitsandbytes'
    ``Linear4bit``.  Then ``prepare_model_for_kbit_training(model, use_gradient_checkpointing=
    case.checkpointing)`` as PEFT's QLoRA guide calls it: it casts every bf16/fp16 parameter
    that is not 4-bit (embeddings, norms, lm_head) to fp32 and, with checkpointing, enables
    ``enable_input_require_grads`` and transformers' checkpointing (non-reentrant by default
    in transformers 5 only when no kwargs are given: prepare passes ``{}``, so torch's default,
    reentrant checkpointing, is what this recipe runs).
    """
    import tempfile

    from peft import prepare_model_for_kbit_training
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    if case.quant not in ("nf4", "nf4-dq"):
        raise ValueError(f"unknown quant {case.quant!r}")
    qcfg = BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=case.quant == "nf4-dq",
        bnb_4bit_compute_dtype=torch.bfloat16,
    )
    with tempfile.TemporaryDirectory(prefix="calibrate-qlora-") as tmp:
        model.save_pretrained(tmp)
        del model
        gc.collect()
        qmodel = AutoModelForCausalLM.from_pretrained(
            tmp,
            quantization_config=qcfg,
            dtype=torch.bfloat16,
            device_map={"": str(device)},
            attn_implementation=case.attention,
        )
    qmodel.config.use_cache = False
    return prepare_model_for_kbit_training(qmodel, use_gradient_checkpointing=case.checkpointing)


class ParamCounts(TypedDict):
    """Parameter counts of a built model, as the record stores them."""

    total: int
    trainable: int
    by_dtype: dict[str, int]


def param_counts(model: torch.nn.Module) -> ParamCounts:
    seen: set[int] = set()
    total = trainable = 0
    by_dtype: dict[str, int] = {}
    for p in model.parameters():  # parameters() already yields tied tensors once
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
        if p.requires_grad:
            trainable += p.numel()
        key = str(p.dtype).replace("torch.", "")
        by_dtype[key] = by_dtype.get(key, 0) + p.numel()
    return {"total": total, "trainable": trainable, "by_dtype": by_dtype}


# --------------------------------------------------------------------------------------------
# the step


@contextlib.contextmanager
def native_dropout_routing(enabled: bool) -> Iterator[None]:
    """Route F.dropout through aten.native_dropout while training.

    On CPU ``F.dropout`` multiplies by a noise tensor of the input's dtype (2 or 4 bytes per
    element kept for the backward); on CUDA it calls the fused ``native_dropout`` kernel, whose
    saved mask is a bool tensor (1 byte per element).  Routing makes CPU/fake runs keep what a
    GPU keeps.
    """
    if not enabled:
        yield
        return
    orig = F.dropout

    def dropout(
        input: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
    ) -> torch.Tensor:
        if not training or p == 0.0:
            return input
        if inplace:
            return orig(input, p, training, inplace)
        return torch.native_dropout(input, p, True)[0]

    F.dropout = dropout  # nn.Dropout.forward looks F.dropout up at call time
    try:
        yield
    finally:
        F.dropout = orig


class Bf16MatmulViaFp32(TorchDispatchMode):
    """Compute bf16 matrix products in fp32 and round the result to bf16 (real CPU runs only).

    CPUs without native bf16 instructions multiply bf16 matrices ~100x slower than fp32.  This
    mode sits *below* the MemTracker in the mode stack, so the tracker sees exactly the op it
    would see anyway (bf16 inputs, one bf16 output of the same shape); the fp32 copies live only
    inside the op, like a GPU kernel's workspace, and are invisible to the tracker by design.
    It changes speed and the last bits of the numbers, never the tracked bytes.
    """

    _OPS = frozenset(
        {
            torch.ops.aten.mm.default,
            torch.ops.aten.addmm.default,
            torch.ops.aten.bmm.default,
            torch.ops.aten.baddbmm.default,
        }
    )

    def __torch_dispatch__(
        self,
        func: Any,
        types: tuple[type, ...],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if func in self._OPS and any(
            isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16 for a in args
        ):
            up = tree_map_only(
                torch.Tensor, lambda t: t.float() if t.dtype == torch.bfloat16 else t, args
            )
            return func(*up, **kwargs).to(torch.bfloat16)
        return func(*args, **kwargs)


@contextlib.contextmanager
def fake_swap_fix(fake_mode: Any) -> Iterator[None]:
    """Let ``Module.to()`` work on fake parameters (PEFT moves/casts its adapters).

    ``nn.Module._apply`` always swaps FakeTensor parameters with ``torch.utils.swap_tensors``,
    which refuses tensors that have weak references; FakeTensorMode's converter memo holds one
    to every Parameter made inside the mode.  The memo only maps real tensors to their fakes
    (there are none in a fake run), so it is emptied before each swap.
    """
    if fake_mode is None:
        yield
        return
    orig = torch.utils.swap_tensors

    def swap_tensors(t1: torch.Tensor, t2: torch.Tensor) -> None:
        fake_mode.fake_tensor_converter.tensor_memo.clear()
        orig(t1, t2)

    torch.utils.swap_tensors = swap_tensors
    try:
        yield
    finally:
        torch.utils.swap_tensors = orig


@contextlib.contextmanager
def fake_mask_routing(enabled: bool) -> Iterator[None]:
    """Make transformers take the same attention-mask path on fake tensors as on real ones.

    transformers treats a FakeTensor like a graph being traced: ``masking_utils`` then refuses
    to skip the causal mask (SDPA ``is_causal=True``) and materialises a ``b x 1 x s x s`` mask,
    which a real (or GPU) run with unpadded inputs never builds.  Two patches, fake mode only:
    ``is_tracing`` ignores fake-ness in ``masking_utils``, and ``find_packed_sequence_indices``
    allocates the same small tensors as the real check and returns "not packed" without reading
    a value (our inputs are never packed; the real run reaches the same answer).
    """
    if not enabled:
        yield
        return
    import transformers.masking_utils as mu
    from transformers.utils import import_utils

    orig_is_tracing = mu.is_tracing
    orig_find = mu.find_packed_sequence_indices

    def is_tracing(tensor: Any = None) -> bool:
        return bool(import_utils.is_tracing())  # global tracing only, not "tensor is fake"

    def find_packed_sequence_indices(position_ids: torch.Tensor) -> None:
        first_dummy_value = position_ids[:, :1] - 1
        position_diff = torch.diff(position_ids, prepend=first_dummy_value, dim=-1)
        packed_sequence_mask = (position_diff != 1).cumsum(-1)
        (packed_sequence_mask[:, -1] == 0).all()  # same allocations as the real check
        return None

    mu.is_tracing = is_tracing
    mu.find_packed_sequence_indices = find_packed_sequence_indices
    try:
        yield
    finally:
        mu.is_tracing = orig_is_tracing
        mu.find_packed_sequence_indices = orig_find


@contextlib.contextmanager
def bnb_saves_inputs_emulation(enabled: bool) -> Iterator[None]:
    """Make bitsandbytes' 4-bit matmul keep its input for the backward, as releases before
    0.43.2 did.

    ``MatMul4Bit.forward`` in bitsandbytes 0.41.0-0.43.1 stored ``ctx.tensors = (A, B)``
    (0.41.0 ``bitsandbytes/autograd/_functions.py`` line 523, 0.43.1 line 516): the input A of
    every 4-bit layer stayed alive from its forward until its backward, although the backward
    never reads it (no weight gradient).  Commit 9e753741 ("fix QLoRA mem bug: delete useless
    buffered activation", #1270, first released in 0.43.2) changed it to ``(None, B)``; 0.50.x
    keeps that (line 358).  This wrapper restores the old reference after the current forward,
    so the step keeps exactly what the old releases kept.  ``ctx.tensors`` is a plain attribute
    (not ``save_for_backward``), so non-reentrant checkpointing does not free it either.
    """
    if not enabled:
        yield
        return
    from bitsandbytes.autograd._functions import MatMul4Bit

    orig = MatMul4Bit.__dict__["forward"]

    def forward(ctx: Any, A: Any, B: Any, out: Any = None, bias: Any = None,
                quant_state: Any = None) -> Any:
        result = orig.__func__(ctx, A, B, out, bias, quant_state)
        if not ctx.is_empty and any(ctx.needs_input_grad[:2]):
            ctx.tensors = (A, ctx.tensors[1])
        return result

    MatMul4Bit.forward = staticmethod(forward)
    try:
        yield
    finally:
        MatMul4Bit.forward = orig


def make_optimizer(
    params: list[torch.nn.Parameter], which: str
) -> tuple[torch.optim.Optimizer, str]:
    if which in ("auto", "fused"):
        try:
            return torch.optim.AdamW(params, lr=1e-5, fused=True), "adamw-fused"
        except (RuntimeError, ValueError):
            if which == "fused":
                raise
    return torch.optim.AdamW(params, lr=1e-5, foreach=True), "adamw-foreach"


def train_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    trainable: list[torch.nn.Parameter],
    input_ids: torch.Tensor,
    device_type: str,
    phase: Callable[[str | None], None] = lambda _name: None,
    sync: Callable[[], None] = lambda: None,
) -> None:
    phase("forward")
    with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
        out = model(input_ids=input_ids, labels=input_ids)
        loss = out.loss
    del out  # the Trainer keeps only the loss
    sync()
    phase("backward")
    loss.backward()
    del loss
    sync()
    phase("optimizer")
    torch.nn.utils.clip_grad_norm_(trainable, 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    sync()
    phase(None)


def _versions(bitsandbytes: bool = False) -> dict[str, str]:
    import peft
    import transformers

    out = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "python": platform.python_version(),
    }
    if bitsandbytes:
        import bitsandbytes as bnb

        out["bitsandbytes"] = bnb.__version__
    return out


def quant_summary(model: torch.nn.Module) -> dict[str, Any]:
    """Bytes of the 4-bit base: packed weights, quantisation state, and the params they stand
    for (``quant_state.shape``), plus what ``prepare_model_for_kbit_training`` left in fp32."""
    packed = state = quantised = 0
    blocksize = None
    fp32_frozen = 0
    seen: set[int] = set()
    for p in model.parameters():
        qs = getattr(p, "quant_state", None)
        if qs is not None:
            packed += p.numel() * p.element_size()
            quantised += int(torch.Size(qs.shape).numel())
            blocksize = int(qs.blocksize)
            for t in quant_state_tensors(p):
                key = t.untyped_storage().data_ptr()
                if key not in seen:
                    seen.add(key)
                    state += t.untyped_storage().nbytes()
        elif not p.requires_grad and p.dtype == torch.float32:
            fp32_frozen += p.numel()
    return {
        "quantised_params": quantised,
        "packed_weight_bytes": packed,
        "quant_state_bytes": state,
        "blocksize": blocksize,
        "frozen_fp32_params": fp32_frozen,
    }


def run_case(case: Case) -> dict[str, Any]:
    """Measure one case and return its JSON-able record."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    t0 = time.perf_counter()
    fake = case.mode == "fake"
    if case.mode not in ("real", "fake"):
        raise ValueError(f"unknown mode {case.mode!r}")
    if fake and case.method == "qlora":
        raise ValueError("qlora runs in real mode only: bitsandbytes quantises real weights")
    if case.attention not in ("eager", "sdpa"):
        raise ValueError(f"unknown attention {case.attention!r}")
    if case.device == "auto":
        dev = "cuda" if (torch.cuda.is_available() and not fake) else "cpu"
    else:
        dev = case.device
    device = torch.device(dev)
    on_cuda = device.type == "cuda"

    mode_ctx = FakeTensorMode(allow_non_fake_inputs=False) if fake else contextlib.nullcontext()
    cuda: dict[str, Any] | None = None
    # real CPU runs: bf16 matmuls computed in fp32 (speed only; see Bf16MatmulViaFp32)
    fast_mm = not fake and device.type == "cpu"
    mm_ctx = Bf16MatmulViaFp32() if fast_mm else contextlib.nullcontext()
    with (
        mode_ctx,
        mm_ctx,
        fake_mask_routing(fake),
        native_dropout_routing(case.dropout_routing == "native"),
        bnb_saves_inputs_emulation(case.method == "qlora" and case.bnb_saves_inputs),
    ):
        with fake_swap_fix(mode_ctx if fake else None):
            model, info = build_model(case, device)
        counts = param_counts(model)
        quant = None
        if case.method == "qlora":
            quant = {
                "quant_type": "nf4",
                "double_quant": case.quant == "nf4-dq",
                "compute_dtype": "bfloat16",
                "prepare_model_for_kbit_training": True,
                "saves_inputs": case.bnb_saves_inputs,
                # prepare_model_for_kbit_training passes gradient_checkpointing_kwargs={} on to
                # transformers, which then does not add use_reentrant=False; torch 2.13's
                # checkpoint defaults to use_reentrant=True (torch/utils/checkpoint.py, with a
                # warning), and PEFT adds enable_input_require_grads() for it.
                "checkpointing_use_reentrant": True if case.checkpointing else None,
                **quant_summary(model),
            }
        trainable = [p for p in model.parameters() if p.requires_grad]
        optimizer, opt_name = make_optimizer(trainable, case.optimizer)
        g = torch.Generator(device="cpu").manual_seed(case.seed + 1)
        if fake:
            input_ids = torch.randint(0, info["vocab"], (case.b, case.s), device=device)
        else:
            input_ids = torch.randint(0, info["vocab"], (case.b, case.s), generator=g).to(device)

        sync = torch.cuda.synchronize if on_cuda else (lambda: None)
        # warm-up: allocates AdamW state (exp_avg, exp_avg_sq, step), untracked
        train_step(model, optimizer, trainable, input_ids, device.type, sync=sync)
        gc.collect()
        if on_cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            cuda = {"phases": {}, "allocated_before": int(torch.cuda.memory_allocated())}

        mt = PhaseMemTracker()
        mt.track_external(model, optimizer, input_ids)

        def phase(name: str | None) -> None:
            if on_cuda and cuda is not None:
                if mt.phase is not None:
                    cuda["phases"][mt.phase] = {
                        "max_allocated": int(torch.cuda.max_memory_allocated()),
                        "max_reserved": int(torch.cuda.max_memory_reserved()),
                    }
                torch.cuda.reset_peak_memory_stats()
            mt.set_phase(name)

        with mt:
            start = mt.current_split()
            train_step(model, optimizer, trainable, input_ids, device.type, phase=phase, sync=sync)
            end = mt.current_split()
        tracker_peak = sum(int(v) for v in mt._peak_mem.values())

    if on_cuda and cuda is not None:
        ph = cuda["phases"]
        cuda["max_allocated"] = max(v["max_allocated"] for v in ph.values())
        cuda["max_reserved"] = max(v["max_reserved"] for v in ph.values())
        free, total = torch.cuda.mem_get_info()
        cuda["device_total"] = int(total)
        # used by this process beyond PyTorch's caching allocator ~ CUDA context + libraries
        cuda["non_pytorch_used_estimate"] = int(total - free - torch.cuda.memory_reserved())
        cuda["device_name"] = torch.cuda.get_device_name()

    phase_peaks = {p: int(mt.phase_peak[p]) for p in PHASES}
    peak_phase = max(PHASES, key=lambda p: phase_peaks[p])
    peak = phase_peaks[peak_phase]
    if peak != tracker_peak:  # the two bookkeepings must agree
        raise AssertionError(f"phase peak {peak} != MemTracker peak {tracker_peak}")

    lora = None
    if case.method in ("lora", "qlora"):
        lora = {
            "r": case.lora_r,
            "alpha": case.lora_alpha or 2 * case.lora_r,
            "targets": case.lora_targets,
            "dropout": case.lora_dropout,
            "adapter_dtype": "float32",
        }
    record: dict[str, Any] = {
        "id": case.id or case.default_id(),
        "config": case.slug(),
        "config_path": str(case.config),
        **{
            k: info[k]
            for k in (
                "model_type",
                "vocab",
                "hidden",
                "layers",
                "intermediate",
                "heads",
                "kv_heads",
                "head_dim",
                "tie_word_embeddings",
            )
        },
        **{
            k: info[k]
            for k in ("experts", "experts_per_token", "experts_implementation")
            if k in info
        },
        "method": case.method,
        "lora": lora,
        "b": case.b,
        "s": case.s,
        "tokens": case.b * case.s,
        "attention": case.attention,
        "attention_used": info["attention_used"],
        "checkpointing": case.checkpointing,
        "mode": case.mode,
        "device": device.type,
        "precision": PRECISIONS[case.method],
        "weights_dtype": WEIGHT_DTYPES[case.method],
        "autocast": "bfloat16",
        "optimizer": opt_name,
        "dropout_routing": case.dropout_routing,
        "cpu_bf16_matmul_in_fp32": fast_mm,
        "peak_bytes": peak,
        "peak_phase": peak_phase,
        "phase_peaks": phase_peaks,
        "split_at_peak": _named_split(mt.phase_peak_snap[peak_phase]),
        "phase_splits": {p: _named_split(mt.phase_peak_snap[p]) for p in PHASES},
        "start_split": _named_split(start),
        "end_split": _named_split(end),
        "params": {
            "total": counts["total"],
            "trainable": counts["trainable"],
            "by_dtype": counts["by_dtype"],
        },
        "cuda": cuda,
        "versions": _versions(bitsandbytes=case.method == "qlora"),
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if quant is not None:
        record["quant"] = quant
    del model, optimizer, trainable, input_ids
    gc.collect()
    return record


def gib(n: int) -> float:
    return n / 2**30


def summarize(rec: dict[str, Any]) -> str:
    sp = rec["split_at_peak"]
    return (
        f"{rec['id']}: peak {gib(rec['peak_bytes']):.3f} GiB in {rec['peak_phase']} "
        f"(params {gib(sp['parameters']):.3f}, grads {gib(sp['gradients']):.3f}, "
        f"opt {gib(sp['optimizer_states']):.3f}, act {gib(sp['activations']):.3f}, "
        f"tmp {gib(sp['temporaries']):.3f}) {rec['seconds']:.1f}s"
    )


__all__ = ["Case", "PhaseMemTracker", "run_case", "summarize", "train_step"]
