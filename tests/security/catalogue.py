"""The bad-input catalogue: data, run against the storefront, the partner API and the CLI.

Each :class:`BadInput` names one logical field (:data:`FIELDS` says what the field is called
on each surface) and one value that field must refuse. The surfaces' tests
(``test_bad_inputs_*.py``) turn an entry into a request or a command line and hold every
surface to the same promise: never a 5xx, a 4xx (or exit status 2) that names the field, and
nothing stored.

An entry's ``value`` is what a JSON client sends; ``text`` is what a form field, a query
parameter or a command-line option carries (default: the value as text); ``api_json`` is a
JSON token spliced verbatim into the API body, for what Python values cannot say (``NaN``,
``1e308``, a lone surrogate escape). For the ``config`` field, ``text`` is the whole
config.json document: pasted on the page, spliced into the API body as ``model_config``,
written to a file for ``sizer estimate --model-config``.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Final, Literal

from tests.security.return_paths import HOSTILE_RETURN_PATHS as HOSTILE_RETURN_PATHS
from tests.security.return_paths import (
    RAW_HOSTILE_RETURN_QUERIES as RAW_HOSTILE_RETURN_QUERIES,
)

Surface = Literal["page", "api", "cli"]
ALL: Final[frozenset[Surface]] = frozenset({"page", "api", "cli"})

MAX_CONFIG_BYTES: Final = 256 * 1024
SCRIPT: Final = "<script>alert(1)</script>"
SQL: Final = "'; DROP TABLE quote_request; --"


@dataclass(frozen=True)
class Field:
    """One input, as each surface names it (None: the surface has no such input)."""

    page: str | None
    """The calculator's or the quote form's field name."""
    api: str | None
    """Dotted path in the API body: ``batch_size``, ``contact.email``."""
    cli: str | None
    """``sizer estimate`` option."""
    form: Literal["calculator", "quote"]
    """Which page form the field belongs to; ``quote`` fields exist on the API's
    POST /quote-requests only."""


FIELDS: Final[dict[str, Field]] = {
    "model": Field("model", "model", "--model", "calculator"),
    "config": Field("config", "model_config", "--model-config", "calculator"),
    "method": Field("method", "method", "--method", "calculator"),
    "optimizer": Field("optimizer", "optimizer", "--optimizer", "calculator"),
    "lora_rank": Field("rank", "lora_rank", "--lora-rank", "calculator"),
    "lora_targets": Field("targets", "lora_targets", "--lora-targets", "calculator"),
    "lora_dropout": Field(None, "lora_dropout", "--lora-dropout", "calculator"),
    "quant": Field("quant", "quant", "--quant", "calculator"),
    "batch_size": Field("batch", "batch_size", "--batch-size", "calculator"),
    "seq_len": Field("seq", "seq_len", "--seq-len", "calculator"),
    "gpus": Field("gpus", "gpus", "--gpus", "calculator"),
    "sharding": Field("sharding", "sharding", "--sharding", "calculator"),
    "offload": Field("offload", "offload", "--offload", "calculator"),
    "bnb_version": Field("bnb", "bnb_version", "--bnb-version", "calculator"),
    "sharding_impl": Field("impl", "sharding_impl", "--sharding-impl", "calculator"),
    "moe_lora": Field("moe", "moe_lora", "--moe-lora", "calculator"),
    "attention": Field("attention", "attention", "--attention", "calculator"),
    "gpu": Field("gpu", "gpu", "--gpu", "calculator"),
    "gradient_accumulation": Field(
        None, "gradient_accumulation", "--gradient-accumulation", "calculator"
    ),
    "name": Field("name", "contact.name", None, "quote"),
    "company": Field("company", "contact.company", None, "quote"),
    "email": Field("email", "contact.email", None, "quote"),
    "country": Field("country", "contact.country", None, "quote"),
    "vat_id": Field("vat_id", "contact.vat_id", None, "quote"),
    "message": Field("message", "contact.message", None, "quote"),
    "quantity": Field("quantity", "quantity", None, "quote"),
    "item_slug": Field("item", "item_slug", None, "quote"),
    "item_kind": Field("item", "item_kind", None, "quote"),
    "partner_reference": Field(None, "partner_reference", None, "quote"),
}


@dataclass(frozen=True)
class BadInput:
    """One value one field must refuse, on every surface that has the field."""

    id: str
    field: str
    value: Any = None
    text: str | None = None
    api_json: str | None = None
    api_status: int = 422
    """What the API answers: 422 (with ``errors[].location``), 404 unknown, 413 too large."""
    api_location: str | None = None
    """Where the 422 points, if not at the field itself (``body`` for unreadable JSON)."""
    page_text: str | None = None
    """What the page gets when it differs from ``text`` (the page reads text only)."""
    context: dict[str, str] = dataclasses.field(default_factory=dict)  # `field`: attribute above
    """Other fields set along (logical name -> text), for bad combinations."""
    surfaces: frozenset[Surface] = ALL
    echoes_markup: bool = False
    """The value holds markup: any echo of it in HTML must be escaped."""

    @property
    def as_text(self) -> str:
        """The value as a form field or an option carries it."""
        if self.text is not None:
            return self.text
        if isinstance(self.value, str):
            return self.value
        return json.dumps(self.value)

    @property
    def on_page(self) -> str:
        return self.page_text if self.page_text is not None else self.as_text

    @property
    def as_json(self) -> str:
        """The value as a JSON token in the API body."""
        if self.api_json is not None:
            return self.api_json
        if self.field == "config":
            return self.as_text
        return json.dumps(self.value)

    def applies_to(self, surface: Surface) -> bool:
        spec = FIELDS[self.field]
        named = {"page": spec.page, "api": spec.api, "cli": spec.cli}[surface]
        return surface in self.surfaces and named is not None


# --- config.json documents --------------------------------------------------------------

LLAMA: Final[dict[str, Any]] = {
    "model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
    "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
    "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": True,
}
"""A small, valid Llama config.json (Llama 3.2 1B's shape)."""


def llama(**changes: Any) -> str:
    """The valid config with some fields changed, as text."""
    return json.dumps({**LLAMA, **changes})


QWEN3_MOE: Final[dict[str, Any]] = {
    "model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
    "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
    "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
    "vocab_size": 151936, "max_position_embeddings": 40960,
}
"""A valid Qwen3-30B-A3B-shaped config.json: the model type of the probe's denial of service."""


def qwen3_moe(**changes: Any) -> str:
    return json.dumps({**QWEN3_MOE, **changes})


def llama_with(fragment: str) -> str:
    """The valid config with a raw JSON fragment (``"key": token``) added at the end."""
    return json.dumps(LLAMA)[:-1] + ", " + fragment + "}"


def padded_config(size: int) -> str:
    """The valid config grown to exactly ``size`` bytes of UTF-8 by a comment field."""
    base = json.dumps({**LLAMA, "_comment": ""})
    return base[:-2] + "x" * (size - len(base)) + base[-2:]


def nested(depth: int) -> str:
    """A config whose ``nested`` field is a list ``depth`` levels deep."""
    return llama_with('"nested": ' + "[" * depth + "]" * depth)


OVERSIZE_CONFIG: Final = padded_config(MAX_CONFIG_BYTES + 1)
"""256 KB + 1 byte: refused for its size (413 on the API) everywhere."""
LARGEST_CONFIG: Final = padded_config(MAX_CONFIG_BYTES)
"""Exactly 256 KB: processed (it is a valid config), never refused for its size."""


# --- the catalogue ------------------------------------------------------------------------

CALCULATOR: Final[tuple[BadInput, ...]] = (
    # wrong types
    BadInput("batch-word", "batch_size", "four"),
    BadInput("batch-fraction", "batch_size", 2.5),
    BadInput("batch-bool", "batch_size", True, text="true"),
    BadInput("batch-null", "batch_size", None, text="null"),
    BadInput("method-number", "method", 7),
    BadInput("optimizer-list", "optimizer", ["adamw"]),
    # zero, negative, out of range
    BadInput("batch-zero", "batch_size", 0),
    BadInput("batch-negative", "batch_size", -1),
    BadInput("batch-over-max", "batch_size", (1 << 20) + 1),
    BadInput("batch-over-form-max", "batch_size", 4097,  # the engine (CLI) goes to 2**20
             surfaces=frozenset({"page", "api"})),
    BadInput("rank-zero", "lora_rank", 0),
    BadInput("rank-huge", "lora_rank", 70_000),
    BadInput("gpus-negative", "gpus", -8),
    BadInput("dropout-one", "lora_dropout", 1.0),
    BadInput("dropout-negative", "lora_dropout", -0.1),
    BadInput("accumulation-over-max", "gradient_accumulation", 65_537),
    # NaN, Infinity, 1e308, 10**30
    BadInput("seq-nan-string", "seq_len", "NaN"),
    BadInput("seq-nan-token", "seq_len", text="nan", api_json="NaN"),
    BadInput("gpus-infinity-token", "gpus", text="inf", api_json="Infinity",
             page_text="Infinity"),
    BadInput("gpus-minus-infinity-string", "gpus", "-Infinity"),
    BadInput("dropout-nan-string", "lora_dropout", "NaN"),
    BadInput("seq-1e308", "seq_len", text="1e308", api_json="1e308"),
    BadInput("seq-10-to-30", "seq_len", 10**30),
    BadInput("seq-5000-digits", "seq_len", text="9" * 5000, api_json="9" * 5000),
    BadInput("seq-minus-5000-digits", "seq_len", text="-" + "9" * 5000,
             api_json="-" + "9" * 5000),
    # empty strings
    BadInput("method-empty", "method", "", surfaces=frozenset({"api", "cli"})),
    BadInput("targets-empty", "lora_targets", "", surfaces=frozenset({"api", "cli"})),
    BadInput("gpu-empty", "gpu", "", api_json='[""]', surfaces=frozenset({"api", "cli"})),
    # choices and bad combinations
    BadInput("method-upper-case", "method", "LORA"),
    BadInput("sharding-unknown", "sharding", "zero4"),
    BadInput("offload-without-zero3", "offload", "optimizer+params"),
    BadInput("quant-with-full", "quant", "nf4", context={"method": "full"}),
    BadInput("bnb-version-unknown", "bnb_version", "0.39"),
    BadInput("bnb-version-without-qlora", "bnb_version", "0.41", context={"method": "lora"}),
    BadInput("sharding-impl-unknown", "sharding_impl", "megatron"),
    BadInput("moe-lora-unknown", "moe_lora", "per-layer"),
    BadInput("sharding-impl-fsdp-without-zero3", "sharding_impl", "fsdp",
             context={"sharding": "zero2"}),
    BadInput("attention-script", "attention", SCRIPT, echoes_markup=True),
    BadInput("targets-sql", "lora_targets", SQL),
    # unknown slugs, unicode in slugs, oversize
    BadInput("model-unknown", "model", "no-such-model", api_status=404),
    # a "/" makes it a Hugging Face repository id, refused as one before any request
    BadInput("model-script", "model", SCRIPT, api_status=422, echoes_markup=True),
    BadInput("model-repo-id-traversal", "model", "acme/model@../../etc/passwd"),
    BadInput("model-sql", "model", SQL, api_status=404),
    BadInput("model-zero-width-space", "model", "llama-3.1-8b\u200b", api_status=404),
    BadInput("model-rtl-override", "model", "llama-3.1-\u202e8b", api_status=404),
    BadInput("model-emoji", "model", "\U0001f999-3.1-8b", api_status=404),
    BadInput("model-nul-byte", "model", "llama-3.1-8b\x00"),  # issue 24: 422 at the field
    BadInput("model-lone-surrogate", "model", text="llama\udcff", api_json='"llama\\udcff"'),
    BadInput("model-oversize", "model", "m" * 323, api_status=422),  # beyond owner/name@rev
    BadInput("gpu-unknown", "gpu", "no-such-card", api_json='["no-such-card"]', api_status=404),
    BadInput("gpu-sql", "gpu", SQL, api_json=json.dumps([SQL]), api_status=404),
    # config.json: empty, malformed, wrong shape, non-finite and huge numbers, bombs, size
    BadInput("config-empty", "config", text="", api_json='""'),
    BadInput("config-malformed", "config", text='{"model_type": "llama",',
             api_location="body"),
    BadInput("config-not-an-object", "config", text="[1, 2, 3]"),
    # an unknown model type is sized approximately (issue 16, point 2) unless it lacks the
    # standard decoder fields
    BadInput("config-unknown-type-without-decoder-fields", "config",
             text=json.dumps({"model_type": "bert", "hidden_size": 768})),
    # NaN and Infinity are read as transformers reads them (issue 29), so only where the engine
    # needs a number do they refuse the config, naming that field
    BadInput("config-nan-token", "config", text=llama_with('"hidden_size": NaN')),
    BadInput("config-infinity-token", "config", text=llama_with('"num_hidden_layers": Infinity')),
    BadInput("config-1e308", "config", text=llama(hidden_size=1e308)),
    BadInput("config-10-to-30", "config", text=llama(hidden_size=10**30)),
    BadInput("config-2-to-53-plus-1", "config", text=llama_with('"note": 9007199254740993')),
    BadInput("config-5000-digits", "config", text=llama_with('"note": ' + "9" * 5000)),
    BadInput("config-minus-5000-digits", "config",
             text=llama(rope_scaling={"factor": 8.0}).replace("8.0", "-" + "9" * 5000)),
    BadInput("config-lone-surrogate", "config", text=llama_with('"note": "\\ud800"')),
    BadInput("config-lone-surrogate-key", "config", text=llama_with('"\\udc80": 1')),
    BadInput("config-depth-40", "config", text=nested(40)),
    BadInput("config-depth-bomb", "config", text=nested(100_000), api_location="body"),
    # (without the decoder fields: with them, any model type is sized approximately, and the
    # page escapes the type it echoes, tests/security/test_bad_inputs_page.py)
    BadInput("config-script-model-type", "config",
             text=json.dumps({"model_type": SCRIPT, "hidden_size": 8}), echoes_markup=True),
    BadInput("config-sql-model-type", "config",
             text=json.dumps({"model_type": SQL, "hidden_size": 8})),
    BadInput("config-over-256kb", "config", text=OVERSIZE_CONFIG, api_status=413),
    # Architecture fields above their bounds: a qwen3_moe with 10^8 layers held a worker 41 s
    BadInput("config-moe-1e8-layers", "config", text=qwen3_moe(num_hidden_layers=10**8)),
    BadInput("config-moe-2-53-layers", "config", text=qwen3_moe(num_hidden_layers=2**53)),
    BadInput("config-moe-million-experts", "config", text=qwen3_moe(num_experts=10**6)),
    BadInput("config-vocab-above-bound", "config", text=llama(vocab_size=10**7)),
    BadInput("config-moe-dense-list-too-long", "config",
             text=qwen3_moe(mlp_only_layers=list(range(5000)))),
)
"""The job's fields: calculator page and fragment, POST /estimates, /recommendations and
/quote-requests (as ``estimate``), ``sizer estimate``."""

QUOTE: Final[tuple[BadInput, ...]] = (
    BadInput("name-empty", "name", ""),
    BadInput("name-oversize", "name", "n" * 201),
    BadInput("name-script", "name", SCRIPT, echoes_markup=True),
    BadInput("company-whitespace", "company", "   "),
    BadInput("email-not-an-address", "email", "not-an-email"),
    BadInput("email-sql", "email", SQL),
    BadInput("email-number", "email", 42),
    BadInput("country-three-letters", "country", "DEU"),
    BadInput("country-zero-width", "country", "D\u200bE"),
    BadInput("vat-id-script", "vat_id", "DE" + SCRIPT, echoes_markup=True),
    BadInput("message-nul-byte", "message", "Hello\x00world"),
    BadInput("message-oversize", "message", "m" * 4001),
    BadInput("quantity-zero", "quantity", 0),
    BadInput("quantity-over-max", "quantity", 1001),
    BadInput("quantity-word", "quantity", "ten"),
    BadInput("quantity-5000-digits", "quantity", text="9" * 5000, api_json="9" * 5000),
    BadInput("quantity-bool", "quantity", True, text="true"),
    BadInput("item-unknown", "item_slug", "no-such-card", page_text="gpu:no-such-card",
             api_status=404),
    BadInput("item-sql", "item_slug", SQL, page_text="gpu:" + SQL, api_status=404),
    BadInput("item-kind-unknown", "item_kind", "cpu", page_text="cpu:rtx-pro-6000"),
    BadInput("partner-reference-nul-byte", "partner_reference", "ACME\x00-1"),
)
"""The quote request's own fields: the page's quote form and POST /api/v1/quote-requests."""


@dataclass(frozen=True)
class BadRead:
    """A GET with a bad path or query parameter, on the API and/or the storefront."""

    id: str
    api: str | None = None
    page: str | None = None
    status: int = 422
    location: str | None = None
    page_status: int = 404
    """What the page answers: the 404 page, or 422 naming a control character."""


READS: Final[tuple[BadRead, ...]] = (
    BadRead("limit-zero", api="/api/v1/models?limit=0", location="query.limit"),
    BadRead("limit-over-max", api="/api/v1/models?limit=101", location="query.limit"),
    BadRead("limit-word", api="/api/v1/models?limit=ten", location="query.limit"),
    BadRead("limit-1e308", api="/api/v1/models?limit=1e308", location="query.limit"),
    BadRead("limit-nan", api="/api/v1/models?limit=NaN", location="query.limit"),
    BadRead("cursor-garbage", api="/api/v1/models?cursor=%21%21%21", location="query.cursor"),
    BadRead("cursor-not-utf8", api="/api/v1/models?cursor=_w", location="query.cursor"),
    BadRead("q-oversize", api="/api/v1/models?q=" + "q" * 101, location="query.q"),
    BadRead("family-oversize", api="/api/v1/models?family=" + "f" * 65,
            location="query.family"),
    BadRead("gpu-script", api="/api/v1/gpus/%3Cscript%3Ealert(1)%3C%2Fscript%3E",
            page="/q/%3Cscript%3Ealert(1)%3C%2Fscript%3E", status=404),
    BadRead("system-sql", api="/api/v1/systems/%27%3B%20DROP%20TABLE%20quote_request%3B%20--",
            page="/q/%27%3B%20DROP%20TABLE%20quote_request%3B%20--", status=404),
    BadRead("model-nul", api="/api/v1/models/llama%00", page="/q/token%00",
            location="path.slug", page_status=422),  # issue 24: control characters, 422
    BadRead("quote-request-oversize-id", api="/api/v1/quote-requests/" + "Q" * 17,
            page="/q/" + "t" * 200, location="path.id"),
    BadRead("quote-request-unknown", api="/api/v1/quote-requests/Q-NOPENOPE",
            page="/q/no-such-token", status=404),
)


@dataclass(frozen=True)
class BadBody:
    """A request body the API (and the page's forms) cannot read at all."""

    id: str
    content: bytes
    content_type: str | None


BODIES: Final[tuple[BadBody, ...]] = (
    BadBody("json-as-text-plain", b'{"model": "llama-3.1-8b", "method": "lora"}', "text/plain"),
    BadBody("json-as-form", b'{"model": "llama-3.1-8b", "method": "lora"}',
            "application/x-www-form-urlencoded"),
    BadBody("no-content-type", b'{"model": "llama-3.1-8b", "method": "lora"}', None),
    BadBody("empty-body", b"", "application/json"),
    BadBody("truncated-json", b'{"model": "llama-3.1-8b", "method": ', "application/json"),
    BadBody("json-array", b'[{"model": "llama-3.1-8b", "method": "lora"}]', "application/json"),
    BadBody("not-utf8", b'{"model": "\xff\xfe", "method": "lora"}', "application/json"),
    BadBody("nesting-bomb", b"[" * 100_000 + b"]" * 100_000, "application/json"),
)

CATALOGUE: Final = CALCULATOR + QUOTE
"""Every field entry; with :data:`READS`, :data:`BODIES` and the language switch's return paths
(:data:`HOSTILE_RETURN_PATHS`, :data:`RAW_HOSTILE_RETURN_QUERIES`: sent home, never followed)
the whole catalogue."""


@dataclass(frozen=True)
class BadPartnerName:
    """A name a new partner can't have (issue 13, point 6), on the staff desk
    (``new_partner_name``) and in ``sizer apikey create --new-partner``: refused naming the
    field (422 / exit 2), no partner and no key stored. ``existing`` is a partner made first,
    which the name reads like; the refusal names it, and no key ever joins it by resemblance."""

    id: str
    name: str
    existing: str | None = None


BAD_PARTNER_NAMES: Final[tuple[BadPartnerName, ...]] = (
    BadPartnerName("empty", ""),
    BadPartnerName("blank", "   "),
    BadPartnerName("punctuation-only", "!!! ---"),
    BadPartnerName("nul", "ACME\x00GmbH"),
    BadPartnerName("zero-width-space", "ACME\u200bGmbH"),
    BadPartnerName("bidi-override", "ACME \u202eHbmG"),
    BadPartnerName("too-long", "x" * 201),
    BadPartnerName("umlaut-look-alike", "Müller AG", existing="Muller AG"),
    BadPartnerName("case-and-dash-look-alike", "MULLER-AG", existing="Muller AG"),
    BadPartnerName("single-letter-look-alike", "Ä", existing="A"),
    BadPartnerName("sharp-s-look-alike", "Straße GmbH", existing="Strasse GmbH"),
    BadPartnerName("fullwidth-look-alike", "ＡＣＭＥ", existing="ACME"),
    BadPartnerName("ligature-look-alike", "\ufb01nance AG", existing="Finance AG"),
)
