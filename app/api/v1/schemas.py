"""The partner contract, v1: every request and response body of /api/v1 (Pydantic v2).

This module is the public contract (docs/architecture.md rule 12). It is pinned by
``tests/api/v1/openapi.snapshot.json``: changing a field here fails that test until the
snapshot is regenerated on purpose. Internal records (catalog, estimates, quotes) may change
freely; the routers map them onto these models.

Conventions: sizes are bytes (integers, ``*_bytes``); money is a decimal string in EUR, net
of VAT, with two places (``"8990.00"``), or null for "price on request".
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from app import text_input
from app.catalog import hub, inline_config
from app.catalog.schemas import StockStatus, SystemKind
from app.engine import serving as serving_engine
from app.engine.activations import Attention
from app.engine.checkpointing import CheckpointingReason, CheckpointingSetting
from app.engine.precision import AdapterDtype, BaseDtype, BnbVersion, Framework, Precision
from app.engine.serving import KvDtype, Runtime
from app.engine.serving_weights import WeightFormat
from app.engine.sharding import ShardingImpl
from app.engine.states import Accounting, Method, MoeLora, Offload, Optimizer, Quant, Sharding
from app.estimates import job_limits, memory_size
from app.estimates.serving import WeightChoice
from app.quotes.schemas import AcceptedVia, ItemKind, LineKind, QuoteStatus, Workload

Slug = Annotated[str, StringConstraints(min_length=1, max_length=100)]
ModelName = Annotated[str, StringConstraints(min_length=1, max_length=hub.MAX_MODEL_CHARS)]
"""A catalog slug or a Hugging Face repository id (``app/catalog/hub.py`` holds its rules)."""
Money = Annotated[str, Field(pattern=r"^[0-9]+\.[0-9]{2}$", examples=["8990.00"])]
Text200 = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class _In(BaseModel):
    """A request body: every text in it (a list's items too) is held to the one control
    character check (:mod:`app.text_input`), as sent, before any stripping; a 422 at the
    field. ``_MULTILINE`` names the fields that may hold tab and line breaks."""

    _MULTILINE: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*", mode="before")
    @classmethod
    def _no_control_characters(cls, value: Any, info: ValidationInfo) -> Any:
        multiline = info.field_name in cls._MULTILINE
        texts = value if isinstance(value, list) else [value]
        if any(isinstance(text, str)
               and text_input.control_character(text, multiline=multiline) is not None
               for text in texts):
            raise PydanticCustomError(text_input.KEY, text_input.REASON)
        return value


# --- problems ------------------------------------------------------------------------------


class ProblemField(_Out):
    """One invalid input: where it is and what is wrong with it."""

    location: str = Field(examples=["body.batch_size"])
    reason: str = Field(examples=["Input should be less than or equal to 4096"])


class Problem(_Out):
    """RFC 9457 problem details (``application/problem+json``)."""

    type: str = Field(examples=["/api/v1/docs#problem-invalid-input"])
    title: str = Field(examples=["Invalid input"])
    status: int = Field(examples=[422])
    detail: str = Field(examples=["1 field is invalid"])
    code: str = Field(
        description="Stable machine-readable name of the problem.", examples=["invalid_input"]
    )
    errors: list[ProblemField] | None = Field(
        default=None, description="One entry per invalid field (422 only)."
    )


# --- catalog -------------------------------------------------------------------------------


PRICE_INDICATIVE = ("true: price_eur_net is a public, dated list price from the seed catalog "
                    "(converted to EUR at a stated rate), not yet confirmed by the shop.")
PRICE_SOURCE = ("Where the price comes from: the seed's source (amount, currency, rate), or "
                "'staff' for a price the shop set; null: never priced.")
PRICE_DATE = "When that price was published (YYYY-MM) or set by the shop (YYYY-MM-DD)."


class Gpu(_Out):
    """A card of the catalog: one the shop sells, or a comparison card (``comparison_only``)."""

    slug: str = Field(examples=["rtx-pro-6000"])
    name: str = Field(examples=["NVIDIA RTX PRO 6000 Blackwell"])
    architecture: str
    compute_capability: str = Field(examples=["12.0"])
    memory_nominal_gb: int = Field(examples=[96])
    usable_bytes: int = Field(description="Memory a training process can use.")
    usable_basis: str
    memory_type: str
    memory_bandwidth_gbps: float = Field(description="GB/s")
    bf16_dense_tflops: float | None
    fp8_dense_tflops: float | None
    fp4_dense_tflops: float | None
    interconnect: str = Field(examples=["pcie"])
    interconnect_bandwidth_gbps: float | None
    max_power_w: int | None
    form_factor: str
    mig_instances: int | None
    price_eur_net: Money | None
    price_indicative: bool = Field(default=False, description=PRICE_INDICATIVE)
    price_source: str | None = Field(default=None, description=PRICE_SOURCE)
    price_date: str | None = Field(default=None, description=PRICE_DATE)
    stock_status: StockStatus
    product_url: str | None
    comparison_only: bool = Field(
        default=False, description="Not sold by the shop: a card to compare with. Estimates "
        "hold a job against it only when `gpu` names it; never recommended or quoted.")


class System(_Out):
    """A configured workstation, server or appliance: ``gpu_count`` x ``gpu``."""

    slug: str = Field(examples=["ws-4x-rtx-pro-6000"])
    name: str
    kind: SystemKind
    gpu: str = Field(description="Slug of the card inside.", examples=["rtx-pro-6000"])
    gpu_count: int = Field(examples=[4])
    gpu_interconnect: str
    host_ram_gb: int | None
    price_eur_net: Money | None
    price_indicative: bool = Field(default=False, description=PRICE_INDICATIVE)
    price_source: str | None = Field(default=None, description=PRICE_SOURCE)
    price_date: str | None = Field(default=None, description=PRICE_DATE)
    stock_status: StockStatus
    product_url: str | None


class ModelParams(_Out):
    total: int
    active: int
    linear: int
    embedding: int
    lm_head: int
    norm: int
    other: int


class ModelSummary(_Out):
    """A catalog model (its parameter split is the engine's, exact to the parameter)."""

    slug: str = Field(examples=["llama-3.1-8b"])
    hf_id: str = Field(examples=["meta-llama/Llama-3.1-8B"])
    family: str = Field(examples=["Llama"])
    params: ModelParams
    max_positions: int | None
    license: str
    gated: bool


class ModelDetail(ModelSummary):
    """A catalog model with its Hugging Face config.json."""

    config: dict[str, Any]


class GpuList(_Out):
    items: list[Gpu]


class SystemList(_Out):
    items: list[System]


class ModelPage(_Out):
    """One page of models, ordered by slug. Pass ``next_cursor`` as ``cursor`` for the next."""

    items: list[ModelSummary]
    next_cursor: str | None = Field(description="Null on the last page.")


# --- estimates -----------------------------------------------------------------------------


def not_a_boolean(value: Any) -> Any:
    """Refuse JSON ``true`` and ``false`` where a number belongs: pydantic's lax mode would
    read them as 1 and 0, so ``"batch_size": true`` would size a batch of one."""
    if isinstance(value, bool):
        raise ValueError("Input should be a number, not true or false")
    return value


def count_or_cards(schema: dict[str, Any]) -> None:
    """``gpus`` in the contract: the count (an integer within its bounds) or a list of card
    slugs (:func:`cards_named_gpus`)."""
    count = {key: schema.pop(key) for key in ("type", "minimum", "maximum") if key in schema}
    cards = {"type": "array", "maxItems": MAX_CARDS,
             "items": {"type": "string", "minLength": 1, "maxLength": 100}}
    schema["anyOf"] = [count, cards]


MAX_CARDS = 64
"""Cards one request may name (``gpu``, or ``gpus`` as a list)."""


def _card_slugs(value: list[Any]) -> bool:
    """Whether ``value`` is what ``gpu`` takes: at most :data:`MAX_CARDS` slugs of 1 to 100
    characters without control characters."""
    return len(value) <= MAX_CARDS and all(
        isinstance(card, str) and 1 <= len(card) <= 100
        and text_input.control_character(card) is None for card in value)


def cards_named_gpus(data: Any) -> Any:
    """``"gpus": ["a100-80gb"]`` (a list of card slugs) is ``"gpu": ["a100-80gb"]`` with one
    GPU; a number stays the count. A list is left in ``gpus`` where ``gpu`` names cards too or
    the list is not one of card slugs: :func:`cards_given_once` then refuses it at its field."""
    if not isinstance(data, dict) or not isinstance(data.get("gpus"), list):
        return data
    cards = data["gpus"]
    if data.get("gpu") or not _card_slugs(cards):
        return data
    return {**{key: value for key, value in data.items() if key != "gpus"}, "gpu": cards}


def cards_given_once(value: Any) -> Any:
    """A list left in ``gpus`` by :func:`cards_named_gpus`: a 422 at ``body.gpus`` saying
    why (a control character, not card slugs, or cards named in ``gpu`` as well)."""
    if not isinstance(value, list):
        return value
    if any(isinstance(card, str) and text_input.control_character(card) is not None
           for card in value):
        raise PydanticCustomError(text_input.KEY, text_input.REASON)
    if not _card_slugs(value):
        raise PydanticCustomError(
            "card_slugs", "a number of GPUs, or a list of at most 64 card slugs")
    raise PydanticCustomError("cards_twice", "give the cards in gpus or in gpu, not both")


class EstimateInput(_In):
    """A fine-tuning job: the fields of ``sizer estimate``. Give ``model`` or ``model_config``."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [
            {"model": "llama-3.1-8b", "method": "lora", "batch_size": 4, "seq_len": 2048},
            {"model": "qwen3-32b", "method": "qlora", "gpu": ["rtx-pro-4500"]},
        ]},
    )

    workload: Literal["training"] = Field(
        default="training", description="training (this body) or serving (/recommendations "
        "and a quote request's estimate only: the body of /serving-estimates).")
    model: ModelName | None = Field(
        default=None, description="A catalog model's slug, or a Hugging Face repository id "
        "(`Qwen/Qwen3-8B`, optionally `@revision`): the catalog's model of that id, else the "
        "repository's config.json, fetched and kept with its commit.",
        examples=["llama-3.1-8b", "Qwen/Qwen3-8B"])
    inline_config: dict[str, Any] | None = Field(
        default=None, alias="model_config",
        description="A Hugging Face config.json object, instead of `model`: at most 4 MB, "
        "and 256 KB once its quantization_config is summarised (a quantised export's list "
        "of layers counted, not kept).",
    )
    method: Method = Field(description="full, lora or qlora.")
    optimizer: Optimizer = "adamw"
    accounting: Accounting = Field(
        default="zero", description="zero: 16 bytes/param (ZeRO paper); hf: 18 (Hugging Face)."
    )
    lora_rank: int = Field(default=16, ge=1, le=job_limits.MAX_LORA_RANK)
    lora_targets: str = Field(
        default="all-linear", min_length=1, max_length=500,
        description="all-linear, attention, qv, mlp, or module names separated by commas.",
    )
    lora_dropout: float = Field(default=0.0, ge=0.0, lt=1.0, allow_inf_nan=False)
    quant: Quant | None = Field(default=None, description="QLoRA only; default nf4-dq.")
    batch_size: int = Field(default=1, ge=1, le=job_limits.MAX_BATCH_SIZE,
                            description="Micro-batch per GPU.")
    seq_len: int = Field(default=2048, ge=1, le=job_limits.MAX_SEQ_LEN,
                         description="Tokens per sequence.")
    allow_method_change: bool = Field(
        default=False, description="Let a setup turn LoRA into QLoRA where that is what makes "
        "the job fit (the recommendation and each card's setup).")
    gradient_checkpointing: CheckpointingSetting | bool = Field(
        default="auto", description="auto (on for QLoRA, as PEFT's "
        "prepare_model_for_kbit_training turns it on; on for models of 20B parameters and more "
        "and for sequences of 8192 tokens and more, as the published recipes run; off "
        "otherwise), on or off; true and false mean on and off. The answer's `checkpointing` "
        "says what was used and why.")
    attention: Attention = "flash"
    gpus: int = Field(
        default=1, ge=1, le=job_limits.MAX_GPUS, json_schema_extra=count_or_cards,
        description="The number of GPUs of the job (data parallel, with `sharding`); or, as a "
        "list of card slugs (`\"gpus\": [\"a100-80gb\"]`), the cards to hold the job "
        "against: the same as `gpu`, whose name stays accepted. Give the cards in one of the "
        "two.")
    sharding: Sharding = "none"
    sharding_impl: ShardingImpl = Field(
        default="deepspeed", description="Who runs sharding zero3: deepspeed (DeepSpeed "
        "ZeRO-3, its gradient bucket and prefetch) or fsdp (PyTorch FSDP FULL_SHARD, the "
        "computing and the prefetched next layer). fsdp is refused unless sharding is zero3.")
    moe_lora: MoeLora = Field(
        default="fused", description="How LoRA adapts a mixture of experts: fused (as PEFT "
        "0.21 on transformers 5 builds it: each fused expert tensor per expert, the gate/up "
        "one at rank 2r) or per-expert (one adapter per expert's gate, up and down projection, "
        "as transformers 4 built them). Also the layout QLoRA loads: fused experts and routers "
        "stay 16-bit (fp32 after PEFT's prepare_model_for_kbit_training), per-expert ones are "
        "NF4. Dense models: no difference.")
    offload: Offload = "none"
    chunked_loss: bool = Field(default=False, description="A chunked or fused cross-entropy.")
    fused_optimizer_step: bool = False
    activation_offload: bool = False
    expandable_segments: bool = Field(
        default=False, description="PyTorch's caching allocator with PYTORCH_CUDA_ALLOC_CONF="
        "expandable_segments:True (set by Unsloth and axolotl): a smaller allocator reserve.")
    gradient_accumulation: int = Field(default=1, ge=1,
                                       le=job_limits.MAX_GRADIENT_ACCUMULATION)
    dataset_tokens: int = Field(
        default=10_000_000, ge=1, le=job_limits.MAX_DATASET_TOKENS,
        description="Tokens of training data per epoch, for each card's training time "
        "(`training.hours`).")
    epochs: int = Field(default=1, ge=1, le=job_limits.MAX_EPOCHS,
                        description="Passes over the data.")
    precision: Precision | None = Field(
        default=None, description="amp: fp32 master weights with bf16 autocast (the Hugging "
        "Face Trainer's bf16=True); bf16: pure bf16, weights, gradients and optimizer states "
        "in bf16 (torchtune, LitGPT bf16-true). Default: as `framework` trains.")
    adapter_dtype: AdapterDtype | None = Field(
        default=None, description="LoRA adapters' dtype, fp32 or bf16. Default: as "
        "`framework` trains.")
    base_dtype: BaseDtype | None = Field(
        default=None, description="The frozen base's dtype for LoRA/QLoRA, bf16 or fp32. "
        "Default: bf16.")
    framework: Framework = Field(
        default="hf", description="Set the dtypes as this framework's recipes do: hf, "
        "torchtune, litgpt or unsloth; explicit dtypes override it.")
    bnb_version: BnbVersion = Field(
        default="current", description="QLoRA's bitsandbytes release: current (0.43.2 or "
        "later) or 0.41 (0.41 to 0.43.1, which kept every 4-bit layer's input for the backward "
        "pass, as most QLoRA figures published in 2023 and 2024 were measured). 0.41 is "
        "refused for lora and full.")
    gpu: list[Slug] = Field(
        default_factory=list, max_length=MAX_CARDS,
        description="Hold the job against these cards only (or give them as `gpus`); default "
        "every card the shop sells. Comparison cards (`comparison_only` in `/gpus`, e.g. "
        "`h200-sxm`, `a100-80gb`) are held against the job only when named here.",
    )

    @property
    def checkpointing_setting(self) -> CheckpointingSetting:
        """``gradient_checkpointing`` as a setting (true: on, false: off)."""
        value = self.gradient_checkpointing
        if isinstance(value, bool):
            return "on" if value else "off"
        return value

    @field_validator("lora_rank", "lora_dropout", "batch_size", "seq_len", "gpus",
                     "gradient_accumulation", "dataset_tokens", "epochs", mode="before")
    @classmethod
    def _numbers_only(cls, value: Any) -> Any:
        return not_a_boolean(value)

    @model_validator(mode="before")
    @classmethod
    def _cards_in_gpus(cls, data: Any) -> Any:
        return cards_named_gpus(data)

    @field_validator("gpus", mode="before")
    @classmethod
    def _cards_once(cls, value: Any) -> Any:
        return cards_given_once(value)

    @field_validator("inline_config")
    @classmethod
    def _within_bounds(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return config_within_bounds(value)


def config_within_bounds(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """The bounds every surface holds a config.json to (the size is a 413, in the router): a
    422 at ``body.model_config`` whose reason names the place in the document
    (``layers[1]: integers must be within ...``, without Pydantic's "Value error,"
    prefix), and whose type names the bound (``config_too_large``). NaN and Infinity, which the
    body's JSON parser reads as transformers does, are kept as their text
    (:func:`~app.catalog.inline_config.replace_non_finite`), as every surface keeps them; a
    large quantisation section is summarised as every surface summarises it
    (:func:`~app.catalog.inline_config.summarised`)."""
    if value is not None:
        value = inline_config.replace_non_finite(value)
        try:
            inline_config.check_values(value)
        except inline_config.ConfigValueError as error:
            raise PydanticCustomError(
                f"config_{error.problem}", "{reason}", {"reason": str(error)}
            ) from error
        value = inline_config.summarised(value)  # a quantised export's list of layers
    return value


class ParamCounts(_Out):
    total: int
    trainable: int
    linear: int
    other: int
    active: int


class Breakdown(_Out):
    """Bytes per GPU at the peak of the training step, by kind."""

    weights: int
    adapter: int
    gradients: int
    optimizer: int
    activations: int
    overhead: int
    total: int


class Training(_Out):
    """How fast the job trains on the card (or the system's cards together)."""

    tokens_per_s: float = Field(description="Training tokens per second over all the GPUs.")
    step_seconds: float = Field(description="One optimizer step (micro-batch x gradient "
                                "accumulation x data-parallel GPUs).")
    hours: float = Field(description="dataset_tokens x epochs at that speed.")
    mfu: float = Field(description="Model FLOPs utilisation: the step's FLOPs without "
                       "recompute over the GPUs' dense BF16 peak.")


class Setup(_Out):
    """The cheapest standard settings that make the job fit where it does not fit as set."""

    changes: dict[str, Any] = Field(description="Each changed setting and its value, tried in "
                                    "this order, fewest first: gradient_checkpointing; a smaller "
                                    "batch_size with gradient_accumulation keeping the effective "
                                    "batch; optimizer adamw_8bit; offload optimizer; method "
                                    "qlora (only with allow_method_change). A setting the "
                                    "request changed from its default is never changed.")
    total_bytes: int = Field(description="Memory per GPU with the changes.")
    training: Training | None = Field(description="Speed with the changes.")


class Recommended(_Out):
    """What to buy: the cheapest priced offer that fits as set or with a setup."""

    kind: Literal["gpu", "system"] = Field(description="gpu: `gpus` loose cards; system.")
    slug: str
    setup: Setup | None = Field(description="null when it fits as set.")
    price: str | None = Field(description="Net EUR for the offer; null: price on request "
                              "(ranked after every priced offer, smallest memory first).")
    hours: float | None = Field(description="Training time for dataset_tokens x epochs on it "
                                "(with the setup); null where unknown. Ties in price go to "
                                "the faster.")
    price_indicative: bool = Field(default=False, description=PRICE_INDICATIVE)


class CardFit(_Out):
    """The job held against one card."""

    gpu: str
    name: str
    usable_bytes: int
    total_bytes: int
    free_bytes: int = Field(description="Negative when it does not fit.")
    fits: bool
    max_batch_size: int = Field(description="Largest micro-batch that fits (0: none).")
    max_seq_len: int
    fewest_cards_zero3: int | None
    formats: list[str]
    warnings: list[str]
    training: Training | None = Field(description="Speed on this card; null where the "
                                      "catalog has no speed figures for it.")
    comparison_only: bool = Field(description="A card the shop does not sell, named to "
                                  "compare with; never recommended.")
    setup: Setup | None = Field(description="Where the job does not fit as set: the cheapest "
                                "standard settings that make it fit (null when it fits as set "
                                "or cannot fit).")


class Lever(_Out):
    """The cheapest change that makes the job fit a card, and its price in speed."""

    gpu: str
    lever: str
    change: dict[str, Any]
    total_bytes: int
    free_bytes: int
    speed: str


class Estimate(_Out):
    """The engine's document, exactly as ``sizer estimate --format json`` prints it."""

    engine_version: str = Field(examples=["1.0.0"])
    model_type: str = Field(examples=["llama"])
    params: ParamCounts
    per_gpu_bytes: Breakdown
    model_states_bytes: int
    model_states_by_accounting: dict[str, int]
    peak_phase: str
    peak_live_bytes: int
    allocated_bytes: int = Field(description="The step's live-tensor peak, never below the "
                                 "model states: what torch.cuda.max_memory_allocated shows.")
    reserved_bytes: int = Field(description="allocated_bytes plus PyTorch's caching allocator "
                                "reserve: what torch.cuda.max_memory_reserved shows. "
                                "per_gpu_bytes.total adds the CUDA context (nvidia-smi); the "
                                "verdict holds that against the card.")
    phases: dict[str, int]
    fits: list[CardFit]
    levers: list[Lever]
    assumptions: list[str]
    warnings: list[str]
    fidelity: Literal["exact", "approximate"] = Field(
        description="exact: parameters counted as transformers builds the model type; "
        "approximate: a model type the engine does not know, counted from its standard "
        "decoder fields as a Llama-style decoder (the first assumption says so).")
    approximated_from: list[str] = Field(
        description="The config fields an approximate count was made from (empty when exact); "
        "text_config.* when read from a multimodal config's language model.")
    checkpointing: Checkpointing
    recommendation: Recommended | None = Field(
        description="What to buy: the cheapest priced card (`gpus` of them) or system that "
        "fits as set or with its setup, ties by training time; price-on-request offers after "
        "every priced one, smallest memory first. null when nothing fits.")


class Checkpointing(_Out):
    """Gradient checkpointing as asked and as sized."""

    setting: CheckpointingSetting = Field(description="auto, on or off, as asked.")
    enabled: bool = Field(description="Whether the estimate checkpoints.")
    reason: CheckpointingReason = Field(
        description="set (on or off as asked), or what auto saw: qlora (PEFT's "
        "prepare_model_for_kbit_training turns it on), large_model (20B parameters and more), "
        "long_sequence (8192 tokens and more) or small_job (off).")


class _Purchase(_Out):
    """A way to buy a job that fits (training or serving): the item, how many, its price."""

    rank: int = Field(examples=[1])
    kind: Literal["gpu", "system"]
    slug: str
    name: str
    gpu: str = Field(description="The card's slug.")
    cards: int = Field(description="How many cards the job runs on.")
    quantity: int = Field(description="What to order: cards for kind gpu, 1 for a system.")
    unit_price_eur_net: Money | None
    price_eur_net: Money | None = Field(description="quantity x unit price; null: on request.")
    price_indicative: bool = Field(default=False, description=PRICE_INDICATIVE)
    stock_status: StockStatus


class Recommendation(_Purchase):
    """A way to buy the training job: it fits as set or with a setup."""

    sharding: str
    total_bytes_per_gpu: int = Field(description="Per GPU as it runs here (with the setup).")
    free_bytes_per_gpu: int
    max_batch_size: int
    setup: Setup | None = Field(default=None, description="The standard settings the job "
                                "needs here, as in an estimate's fits[i].setup; null: it fits "
                                "as set.")
    hours: float | None = Field(default=None, description="Training time for dataset_tokens "
                                "x epochs here (with the setup); null where unknown.")
    quote_url: str | None = Field(
        description="The storefront's quote form for this item and job; null for an inline "
        "config.json or options the storefront does not offer (use POST /quote-requests)."
    )


class Recommendations(_Out):
    """Cards and systems that fit as set or with a setup, ranked as an estimate's
    `recommendation` (the first): the cheapest priced, ties by time; price on request after
    every priced offer, smallest memory first."""

    engine_version: str = Field(examples=["1.0.0"])
    model_type: str
    fidelity: Literal["exact", "approximate"] = Field(
        description="As in an estimate: approximate for a model type the engine does not know.")
    total_bytes_per_gpu: int = Field(description="The job as asked, per GPU.")
    recommendations: list[Recommendation]


# --- serving -------------------------------------------------------------------------------


class ServingInput(_In):
    """Serving a model: the fields of ``sizer serving``. Give ``model`` or ``model_config``."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [
            {"model": "llama-3.1-8b", "context": 32768, "concurrency": 16},
            {"model": "qwen3-235b-a22b", "weights": "nvfp4", "gpus": 4, "gpu": ["h200-nvl"]},
        ]},
    )

    workload: Literal["serving"] = "serving"
    model: ModelName | None = Field(
        default=None, description="A catalog model's slug, or a Hugging Face repository id "
        "(`Qwen/Qwen3-8B`, optionally `@revision`): the catalog's model of that id, else the "
        "repository's config.json, fetched and kept with its commit.",
        examples=["llama-3.1-8b", "Qwen/Qwen3-8B"])
    inline_config: dict[str, Any] | None = Field(
        default=None, alias="model_config",
        description="A Hugging Face config.json object, instead of `model`: at most 4 MB, "
        "and 256 KB once its quantization_config is summarised (a quantised export's list "
        "of layers counted, not kept).",
    )
    weights: WeightChoice = Field(
        default="published", description="The checkpoint's format: published (the default: "
        "the format its config.json's quantization_config names, MXFP4 for gpt-oss, FP8 for "
        "DeepSeek-V3/R1 and Kimi K2; 16-bit when it names none; the answer's `weights` and "
        "`weights_as_published` say which), bf16, fp16, fp8 and int8 (W8A8), awq and gptq "
        "(int4, group 128), nvfp4, mxfp4, gguf-q4_k_m, gguf-q8_0.")
    kv_cache: KvDtype = Field(default="auto",
                              description="auto (the model's 16-bit dtype), bf16, fp16, fp8.")
    context: int = Field(default=8192, ge=1, le=serving_engine.MAX_CONTEXT,
                         description="Tokens per request, prompt and answer.")
    concurrency: int = Field(default=1, ge=1, le=serving_engine.MAX_CONCURRENCY,
                             description="Requests served at once, each at `context`.")
    gpus: int = Field(default=1, ge=1, le=serving_engine.MAX_GPUS,
                      description="GPUs the model is split over (tensor parallel).")
    runtime: Runtime = "vllm"
    min_tokens_per_s: float = Field(
        default=serving_engine.MIN_TOKENS_PER_S, ge=0, le=serving_engine.MAX_MIN_TOKENS_PER_S,
        allow_inf_nan=False,
        description="The speed floor: a card serves the load only if every request decodes "
        "at least this many tokens per second; `max_concurrency` counts requests up to it "
        "(0: memory alone).")
    gpu_memory_utilization: float | None = Field(
        default=None, gt=0, le=1, allow_inf_nan=False,
        description="The fraction of each card the runtime may use; default vLLM's 0.9, "
        "SGLang's own mem_fraction_static, the whole card for llama.cpp.")
    max_num_batched_tokens: int | None = Field(
        default=None, ge=1, le=serving_engine.MAX_CONTEXT,
        description="vLLM's prefill budget per step; default 8192 on cards of 70 GiB or "
        "more, else 2048.")
    gpu: list[Slug] = Field(default_factory=list, max_length=64,
                            description="Hold the job against these cards only; default every "
                            "card.")
    gpu_memory_bytes: int | None = Field(
        default=None, ge=memory_size.MIN_GPU_MEMORY, le=memory_size.MAX_GPU_MEMORY,
        description="Instead of catalog cards, an ad-hoc card of this driver-reported total, "
        "reported as gpu `custom`.")

    @field_validator("context", "concurrency", "gpus", "max_num_batched_tokens",
                     "gpu_memory_utilization", "gpu_memory_bytes", "min_tokens_per_s",
                     mode="before")
    @classmethod
    def _numbers_only(cls, value: Any) -> Any:
        return not_a_boolean(value)

    @field_validator("inline_config")
    @classmethod
    def _within_bounds(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return config_within_bounds(value)


def _workload(value: Any) -> str:
    if isinstance(value, dict):
        workload = value.get("workload", "training")
        return workload if workload in ("training", "serving") else "training"
    return str(getattr(value, "workload", "training"))


JobInput = Annotated[
    Annotated[EstimateInput, Tag("training")] | Annotated[ServingInput, Tag("serving")],
    Discriminator(_workload),
]
"""A job: training, or with ``"workload": "serving"`` serving (the body of /serving-estimates).
The body of /recommendations and the ``estimate`` of a quote request."""


class ServingParams(_Out):
    total: int
    active: int


class ServingBreakdown(_Out):
    """Bytes per GPU: what the runtime sets aside, and the KV cache the load needs."""

    weights: int
    activations: int
    cuda_graphs: int
    overhead: int
    kv_cache: int = Field(description="What context x concurrency needs, per GPU.")
    total: int


class DecodeSpeed(_Out):
    per_request: float
    total: float


class ServingFit(_Out):
    """The serving job held against one card (``gpus`` of them, tensor parallel)."""

    gpu: str
    name: str
    usable_bytes: int
    budget_bytes: int = Field(description="What the runtime may use of the card.")
    kv_cache_capacity_bytes: int
    kv_cache_capacity_tokens: int
    max_concurrency: int = Field(description="Requests of `context` tokens the KV pool holds.")
    max_context: int = Field(description="The longest context at `concurrency`.")
    fits: bool
    decode_tokens_per_s: DecodeSpeed | None = Field(
        description="At `concurrency` requests; null when the card's bandwidth is unknown.")
    prefill_tokens_per_s: float | None
    per_gpu_bytes: ServingBreakdown
    max_num_batched_tokens: int
    gpu_memory_utilization: float
    warnings: list[str]


class ServingLever(_Out):
    """A change that makes the job fit a card it does not fit."""

    gpu: str
    lever: str
    change: dict[str, Any]
    max_concurrency: int
    max_context: int


class ServingEstimate(_Out):
    """The serving engine's document, exactly as ``sizer serving --format json`` prints it."""

    engine_version: str = Field(examples=["1.4.0"])
    model_type: str = Field(examples=["llama"])
    fidelity: Literal["exact", "approximate"] = Field(
        description="exact, or approximate for a model type counted as a Llama-style decoder "
        "from its standard fields (the first assumption says which).")
    runtime: str
    params: ServingParams
    kv_cache_bytes_per_token: int = Field(description="Per GPU, every attention layer.")
    kv_cache_bytes_per_request: int = Field(description="One request of `context` tokens.")
    per_gpu_bytes: ServingBreakdown
    fits: list[ServingFit]
    levers: list[ServingLever]
    assumptions: list[str]
    weights: WeightFormat = Field(description="The weights' format the estimate used.")
    weights_as_published: bool = Field(
        description="True when `weights` is the checkpoint's published format (asked as "
        "`published`, the default), read from its config.json.")


class ServingRecommendation(_Purchase):
    """A way to buy the serving job that fits (``cards`` tensor parallel)."""

    max_concurrency: int
    max_context: int
    kv_cache_capacity_tokens: int
    decode_tokens_per_s: DecodeSpeed | None
    quote_url: str | None


class ServingRecommendations(_Out):
    """Cards and systems that serve the job, best first: fewest cards, then price, then the
    most concurrent requests."""

    engine_version: str = Field(examples=["1.4.0"])
    model_type: str
    workload: Literal["serving"] = "serving"
    recommendations: list[ServingRecommendation]


# --- quote requests ------------------------------------------------------------------------


class ContactIn(_In):
    """The partner's customer."""

    model_config = ConfigDict(extra="forbid")
    _MULTILINE = frozenset({"message"})

    name: Text200
    company: Text200
    email: Annotated[str, StringConstraints(
        strip_whitespace=True, max_length=254, pattern=r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$"
    )] = Field(examples=["buyer@example.com"])
    country: Annotated[str, StringConstraints(pattern=r"^[A-Z]{2}$")] = Field(
        description="ISO 3166-1 alpha-2.", examples=["DE"]
    )
    vat_id: Annotated[str, StringConstraints(strip_whitespace=True, max_length=32)] | None = None
    message: Annotated[str, StringConstraints(max_length=4000)] | None = None


class QuoteRequestIn(_In):
    """Ask the shop for a quote on one card or system for the partner's customer."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{
            "item_kind": "gpu", "item_slug": "rtx-pro-6000", "quantity": 2,
            "estimate": {"model": "llama-3.1-8b", "method": "lora"},
            "contact": {"name": "Ada Buyer", "company": "Example GmbH",
                        "email": "ada@example.com", "country": "DE"},
            "partner_reference": "ACME-4711",
        }]},
    )

    item_kind: ItemKind
    item_slug: Slug
    quantity: int = Field(default=1, ge=1, le=1000)
    estimate: JobInput = Field(
        description="The job the quote is for (its sizing is kept): a training job, or with "
                    "\"workload\": \"serving\" a serving job on catalog cards (the body of "
                    "/serving-estimates without gpu_memory_bytes).")
    contact: ContactIn
    partner_reference: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)
    ] | None = Field(default=None, description="Your own reference for this request.")
    locale: Literal["de", "en"] = "en"

    @field_validator("quantity", mode="before")
    @classmethod
    def _number_only(cls, value: Any) -> Any:
        return not_a_boolean(value)


class QuoteLineOut(_Out):
    position: int
    item_kind: LineKind
    item_slug: str | None
    description: str
    quantity: int
    unit_price_eur_net: Money
    discount_percent: str = Field(examples=["5.00"])
    net_eur: Money = Field(description="quantity x unit price less the discount, in cents.")


class QuoteTotals(_Out):
    net_eur: Money
    vat_rate_percent: str | None = Field(description="Set when the quote was sent.")
    vat_eur: Money | None
    gross_eur: Money | None


class QuoteRequestOut(_Out):
    """A quote request and, once the shop sent the quote, its priced lines."""

    id: str = Field(description="The reference; use it in GET /quote-requests/{id}.",
                    examples=["Q-7KX2M9PA"])
    status: QuoteStatus
    created_at: datetime
    updated_at: datetime
    partner_reference: str | None
    workload: Workload = Field(description="What the sizing is for: training (a fine-tuning "
                               "job) or serving.")
    item_kind: ItemKind
    item_slug: str
    item_name: str
    quantity: int
    company: str
    country: str
    engine_version: str
    valid_until: date | None
    sent_at: datetime | None
    accepted_at: datetime | None = Field(
        description="When the customer accepted the sent quote; null until then.")
    accepted_via: AcceptedVia | None = Field(
        description="link: the customer accepted on the quote's own page; desk: the shop's "
                    "staff recorded an acceptance that came by mail or phone.")
    lines: list[QuoteLineOut] | None = Field(description="Null until the quote is sent.")
    totals: QuoteTotals | None


class QuoteRequestPage(_Out):
    """One page of the partner's quote requests, newest first. Pass ``next_cursor`` as
    ``cursor`` for the next page."""

    items: list[QuoteRequestOut]
    next_cursor: str | None = Field(description="Null on the last page.")
