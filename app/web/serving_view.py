"""Shape a serving sizing for the Serve page: verdict, card and system rows, chart geometry.

No byte is computed here (docs/architecture.md rule 2): every figure comes from
:func:`app.estimates.serving.serving_sizing`; this module picks, orders and labels them, and
words the engine's warnings, levers and assumptions by their keys in the customer's language.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Final
from urllib.parse import quote_plus, urlencode

from app.catalog.schemas import Catalog, GpuRecord, ModelRecord, SystemRecord
from app.engine import serving as engine
from app.engine.serving import ServingFit, ServingLever, ServingResult
from app.estimates.serving import (
    DecodeCase,
    LogCase,
    ServingSizing,
    decode_cases,
    decode_summary,
    log_cases,
)
from app.html.forms import N_, FieldError
from app.web.result_view import APPROXIMATE_PART_LABELS, Chart, bar_chart, system_name
from app.web.serving_form import ServeInput

SEGMENTS: Final[tuple[tuple[str, str], ...]] = (
    ("weights", N_("Weights")), ("kv_cache", N_("KV cache for these users")),
    ("activations", N_("Activations")), ("cuda_graphs", N_("CUDA graphs")),
    ("overhead", N_("Runtime overhead")),
)
SEGMENT_CSS: Final = {"weights": "weights", "kv_cache": "kv", "activations": "activations",
                      "cuda_graphs": "graphs", "overhead": "overhead"}

WARNINGS: Final = {
    engine.FP8_WEIGHT_ONLY_WARNING: N_(
        "No FP8 tensor cores on this card: FP8 weights save memory here, not compute."),
    engine.FP4_WEIGHT_ONLY_WARNING: N_(
        "FP4 tensor cores are Blackwell-only: on this card NVFP4/MXFP4 weights save memory and "
        "bandwidth but get no FP4 compute."),
    engine.UNIFIED_WARNING: N_(
        "Shared memory: the operating system uses the same memory, so the runtime may take at "
        "most 85 % of it."),
    engine.GRAPH_HEADROOM_WARNING: N_(
        "Little room is left beside the runtime's share for CUDA graphs; start-up may run out "
        "of memory."),
    engine.BELOW_SPEED_FLOOR_WARNING: N_(
        "Too slow for this load: each user would get fewer tokens per second than the minimum "
        "you set."),
}
FORMAT_NAMES: Final = {"awq": "AWQ", "gptq": "GPTQ", "nvfp4": "NVFP4", "mxfp4": "MXFP4",
                       "gguf-q4_k_m": "GGUF Q4_K_M", "fp8": "FP8"}
"""Format names as written in any language (the levers' wording takes them)."""
LEVERS: Final = {
    "fp8_kv_cache": N_("an FP8 KV cache"),
    "four_bit_weights": N_("4-bit weights (%(format)s)"),
    "more_gpus": N_("%(gpus)s cards (tensor parallel)"),
    "shorter_context": N_("a context of %(context)s tokens"),
}
ASSUMPTIONS: Final = {
    "approximate": N_("approximate: the model type %(model_type)s is not one we count exactly; "
                      "it is counted as a Llama-style decoder from %(fields)s"),
    **APPROXIMATE_PART_LABELS,
    "units": N_("GB = 10⁹ bytes; per GPU"),
    "tower": N_("multimodal checkpoint: its vision tower (%(params)s parameters) is loaded "
                "beside the language model in 16-bit"),
    "tower_audio": N_("multimodal checkpoint: its vision and audio towers (%(params)s "
                      "parameters, %(audio)s of them the audio tower's) are loaded beside the "
                      "language model in 16-bit"),
    "vllm": N_("vLLM %(version)s as it sizes memory at start-up: the card times its memory "
               "share (0.9) less the weights, the activation peak of its profile run and "
               "runtime memory; the rest holds the KV cache, in blocks of 16 tokens"),
    "vllm_graphs": N_("CUDA graphs and the CUDA context live in the memory vLLM leaves free"),
    "sglang": N_("SGLang %(version)s: its static memory share holds weights and the KV cache"),
    "llama_cpp": N_("llama.cpp: the whole card; the KV cache for every user's context, layers "
                    "split over the cards"),
    "weights": N_("weights in %(format)s: only the linear layers are quantised; embeddings, "
                  "output layer and norms stay 16-bit"),
    "kv": N_("KV cache in %(dtype)s: %(bytes)s bytes per token per GPU, counting key/value "
             "heads, not attention heads"),
    "mla": N_("multi-head latent attention: one latent of %(latent)s values per token and "
              "layer"),
    "sliding": N_("%(layers)s sliding-window layers keep at most %(window)s tokens per user"),
    "linear": N_("%(layers)s linear-attention, Mamba or short-convolution layers keep a fixed "
                 "state per user"),
    "compressed": N_("%(layers)s compressed-attention layers also keep one entry per %(rates)s "
                     "tokens of each user, and a buffer of the tokens still to compress"),
    "indexer": N_("%(layers)s layers also keep their sparse-attention indexer's key, "
                  "%(width)s values per token of each user, on every card"),
    "tp": N_("the model split over %(gpus)s cards (tensor parallel)"),
    "decode": N_("speed per user: each step reads the weights and every user's KV cache at "
                 "%(efficiency)s of the card's memory bandwidth (calibrated on published "
                 "measurements)"),
    "prefill": N_("prompt speed: 2 operations per active parameter and token at %(mfu)s of the "
                  "card's peak"),
    "moe": N_("mixture of experts: each step reads the experts the users' tokens touch"),
}
"""The serving engine's assumptions (``SERVING_ASSUMPTION_TEXTS``), by key."""
VERDICTS: Final = {
    (False, False): N_("%(name)s serves %(users)s users at %(context)s tokens each, up to "
                       "%(most)s at once."),
    (True, False): N_("%(name)s serves %(users)s user at %(context)s tokens, up to %(most)s "
                      "at once."),
    (False, True): N_("%(name)s serves %(users)s users at 1 token each, up to %(most)s at "
                      "once."),
    (True, True): N_("%(name)s serves %(users)s user at 1 token, up to %(most)s at once."),
}
"""The verdict when a card serves the load, by (one user, a context of one token): English
and German say "1 user", "1 token" (a context of 1 read "at 1 tokens")."""


@dataclass(frozen=True)
class ServeRow:
    """One card (``gpus`` of it) or one system, as the table shows it."""

    kind: str
    slug: str
    name: FieldError
    gpus: int
    fit: ServingFit
    price_eur_net: Decimal | None
    stock_status: str
    product_url: str | None
    quote_url: str
    recommended: bool
    levers: tuple[FieldError, ...]
    warnings: tuple[FieldError, ...]
    price_indicative: bool = False
    """The seed's public list price, not yet confirmed by staff (shown "indicative")."""
    nominal_gb: int = 0
    """The memory each of its cards is sold with (GiB, as the card is named; 0: unknown)."""

    @property
    def state(self) -> str:
        return "ok" if self.fit.fits else "no"


@dataclass(frozen=True)
class ServeView:
    result: ServingResult
    model: ModelRecord | None
    verdict: FieldError
    fits_any: bool
    cards: tuple[ServeRow, ...]
    systems: tuple[ServeRow, ...]
    best: ServeRow | None
    chart: Chart
    legend: tuple[tuple[str, str, int], ...]
    assumptions: tuple[FieldError, ...]


def quote_urls(calc: ServeInput) -> Callable[[str], str]:
    """The quote form's address for each item of one result, with every Serve input
    (``workload=serving``), so the quote is sized, shown and stored as this serving job, not
    as a fine-tuning one; none for a pasted config.json, which no link can carry. The inputs
    are encoded once rather than once per card and system (the item comes first, and no
    input is named ``item``)."""
    if calc.is_custom:
        return lambda item: ""
    rest = "&" + urlencode({"workload": "serving", **calc.quote_query()})

    def url(item: str) -> str:
        return f"/quote?item={quote_plus(item)}{rest}"

    return url


def _levers(levers: tuple[ServingLever, ...], gpu: str) -> tuple[FieldError, ...]:
    found: list[FieldError] = []
    for lever in levers:
        if lever.gpu != gpu or lever.lever not in LEVERS:
            continue
        params: dict[str, int | str] = {
            key: value if isinstance(value, int) else FORMAT_NAMES.get(str(value), str(value))
            for key, value in lever.change.items()}
        if "weights" in params:
            params = {"format": params["weights"]}
        found.append(FieldError(LEVERS[lever.lever], params))
    return tuple(found)


def _warnings(fit: ServingFit) -> tuple[FieldError, ...]:
    return tuple(FieldError(WARNINGS[w]) for w in fit.warnings if w in WARNINGS)


def best_first(row: ServeRow) -> tuple[bool, bool, Decimal, int, str]:
    """A table's order, as the fine-tune tables rank (``storefront_key``): what serves the
    load first, then by price, "price on request" after every price; among prices equal or
    unknown, the least memory that serves first (the card the verdict recommends), and of
    what does not serve, the most memory first (the nearest miss); then by slug. A shop that
    has not priced its catalog (the seed's default) lists from the recommended card up, not
    alphabetically."""
    price = row.price_eur_net
    memory = row.fit.usable_bytes * row.gpus
    return (not row.fit.fits, price is None, price or Decimal(0),
            memory if row.fit.fits else -memory, row.slug)


def _system_row(quote: Callable[[str], str], system: SystemRecord, gpu: GpuRecord, gpus: int,
                fit: ServingFit) -> ServeRow:
    return ServeRow(
        kind="system", slug=system.slug, name=system_name(system, gpu), gpus=gpus, fit=fit,
        price_eur_net=system.price_eur_net, stock_status=system.stock_status,
        product_url=system.product_url, quote_url=quote(f"system:{system.slug}"),
        recommended=False, levers=(), warnings=_warnings(fit),
        price_indicative=system.price_indicative, nominal_gb=gpu.memory_nominal_gb)


def build(calc: ServeInput, catalog: Catalog, sizing: ServingSizing) -> ServeView:
    """The page's view of a serving sizing."""
    result = sizing.result
    gpus = {gpu.slug: gpu for gpu in catalog.gpus}
    fitting = [fit for fit in result.fits if fit.fits and fit.gpu in gpus]
    best = min(fitting, key=lambda fit: (fit.usable_bytes, fit.gpu)) if fitting else None
    quote = quote_urls(calc)
    cards = tuple(sorted((
        ServeRow(kind="gpu", slug=fit.gpu, name=FieldError(gpus[fit.gpu].name), gpus=calc.gpus,
                 fit=fit,
                 price_eur_net=gpus[fit.gpu].price_eur_net,
                 stock_status=gpus[fit.gpu].stock_status,
                 product_url=gpus[fit.gpu].product_url,
                 quote_url=quote(f"gpu:{fit.gpu}"),
                 recommended=best is not None and fit.gpu == best.gpu,
                 levers=_levers(result.levers, fit.gpu), warnings=_warnings(fit),
                 price_indicative=gpus[fit.gpu].price_indicative,
                 nominal_gb=gpus[fit.gpu].memory_nominal_gb)
        for fit in result.fits if fit.gpu in gpus), key=best_first))
    systems = tuple(sorted((_system_row(quote, row.system, row.gpu, row.gpus, row.fit)
                            for row in sizing.systems
                            if not calc.gpu or row.gpu.slug == calc.gpu), key=best_first))
    fitting_systems = [row for row in systems if row.fit.fits]
    first = min(fitting_systems, key=lambda row: (row.gpus, row.slug)) if fitting_systems \
        else None
    if best is not None:
        verdict = FieldError(VERDICTS[calc.users == 1, calc.context == 1],
                             {"name": gpus[best.gpu].name, "users": calc.users,
                              "context": calc.context, "most": best.max_concurrency})
    elif first is not None:
        verdict = FieldError(N_("No single card serves this; the %(name)s does (%(gpus)s "
                                "cards), up to %(most)s users at once.")
                             if first.fit.max_concurrency != 1 else
                             N_("No single card serves this; the %(name)s does (%(gpus)s "
                                "cards), for 1 user at a time."),
                             {"name": first.name, "gpus": first.gpus,
                              "most": first.fit.max_concurrency})
    else:
        verdict = FieldError(N_("No card or system we sell serves this as set; see the "
                                "changes in the table."))
    breakdown = result.per_gpu_bytes
    legend = tuple((SEGMENT_CSS[key], label, int(getattr(breakdown, key)))
                   for key, label in SEGMENTS)
    assumptions = tuple(
        FieldError(ASSUMPTIONS[key], _assumption_params(key, values))
        for key, values in result.assumption_items if key in ASSUMPTIONS)
    return ServeView(
        result=result, model=next((m for m in catalog.models if m.slug == calc.model), None),
        verdict=verdict, fits_any=best is not None or bool(fitting_systems), cards=cards,
        systems=systems,
        best=next((row for row in cards if row.recommended), None) if best is not None
        else first,
        chart=bar_chart([(label, SEGMENT_CSS[key], int(getattr(breakdown, key)))
                         for key, label in SEGMENTS], breakdown.total,
                        tuple(gpus[r.slug] for r in cards)),
        legend=legend, assumptions=assumptions)


def _assumption_params(key: str, values: dict[str, str | int | float]) -> dict[str, int | str]:
    """The engine's values for the page's wording (floats as their text)."""
    return {name: value if isinstance(value, int | str) else str(value)
            for name, value in values.items()}


@dataclass(frozen=True)
class MethodPage:
    """The Serve mode's part of "How we calculate": the real start-up logs and the published
    decode speeds the serving engine is held to, with its figure and error for each."""

    vllm_version: str
    logs: tuple[LogCase, ...]
    decode: tuple[DecodeCase, ...]
    efficiency: float
    median_error_pct: float
    max_error_pct: float


def method_page() -> MethodPage:
    decode = decode_cases()
    summary = decode_summary(decode)
    return MethodPage(vllm_version=engine.VLLM_VERSION, logs=log_cases(), decode=decode,
                      efficiency=engine.DECODE_EFFICIENCY,
                      median_error_pct=round(100 * summary["median_error"], 1),
                      max_error_pct=round(100 * summary["max_error"], 1))
