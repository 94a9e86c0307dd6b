"""The calculator's Serve mode: its fields, parsed from a query or a form into a serving request.

One parser for ``GET /serve?...`` (shareable links), the no-JavaScript POST and htmx, so a link
always reproduces the result it was copied from. Short parameter names keep links readable:
``/serve?model=llama-3.1-8b&weights=awq&kv=fp8&context=32768&users=16``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlencode

from app.catalog import hub, inline_config
from app.catalog.hub import HubModel
from app.engine.serving import (
    KV_DTYPES,
    MAX_CONCURRENCY,
    MAX_CONTEXT,
    MAX_GPUS,
    MAX_MIN_TOKENS_PER_S,
    MIN_TOKENS_PER_S,
    RUNTIMES,
)
from app.engine.serving_weights import WEIGHT_FORMATS
from app.estimates.job_input import SERVE_PAGE_OMITS, ServingJobInput
from app.estimates.serving import PUBLISHED, ServingRequest
from app.html import config_errors, forms
from app.html.forms import N_, FieldErrors

CUSTOM_MODEL: Final = "custom"
"""The model field's value for a pasted config.json (the fine-tune page's, too)."""
CONFIG_REQUEST_FIELD: Final = "model_config"
MAX_CONFIG_MB: Final = inline_config.MAX_POSTED_BYTES // (1024 * 1024)
"""The most a pasted config.json may take, as the field's label says it."""
"""The service's name for a config.json: its fields' errors go beside the pasted one."""
DEFAULT_MODEL: Final = "llama-3.1-8b"
DEFAULT_SPEED: Final = int(MIN_TOKENS_PER_S)
DEFAULTS: Final = {"weights": PUBLISHED, "kv": "auto", "context": 8192, "users": 1, "gpus": 1,
                   "runtime": "vllm", "speed": DEFAULT_SPEED}
WEIGHT_CHOICES: Final = (PUBLISHED, *WEIGHT_FORMATS)

ADVANCED_FIELDS: Final = ("gpus", "runtime", "gpu")
FIELDS: Final = ("model", "config", "weights", "kv", "context", "users", "speed", "gpus", "runtime",
                  "gpu")
ENGINE_FIELDS: Final = {"weights": "weights", "kv_cache": "kv", "context": "context",
                        "concurrency": "users", "gpus": "gpus", "runtime": "runtime",
                        "gpu": "gpu", "model": "model", "min_tokens_per_s": "speed"}
"""The service's field names (the API's and the CLI's) on the form's."""


@dataclass
class ServeInput:
    """What the customer asked the Serve mode (defaults on first load)."""

    model: str = DEFAULT_MODEL
    weights: str = PUBLISHED
    kv: str = "auto"
    context: int = 8192
    users: int = 1
    speed: int = DEFAULT_SPEED
    """The speed floor: tokens per second every user must get."""
    gpus: int = 1
    runtime: str = "vllm"
    gpu: str = ""
    config_text: str = ""
    """A pasted config.json as typed (model "custom"), given back in the form."""
    config: Mapping[str, Any] | None = field(default=None, repr=False)
    """The pasted config.json as read, or the Hub repository's (set by the page)."""
    hub: HubModel | None = field(default=None, repr=False)
    """The Hugging Face repository the model field named, once looked up."""

    @property
    def advanced_set(self) -> bool:
        return self.gpus != 1 or self.runtime != "vllm" or bool(self.gpu)

    @property
    def is_custom(self) -> bool:
        """A pasted config.json (it travels in no link)."""
        return self.model == CUSTOM_MODEL

    @property
    def is_repo(self) -> bool:
        """A Hugging Face repository id, not a catalog slug (``app/catalog/hub.py``)."""
        return hub.is_repo_id(self.model)

    def query(self) -> dict[str, str]:
        """The non-default fields, for a shareable URL."""
        values = {"model": self.model, "weights": self.weights, "kv": self.kv,
                  "context": str(self.context), "users": str(self.users),
                  "speed": str(self.speed),
                  "gpus": str(self.gpus), "runtime": self.runtime, "gpu": self.gpu}
        return {key: value for key, value in values.items()
                if key == "model" or (value and value != str(DEFAULTS.get(key, "")))}

    def url(self) -> str:
        return "/serve?" + urlencode(self.query())

    def quote_query(self) -> dict[str, str]:
        """Every input, defaults included (the card to check only when one is set): what a
        quote link carries and a stored request keeps, so the quote is sized on exactly these
        inputs whatever the page's defaults become."""
        values = {"model": self.model, "weights": self.weights, "kv": self.kv,
                  "context": str(self.context), "users": str(self.users),
                  "speed": str(self.speed),
                  "gpus": str(self.gpus), "runtime": self.runtime, "gpu": self.gpu}
        return {key: value for key, value in values.items() if value}

    def job_input(self) -> ServingJobInput:
        """The form's fields as the one input every surface fills (the runtime settings only
        the API and the CLI take keep their defaults)."""
        return ServingJobInput.of({
            "weights": self.weights, "kv_cache": self.kv, "context": self.context,
            "concurrency": self.users, "gpus": self.gpus, "runtime": self.runtime,
            "min_tokens_per_s": float(self.speed)}, omitted=SERVE_PAGE_OMITS)

    def request(self) -> ServingRequest:
        job = self.job_input()
        gpus = (self.gpu,) if self.gpu else ()
        if self.is_custom or self.hub is not None:
            return ServingRequest(job=job.job(), model_config=self.config or {},
                                  gpu_slugs=gpus, published_weights=job.published)
        return ServingRequest(job=job.job(), model_slug=self.model, gpu_slugs=gpus,
                              published_weights=job.published)


def parse(data: Mapping[str, str]) -> tuple[ServeInput, FieldErrors]:
    """Every field of the Serve form, each problem an error under the field's name: a number
    out of bounds, not a whole number, or sent empty (a shared link leaves a default out; the
    form sends every field, so an empty one was emptied, and sizing 1 user for it would
    answer a question nobody asked)."""
    errors = FieldErrors()
    for name, multiline in (("model", False), ("config", True)):
        if not forms.no_control(data, name, errors, multiline=multiline):
            data = {**data, name: ""}
    model = data.get("model", "").strip() or DEFAULT_MODEL
    if len(model) > hub.MAX_MODEL_CHARS:
        errors.add("model", N_("No such model in our catalog."))
        model = DEFAULT_MODEL
    calc = ServeInput(
        model=model,
        weights=forms.choice(data, "weights", errors, choices=WEIGHT_CHOICES, default=PUBLISHED),
        kv=forms.choice(data, "kv", errors, choices=KV_DTYPES, default="auto"),
        context=forms.integer(data, "context", errors, default=8192, minimum=1,
                              maximum=MAX_CONTEXT, blank_is_error=True),
        users=forms.integer(data, "users", errors, default=1, minimum=1,
                            maximum=MAX_CONCURRENCY, blank_is_error=True),
        speed=forms.integer(data, "speed", errors, default=DEFAULT_SPEED, minimum=0,
                            maximum=MAX_MIN_TOKENS_PER_S),
        gpus=forms.integer(data, "gpus", errors, default=1, minimum=1, maximum=MAX_GPUS,
                           blank_is_error=True),
        runtime=forms.choice(data, "runtime", errors, choices=RUNTIMES, default="vllm"),
        gpu=forms.text(data, "gpu", errors, max_length=100),
    )
    if calc.is_custom:
        calc.config_text = data.get("config", "")
        # the one config.json reader every surface uses, worded as every page words it
        calc.config = config_errors.read(calc.config_text, errors, "config")
    return calc, errors


def engine_error_field(field: str) -> str:
    """The form field a service error names: a pasted config.json's fields
    (``model_config.<name>``) go beside the pasted config, any other model problem beside the
    model."""
    if field == CONFIG_REQUEST_FIELD or field.startswith(f"{CONFIG_REQUEST_FIELD}."):
        return "config"
    return ENGINE_FIELDS.get(field, "model")


MAX_CONTEXT_FIELD: Final = MAX_CONTEXT
MAX_USERS: Final = MAX_CONCURRENCY
MAX_GPUS_FIELD: Final = MAX_GPUS
MAX_SPEED_FIELD: Final = MAX_MIN_TOKENS_PER_S
"""The bounds the page shows beside its number fields (the engine's)."""
