"""POST /estimates and POST /recommendations: the estimates service, as JSON.

Both take the fields of ``sizer estimate``; the numbers are the storefront's and the CLI's
(one service: :mod:`app.estimates.service`). ``engine_version`` is in every answer.
"""

from __future__ import annotations

from functools import partial
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request, Response
from starlette.concurrency import run_in_threadpool

from app import caches
from app.api.v1 import schemas
from app.api.v1 import serving as serving_api
from app.api.v1.bodies import check_model_choice, resolved
from app.api.v1.deps import require_partner
from app.api.v1.json_body import BoundedJsonRoute
from app.api.v1.mappers import recommendations_out
from app.api.v1.responses import AUTH_ERRORS, HUB_UNAVAILABLE, INVALID, NOT_FOUND
from app.catalog import hub
from app.catalog import service as catalog_service
from app.config import Settings
from app.estimates import recommendations as recommendations_service
from app.estimates import service as estimates_service
from app.estimates.job_input import CALCULATOR_OMITS, JOB_INPUT_FIELDS, JobInput
from app.estimates.service import EstimateRequest
from app.http import cached as cached_path
from app.http.session import DbSession

router = APIRouter(tags=["estimates"], dependencies=[Depends(require_partner)],
                   responses={**AUTH_ERRORS, **INVALID, **NOT_FOUND, **HUB_UNAVAILABLE},
                   route_class=BoundedJsonRoute)  # a 5,000-digit number names its field

STOREFRONT_PRESETS = ("all-linear", "attention", "qv", "mlp")


def job_input(body: schemas.EstimateInput) -> JobInput:
    """The body's job fields as the one input every surface fills (:mod:`app.estimates.job_input`);
    the body's other fields say which model and cards."""
    values = {name: getattr(body, name) for name in JOB_INPUT_FIELDS}
    return JobInput.of({**values, "gradient_checkpointing": body.checkpointing_setting})


def to_request(body: schemas.EstimateInput, *, with_levers: bool = True) -> EstimateRequest:
    """The API body as the estimates service's request (the CLI builds the same)."""
    check_model_choice(body.model, body.inline_config)
    return job_input(body).request(model_slug=body.model, model_config=body.inline_config,
                                   gpu_slugs=tuple(body.gpu), with_levers=with_levers)


def serve_query(body: schemas.ServingInput) -> dict[str, str]:
    """The Serve page's inputs of a serving job, what a serving quote keeps and shows (the
    keys of ``/serve?...``); ``source=api`` marks a job the page cannot show whole (a
    config.json, several cards to check, a runtime setting only the API offers)."""
    query: dict[str, str] = {
        "model": body.model or "", "weights": body.weights, "kv": body.kv_cache,
        "context": str(body.context), "users": str(body.concurrency), "gpus": str(body.gpus),
        "runtime": body.runtime, "gpu": body.gpu[0] if len(body.gpu) == 1 else "",
        "speed": f"{body.min_tokens_per_s:g}"}
    api_only = (body.model is None or len(body.gpu) > 1 or body.gpu_memory_utilization is not None
                or body.max_num_batched_tokens is not None
                or not float(body.min_tokens_per_s).is_integer())
    return {**{key: value for key, value in query.items() if value},
            **({"source": "api"} if api_only else {})}


def storefront_query(body: schemas.EstimateInput) -> dict[str, str] | None:
    """The calculator's parameters for this job, or None when the storefront cannot show it
    (an inline config.json, or options only the API and CLI offer)."""
    defaults = schemas.EstimateInput(model="x", method=body.method)
    api_only = (*CALCULATOR_OMITS, "dataset_tokens", "epochs")  # the page's own links omit these
    if body.model is None or any(getattr(body, f) != getattr(defaults, f) for f in api_only):
        return None
    if body.lora_targets not in STOREFRONT_PRESETS or body.attention not in ("flash", "eager"):
        return None
    if len(body.gpu) > 1:
        return None
    query: dict[str, str] = {"model": body.model, "method": body.method,
                             "optimizer": body.optimizer, "batch": str(body.batch_size),
                             "seq": str(body.seq_len)}
    if body.method != "full":
        query.update(rank=str(body.lora_rank), targets=body.lora_targets)
    # ckpt as the page writes it: "" automatic (its default, as the API's), "1" on, "0" off
    extra: dict[str, Any] = {
        "quant": body.quant or "",
        "ckpt": {"auto": "", "on": "1", "off": "0"}[body.checkpointing_setting],
        "attention": body.attention if body.attention != "flash" else "",
        "gpus": str(body.gpus) if body.gpus != 1 else "",
        "sharding": body.sharding if body.sharding != "none" else "",
        "offload": body.offload if body.offload != "none" else "",
        "gpu": body.gpu[0] if body.gpu else "",
        "framework": body.framework if body.framework != "hf" else "",
        "precision": body.precision or "", "adapter": body.adapter_dtype or "",
        "base": body.base_dtype or "",
        "bnb": body.bnb_version if body.bnb_version != "current" else "",
        "impl": body.sharding_impl if body.sharding_impl != "deepspeed" else "",
        "segments": "1" if body.expandable_segments else "",
        "change": "1" if body.allow_method_change else "",
        "moe": body.moe_lora if body.moe_lora != "fused" else "",
    }
    query.update({k: v for k, v in extra.items() if v})
    return query


@router.post("/estimates", response_model=schemas.Estimate, summary="Estimate a job")
async def create_estimate(request: Request, body: schemas.EstimateInput) -> Response:
    """Memory per GPU for the job, and how it fits each card: the engine's document."""
    # Async: a job answered before, against the cached catalog, is sent from the event loop
    # without a thread or a query; only the engine's work (and the catalog's revision check,
    # once a second) goes to a thread (app/http/cached.py).
    cached = caches.of(request)
    catalog = await cached_path.catalog(request)
    if body.model is not None and hub.is_repo_id(body.model):  # the Hub, maybe: a thread
        body = await run_in_threadpool(
            cached_path.in_session, request, lambda session: resolved(request, session,
                                                                      catalog, body))
    job = to_request(body)
    document = estimates_service.remembered_estimate_json(catalog, job, cache=cached.estimates)
    if document is None:
        document = await run_in_threadpool(
            partial(estimates_service.estimate_json, catalog, job, cache=cached.estimates))
    # Sent as the service serialised it (and keeps it for the next identical request); the
    # schema tests and schemathesis hold it to the response model.
    return Response(document, media_type="application/json")


@router.post("/recommendations",
             response_model=schemas.Recommendations | schemas.ServingRecommendations,
             summary="Cards and systems that fit")
def recommend(request: Request, session: DbSession, body: schemas.JobInput
              ) -> schemas.Recommendations | schemas.ServingRecommendations:
    """Every card and system that holds the job as set or with a setup (``setup``), ranked
    as the estimate's ``recommendation``: the cheapest priced first, ties by training time;
    price on request after every priced offer, smallest memory first. With ``"workload":
    "serving"`` the body is a serving job (as for /serving-estimates) and the answer ranks by
    cards, price and the most concurrent requests."""
    if isinstance(body, schemas.ServingInput):
        return serving_api.recommend_serving(request, session, body)
    cached = caches.of(request)
    catalog = catalog_service.get_catalog(session, cached.catalog)
    body = resolved(request, session, catalog, body)
    found = recommendations_service.recommend(catalog, to_request(body, with_levers=False),
                                              cache=cached.estimates)
    query = storefront_query(body)
    # From SIZER_PUBLIC_BASE_URL, never from the request's Host header.
    settings: Settings = request.app.state.settings
    urls: dict[str, str | None] = {}
    for option in found.options:
        item = f"{option.kind}:{option.slug}"
        urls[item] = (settings.absolute_url(f"/quote?{urlencode({'item': item, **query})}")
                      if query is not None else None)
    return recommendations_out(found, urls)
