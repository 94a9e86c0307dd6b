"""The calculator's Serve mode: its fields, parsed from a query or a form into a serving request.

One parser for ``GET /serve?...`` (shareable links), the no-JavaScript POST and htmx, so a link
always reproduces the result it was copied from. Short parameter names keep links readable:
``/serve?model=llama-3.1-8b&weights=awq&kv=fp8&context=32768&users=16``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlencode

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
from app.html import forms
from app.html.forms import FieldErrors

DEFAULT_MODEL: Final = "llama-3.1-8b"
DEFAULT_SPEED: Final = int(MIN_TOKENS_PER_S)
DEFAULTS: Final = {"weights": PUBLISHED, "kv": "auto", "context": 8192, "users": 1, "gpus": 1,
                   "runtime": "vllm", "speed": DEFAULT_SPEED}
WEIGHT_CHOICES: Final = (PUBLISHED, *WEIGHT_FORMATS)

ADVANCED_FIELDS: Final = ("gpus", "runtime", "gpu")
FIELDS: Final = ("model", "weights", "kv", "context", "users", "speed", "gpus", "runtime",
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

    @property
    def advanced_set(self) -> bool:
        return self.gpus != 1 or self.runtime != "vllm" or bool(self.gpu)

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
        return ServingRequest(job=job.job(), model_slug=self.model,
                              gpu_slugs=(self.gpu,) if self.gpu else (),
                              published_weights=job.published)


def parse(data: Mapping[str, str]) -> tuple[ServeInput, FieldErrors]:
    """Every field of the Serve form, each problem an error under the field's name: a number
    out of bounds, not a whole number, or sent empty (a shared link leaves a default out; the
    form sends every field, so an empty one was emptied, and sizing 1 user for it would
    answer a question nobody asked: issue 30, point 3)."""
    errors = FieldErrors()
    calc = ServeInput(
        model=forms.text(data, "model", errors, default=DEFAULT_MODEL, max_length=100)
        or DEFAULT_MODEL,
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
    return calc, errors


def engine_error_field(field: str) -> str:
    """The form field a service error names (a config's fields belong to the model)."""
    return ENGINE_FIELDS.get(field, "model")


MAX_CONTEXT_FIELD: Final = MAX_CONTEXT
MAX_USERS: Final = MAX_CONCURRENCY
MAX_GPUS_FIELD: Final = MAX_GPUS
MAX_SPEED_FIELD: Final = MAX_MIN_TOKENS_PER_S
"""The bounds the page shows beside its number fields (the engine's)."""
