"""POST /serving-estimates, and the serving half of POST /recommendations (``"workload":
"serving"``): the serving service, as JSON.

The body has the fields of ``sizer serving``; the numbers are the storefront's Serve mode's and
the CLI's (one service: :mod:`app.estimates.serving`).
"""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request, Response

from app import caches
from app.api.v1 import schemas
from app.api.v1.bodies import check_model_choice, resolved
from app.api.v1.deps import require_partner
from app.api.v1.json_body import BoundedJsonRoute
from app.api.v1.mappers import money
from app.api.v1.responses import AUTH_ERRORS, INVALID, NOT_FOUND
from app.catalog import service as catalog_service
from app.config import Settings
from app.estimates import serving
from app.estimates.job_input import SERVING_INPUT_FIELDS, ServingJobInput
from app.http.session import DbSession

router = APIRouter(tags=["estimates"], dependencies=[Depends(require_partner)],
                   responses={**AUTH_ERRORS, **INVALID, **NOT_FOUND},
                   route_class=BoundedJsonRoute)


def to_request(body: schemas.ServingInput, *, with_levers: bool = True
               ) -> serving.ServingRequest:
    """The API body as the serving service's request (the CLI builds the same)."""
    check_model_choice(body.model, body.inline_config)
    job = ServingJobInput.of({name: getattr(body, name) for name in SERVING_INPUT_FIELDS})
    return serving.ServingRequest(job=job.job(), model_slug=body.model,
                                  model_config=body.inline_config, gpu_slugs=tuple(body.gpu),
                                  gpu_memory_bytes=body.gpu_memory_bytes,
                                  with_levers=with_levers, published_weights=job.published)


@router.post("/serving-estimates", response_model=schemas.ServingEstimate,
             summary="Estimate serving a model")
def create_serving_estimate(request: Request, session: DbSession,
                            body: schemas.ServingInput) -> Response:
    """Which cards serve the model at this context to this many concurrent requests, and how
    fast: the serving engine's document."""
    cached = caches.of(request)
    catalog = catalog_service.get_catalog(session, cached.catalog)
    body = resolved(request, session, catalog, body)
    return Response(serving.serving_json(catalog, to_request(body), cache=cached.estimates),
                    media_type="application/json")


def recommend_serving(request: Request, session: DbSession,
                      body: schemas.ServingInput) -> schemas.ServingRecommendations:
    """Every card and system that serves the job, best first (``/recommendations`` with
    ``"workload": "serving"``)."""
    cached = caches.of(request)
    catalog = catalog_service.get_catalog(session, cached.catalog)
    asked = body.model
    body = resolved(request, session, catalog, body)
    sizing, found = serving.serving_recommend(catalog, to_request(body, with_levers=False),
                                              cache=cached.estimates)
    settings: Settings = request.app.state.settings
    result = sizing.result
    items: list[schemas.ServingRecommendation] = []
    for rank, option in enumerate(found, start=1):
        item = f"{option.kind}:{option.slug}"
        url = (settings.absolute_url(f"/quote?{urlencode({'item': item, 'model': asked})}")
               if asked is not None else None)
        speed = option.fit.decode_tokens_per_s
        items.append(schemas.ServingRecommendation(
            rank=rank, kind="gpu" if option.kind == "gpu" else "system", slug=option.slug,
            name=option.name, gpu=option.gpu, cards=option.cards, quantity=option.quantity,
            unit_price_eur_net=money(option.unit_price_eur_net),
            price_eur_net=money(option.price_eur_net),
            price_indicative=option.price_indicative, stock_status=option.stock_status,
            max_concurrency=option.fit.max_concurrency, max_context=option.fit.max_context,
            kv_cache_capacity_tokens=option.fit.kv_cache_capacity_tokens,
            decode_tokens_per_s=(schemas.DecodeSpeed(per_request=speed.per_request,
                                                     total=speed.total)
                                 if speed is not None else None),
            quote_url=url,
        ))
    return schemas.ServingRecommendations(engine_version=result.engine_version,
                                          model_type=result.model_type,
                                          recommendations=items)
