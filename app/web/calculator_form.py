"""The calculator's fields: parse query or form values into a Job, with per-field errors.

The same parser serves ``GET /?...`` (shareable links), the no-JavaScript POST, htmx and the
quote form (which carries the sizing it was asked from), so a link always reproduces the
result it was copied from. Short, stable parameter names keep the links readable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlencode

from app.catalog import hub, inline_config
from app.catalog.hub import HubModel
from app.engine import Job, checkpointing
from app.engine import precision as dtypes
from app.engine.activations import Attention
from app.engine.checkpointing import CheckpointingSetting
from app.engine.sharding import SHARDING_IMPLS
from app.engine.states import (
    LORA_TARGET_PRESETS,
    METHODS,
    MOE_LORAS,
    OFFLOADS,
    OPTIMIZERS,
    QUANTS,
    SHARDINGS,
)
from app.errors import InvalidInput
from app.estimates import job_limits
from app.estimates.job_input import CALCULATOR_OMITS, JobInput
from app.estimates.service import EstimateRequest, LibrarySwitches, library_switches
from app.estimates.token_count import parse_token_count
from app.html import config_errors, forms
from app.html.forms import N_, FieldErrors
from app.web import engine_errors

CUSTOM_MODEL: Final = "custom"
MAX_CONFIG_MB: Final = inline_config.MAX_POSTED_BYTES // (1024 * 1024)
"""The most a pasted config.json may take, as the field's label says it."""
DEFAULT_MODEL: Final = "llama-3.1-8b"
MAX_BATCH: Final = job_limits.MAX_BATCH_SIZE
MAX_SEQ: Final = job_limits.MAX_SEQ_LEN
MAX_GPUS: Final = job_limits.MAX_GPUS
MAX_RANK: Final = job_limits.MAX_LORA_RANK

ATTENTION_CHOICES: Final[tuple[Attention, ...]] = ("flash", "eager")

METHOD_LABELS: Final = {
    "full": N_("Full fine-tune"), "lora": N_("LoRA"), "qlora": N_("QLoRA (4-bit base)"),
}
OPTIMIZER_LABELS: Final = {
    "adamw": N_("AdamW"), "adamw_8bit": N_("8-bit AdamW"),
    "paged_adamw_32bit": N_("Paged AdamW (32-bit)"), "paged_adamw_8bit": N_("Paged 8-bit AdamW"),
    "sgd": N_("SGD with momentum"), "adafactor": N_("Adafactor"),
}
TARGET_LABELS: Final = {
    "all-linear": N_("All linear layers"), "attention": N_("Attention (q, k, v, o)"),
    "qv": N_("q and v only"), "mlp": N_("MLP only"),
}
ATTENTION_LABELS: Final = {
    "flash": N_("FlashAttention / SDPA"), "eager": N_("Eager (quadratic)"),
}
METHOD_CHOICES: Final = {
    "full": N_("Full fine-tune (16-bit weights)"),
    "lora": N_("LoRA (16-bit base)"),
    "qlora": N_("QLoRA (4-bit NF4 base, double quantisation)"),
    "qlora:nf4": N_("QLoRA (4-bit NF4 base, no double quantisation)"),
}
"""Method and base weights as one choice: a 4-bit base goes with QLoRA
only, so the page offers no combination the engine refuses. ``method:quant`` where the quant
is not the method's own (QLoRA's is NF4 with double quantisation, the engine's default)."""
FIELDS: Final = ("model", "config", "method", "quant", "optimizer", "rank", "targets", "batch",
                  "seq", "attention", "gpus", "sharding", "offload", "gpu", "framework",
                  "precision", "adapter", "base", "bnb", "impl", "moe", "dataset", "epochs",
                  "compare")
"""Every field that can carry an error (htmx swaps each one's message out of band)."""
ADVANCED_FIELDS: Final = ("framework", "precision", "adapter", "base", "bnb", "moe", "gpus",
                          "sharding", "impl", "offload", "change", "gpu", "dataset", "epochs",
                          "compare")
"""The controls in the calculator's "Advanced" section, which opens when one of them is set
(a shared link with several GPUs or a sharding) or has an error."""
SHARDING_LABELS: Final = {
    "none": N_("None (data parallel)"), "zero1": N_("ZeRO-1 (optimizer states)"),
    "zero2": N_("ZeRO-2 (+ gradients)"), "zero3": N_("ZeRO-3 / FSDP (+ weights)"),
}
OFFLOAD_LABELS: Final = {
    "none": N_("None"), "optimizer": N_("Optimizer states to CPU"),
    "optimizer+params": N_("Optimizer states and weights to CPU"),
}

# Training precision: "" is "as the framework trains" (the engine's None).
FRAMEWORK_LABELS: Final = {
    "hf": N_("Hugging Face Trainer + PEFT"), "torchtune": N_("torchtune"),
    "litgpt": N_("LitGPT"), "unsloth": N_("Unsloth"),
}
PRECISION_LABELS: Final = {
    "": N_("As the framework trains"), "amp": N_("Mixed (fp32 master weights, bf16 autocast)"),
    "bf16": N_("Pure bf16 (weights, gradients, optimizer states)"),
}
DTYPE_LABELS: Final = {"": N_("As the framework trains"), "fp32": N_("fp32"), "bf16": N_("bf16")}
"""The adapters' and the frozen base's dtype."""
BNB_LABELS: Final = {
    "current": N_("bitsandbytes 0.43.2 or later"),
    "0.41": N_("bitsandbytes 0.41 to 0.43.1 (most QLoRA figures published in 2023 and 2024)"),
}
"""QLoRA's bitsandbytes release (``precision.BNB_VERSIONS``); only QLoRA takes 0.41."""
IMPL_LABELS: Final = {
    "deepspeed": N_("DeepSpeed ZeRO-3"),
    "fsdp": N_("PyTorch FSDP (full shard)"),
}
"""Who runs ZeRO-3 sharding (``sharding.SHARDING_IMPLS``); only ZeRO-3 takes FSDP."""
MOE_LORA_LABELS: Final = {
    "fused": N_("Fused experts, as PEFT 0.21 on transformers 5 builds it"),
    "per-expert": N_("One adapter per expert (transformers 4, most training stacks)"),
}
"""How LoRA adapts a mixture of experts (``states.MOE_LORAS``); dense models ignore it."""

CKPT_LABELS: Final = {"": N_("Automatic"), "1": N_("On"), "0": N_("Off")}
"""Gradient checkpointing: "" automatic (:func:`app.engine.checkpointing.choose`, the one rule
the API's and the CLI's ``auto`` follow), "1" on, "0" off."""
CKPT_SETTINGS: Final[dict[str, CheckpointingSetting]] = {"": "auto", "1": "on", "0": "off"}
"""The form's values as the estimates service's ``checkpointing``."""
CKPT_AUTO_PARAMS: Final = checkpointing.AUTO_PARAMS
CKPT_AUTO_SEQ: Final = checkpointing.AUTO_SEQ

CONFIG_REQUEST_FIELD: Final = "model_config"
"""The estimate request's field for a pasted config.json (the API's body field too)."""

# Engine field -> form field, to put an engine error beside its control.
ENGINE_FIELDS: Final = {
    "batch_size": "batch", "seq_len": "seq", "lora_rank": "rank", "lora_targets": "targets",
    "quant": "quant", "method": "method", "optimizer": "optimizer", "gpus": "gpus",
    "sharding": "sharding", "offload": "offload", "attention": "attention", "model": "model",
    "gpu": "gpu", "precision": "precision", "adapter_dtype": "adapter", "base_dtype": "base",
    "framework": "framework", "bnb_version": "bnb", "sharding_impl": "impl",
    "expandable_segments": "segments",
    "moe_lora": "moe",
    "dataset_tokens": "dataset", "epochs": "epochs", "compare": "compare",
}


# The form's defaults are the engine's own job defaults, so the page, the API and the CLI
# start from the same job.
DEFAULT_JOB: Final = Job()
DEFAULT_DATASET: Final = "10M"
"""The data per epoch as the field shows it by default: the engine's 10,000,000 tokens."""
MAX_EPOCHS: Final = job_limits.MAX_EPOCHS


@dataclass
class CalculatorInput:
    """What the customer asked, as the form shows it (valid or not)."""

    model: str = DEFAULT_MODEL
    config_text: str = ""
    method: str = DEFAULT_JOB.method
    optimizer: str = DEFAULT_JOB.optimizer
    rank: int = DEFAULT_JOB.lora_rank
    targets: str = "all-linear"
    quant: str = ""
    batch: int = DEFAULT_JOB.batch_size
    seq: int = DEFAULT_JOB.seq_len
    ckpt: str = ""
    """"" automatic (the estimates service settles it), "1" on, "0" off."""
    attention: str = DEFAULT_JOB.attention
    gpus: int = DEFAULT_JOB.gpus
    sharding: str = DEFAULT_JOB.sharding
    offload: str = DEFAULT_JOB.offload
    framework: str = DEFAULT_JOB.framework
    precision: str = ""
    adapter: str = ""
    base: str = ""
    bnb: str = "current"
    impl: str = "deepspeed"
    segments: bool = DEFAULT_JOB.expandable_segments
    change: bool = False
    """Whether a setup may turn LoRA into QLoRA (the API's ``allow_method_change``)."""
    moe: str = DEFAULT_JOB.moe_lora
    gpu: str = ""
    dataset: str = DEFAULT_DATASET
    """The customer's data per epoch as typed (``10M``, ``250k``); ``tokens`` as read."""
    tokens: int = DEFAULT_JOB.dataset_tokens
    epochs: int = DEFAULT_JOB.epochs
    compare: str = ""
    """A comparison card (not sold) to hold the job against beside ours."""
    config: Mapping[str, Any] | None = field(default=None, repr=False)
    # the Hub repository's config.json, once the page has looked it up (calculator.page)
    hub: HubModel | None = field(default=None, repr=False)

    @property
    def is_custom(self) -> bool:
        return self.model == CUSTOM_MODEL

    @property
    def method_choice(self) -> str:
        """The one control's value for the method and the base weights (``METHOD_CHOICES``)."""
        if self.method == "qlora" and self.quant and self.quant != "nf4-dq":
            return f"qlora:{self.quant}"
        return self.method

    @property
    def advanced_set(self) -> bool:
        """Whether any "Advanced" control differs from its default."""
        default = CalculatorInput()
        return any(getattr(self, name) != getattr(default, name) for name in ADVANCED_FIELDS)

    @property
    def is_repo(self) -> bool:
        """A Hugging Face repository id, not a catalog slug (``app/catalog/hub.py``)."""
        return hub.is_repo_id(self.model)

    def query(self) -> dict[str, str]:
        """The shareable parameters (never the pasted config, which does not fit a URL)."""
        values: dict[str, str] = {
            "model": self.model, "method": self.method, "optimizer": self.optimizer,
            "batch": str(self.batch), "seq": str(self.seq),
        }
        if self.method != "full":
            values.update(rank=str(self.rank), targets=self.targets)
        if self.quant:
            values["quant"] = self.quant
        if self.ckpt:
            values["ckpt"] = self.ckpt
        if self.attention != "flash":
            values["attention"] = self.attention
        if self.gpus != 1:
            values["gpus"] = str(self.gpus)
        if self.sharding != "none":
            values["sharding"] = self.sharding
        if self.offload != "none":
            values["offload"] = self.offload
        if self.framework != DEFAULT_JOB.framework:
            values["framework"] = self.framework
        for name in ("precision", "adapter", "base"):
            if getattr(self, name):
                values[name] = getattr(self, name)
        if self.bnb != "current":
            values["bnb"] = self.bnb
        if self.impl != "deepspeed":
            values["impl"] = self.impl
        if self.segments:
            values["segments"] = "1"
        if self.change:
            values["change"] = "1"
        if self.moe != DEFAULT_JOB.moe_lora:
            values["moe"] = self.moe
        if self.gpu:
            values["gpu"] = self.gpu
        if self.tokens != DEFAULT_JOB.dataset_tokens:
            values["dataset"] = self.dataset
        if self.epochs != DEFAULT_JOB.epochs:
            values["epochs"] = str(self.epochs)
        if self.compare:
            values["compare"] = self.compare
        return values

    def url(self) -> str:
        """The link that reproduces this result; None-like for a pasted config."""
        return "/?" + urlencode(self.query())

    def job_input(self) -> JobInput:
        """The form's fields as the one input every surface fills
        (:mod:`app.estimates.job_input`); what the page does not offer keeps its default."""
        return JobInput.of({
            "method": self.method, "optimizer": self.optimizer, "lora_rank": self.rank,
            "lora_targets": self.targets, "quant": self.quant or None, "batch_size": self.batch,
            "seq_len": self.seq, "gradient_checkpointing": CKPT_SETTINGS.get(self.ckpt, "auto"),
            "allow_method_change": self.change, "attention": self.attention, "gpus": self.gpus,
            "sharding": self.sharding, "sharding_impl": self.impl, "moe_lora": self.moe,
            "offload": self.offload, "expandable_segments": self.segments,
            "dataset_tokens": self.tokens, "epochs": self.epochs,
            "precision": self.precision or None, "adapter_dtype": self.adapter or None,
            "base_dtype": self.base or None, "framework": self.framework, "bnb_version": self.bnb,
        }, omitted=CALCULATOR_OMITS)

    def job(self) -> Job:
        return self.job_input().job()

    def switches(self) -> LibrarySwitches:
        """The bitsandbytes and sharding switches, checked as the API and the CLI check them."""
        return library_switches(bnb_version=self.bnb, method=self.method,
                                sharding_impl=self.impl, sharding=self.sharding)

    def estimate_request(self) -> EstimateRequest:
        compare = (self.compare,) if self.compare else ()
        if self.is_custom or self.hub is not None:
            return self.job_input().request(model_config=self.config or {},
                                            compare_slugs=compare)
        return self.job_input().request(model_slug=self.model, compare_slugs=compare)


def parse(data: Mapping[str, str]) -> tuple[CalculatorInput, FieldErrors]:
    """Read the calculator's fields; an absent field takes its default."""
    errors = FieldErrors()
    data, slug = _cleaned(data, errors)
    d = CalculatorInput()
    calc = CalculatorInput(
        model=slug,
        method=forms.choice(data, "method", errors, choices=METHODS, default=d.method),
        optimizer=forms.choice(data, "optimizer", errors, choices=OPTIMIZERS, default=d.optimizer),
        rank=forms.integer(data, "rank", errors, default=d.rank, minimum=1, maximum=MAX_RANK),
        targets=forms.choice(
            data, "targets", errors, choices=LORA_TARGET_PRESETS, default="all-linear"
        ),
        quant=forms.choice(data, "quant", errors, choices=("", *QUANTS), default=""),
        batch=forms.integer(data, "batch", errors, default=d.batch, minimum=1, maximum=MAX_BATCH),
        seq=forms.integer(data, "seq", errors, default=d.seq, minimum=1, maximum=MAX_SEQ),
        ckpt=_ckpt(data.get("ckpt", "")),
        attention=forms.choice(
            data, "attention", errors, choices=ATTENTION_CHOICES, default=d.attention
        ),
        gpus=forms.integer(data, "gpus", errors, default=d.gpus, minimum=1, maximum=MAX_GPUS),
        sharding=forms.choice(data, "sharding", errors, choices=SHARDINGS, default=d.sharding),
        offload=forms.choice(data, "offload", errors, choices=OFFLOADS, default=d.offload),
        framework=forms.choice(data, "framework", errors, choices=dtypes.FRAMEWORKS,
                               default=d.framework),
        precision=forms.choice(data, "precision", errors, choices=("", *dtypes.PRECISIONS),
                               default=""),
        adapter=forms.choice(data, "adapter", errors, choices=("", *dtypes.ADAPTER_DTYPES),
                             default=""),
        base=forms.choice(data, "base", errors, choices=("", *dtypes.BASE_DTYPES), default=""),
        bnb=forms.choice(data, "bnb", errors, choices=dtypes.BNB_VERSIONS, default="current"),
        impl=forms.choice(data, "impl", errors, choices=SHARDING_IMPLS, default="deepspeed"),
        segments=forms.flag(data, "segments"),
        change=forms.flag(data, "change"),
        moe=forms.choice(data, "moe", errors, choices=MOE_LORAS, default=d.moe),
        gpu=data.get("gpu", "").strip()[:64],
        epochs=forms.integer(data, "epochs", errors, default=d.epochs, minimum=1,
                             maximum=MAX_EPOCHS),
        compare=data.get("compare", "").strip()[:64],
    )
    calc.dataset, calc.tokens = _dataset(data.get("dataset", ""), errors)
    if calc.is_custom:
        calc.config_text = data.get("config", "")
        # the one config.json reader every surface uses, worded as every page words it
        calc.config = config_errors.read(calc.config_text, errors, "config")
    try:  # the rules every surface shares: 0.41 only for QLoRA, fsdp only for ZeRO-3
        calc.switches()
    except InvalidInput as error:
        engine_errors.add(errors, engine_error_field(error.field or ""), error)
    return calc, errors


def _cleaned(data: Mapping[str, str], errors: FieldErrors) -> tuple[Mapping[str, str], str]:
    """The fields with control characters emptied (each named in ``errors``), the method
    choice split, and the model slug (the default for an empty or overlong one)."""
    # free text here (the others are choices and numbers), even where it is not used
    for name, multiline in (("model", False), ("gpu", False), ("ckpt", False), ("config", True),
                            ("dataset", False), ("compare", False)):
        if not forms.no_control(data, name, errors, multiline=multiline):
            data = {**data, name: ""}
    method, _, quant = data.get("method", "").partition(":")
    if quant:  # the page's one choice for method and base weights, "qlora:nf4"
        data = {**data, "method": method, "quant": quant}
    slug = data.get("model", "").strip() or DEFAULT_MODEL
    if len(slug) > hub.MAX_MODEL_CHARS:
        errors.add("model", N_("No such model in our catalog."))
        slug = DEFAULT_MODEL
    return data, slug


def _dataset(raw: str, errors: FieldErrors) -> tuple[str, int]:
    """The data per epoch as typed and as tokens (``10M``, ``250k``, ``1.5B``); the default
    when empty, an error beside the field when unreadable or out of bounds."""
    text = raw.strip()[:32] or DEFAULT_DATASET
    try:
        return text, parse_token_count(text)
    except InvalidInput:
        errors.add("dataset", N_("Enter a number of tokens such as 10M, 250k or 1.5B (at "
                                 "most 10 trillion)."))
        return text, DEFAULT_JOB.dataset_tokens


def _ckpt(raw: str) -> str:
    """"1"/"on"/"true" on, "0"/"off"/"false" off, anything else automatic."""
    value = raw.strip().lower()
    if value in {"1", "on", "true", "yes"}:
        return "1"
    return "0" if value in {"0", "off", "false", "no"} else ""


def engine_error_field(field: str) -> str:
    """The form field beside which a service error on request field ``field`` goes:
    ``seq_len`` -> ``seq``, a pasted config.json's fields (``model_config.<name>``, the
    request's path to them) -> ``config``; fields the form has no control for go to model."""
    if field == CONFIG_REQUEST_FIELD or field.startswith(f"{CONFIG_REQUEST_FIELD}."):
        return "config"
    return ENGINE_FIELDS.get(field, "model")
