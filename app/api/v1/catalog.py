"""Catalog reads: cards, systems, models. Cacheable: ETag, Cache-Control, 304.

The ETag is the catalog revision (bumped by every catalog write) plus a digest of the body,
so it changes when the catalog changes and differs between representations.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel

from app import caches
from app.api.v1 import schemas
from app.api.v1.deps import require_partner
from app.api.v1.mappers import gpu_out, model_out, system_out
from app.api.v1.problems import ApiProblem
from app.api.v1.responses import AUTH_ERRORS, BAD_PARAMETER, NOT_FOUND
from app.catalog import search as catalog_search
from app.catalog import service as catalog_service
from app.catalog.schemas import ModelRecord
from app.http.session import DbSession

router = APIRouter(tags=["catalog"], dependencies=[Depends(require_partner)],
                   responses={**AUTH_ERRORS, **BAD_PARAMETER,
                              304: {"description": "Not modified (If-None-Match)"}})

_CURSOR = re.compile(r"^[A-Za-z0-9_-]+$")
CACHE_CONTROL = "private, max-age=60, must-revalidate"
MAX_PAGE = 100


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    candidates = {part.strip().removeprefix("W/") for part in header.split(",")}
    return "*" in candidates or etag in candidates


def cached(request: Request, revision: int, body: BaseModel) -> Response:
    """The body as JSON with its ETag, or 304 when the client already has it."""
    content = json.dumps(body.model_dump(mode="json"), separators=(",", ":"),
                         ensure_ascii=False).encode("utf-8")
    etag = f'"{revision}-{hashlib.sha256(content).hexdigest()[:20]}"'
    headers = {"ETag": etag, "Cache-Control": CACHE_CONTROL, "Vary": "Authorization"}
    if _etag_matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=headers)
    return Response(content, media_type="application/json", headers=headers)


@router.get("/gpus", response_model=schemas.GpuList, summary="List cards")
def list_gpus(request: Request, session: DbSession) -> Response:
    """Every card the shop sells, with price and stock."""
    catalog = catalog_service.get_catalog(session, caches.of(request).catalog)
    return cached(request, catalog.revision,
                  schemas.GpuList(items=[gpu_out(gpu) for gpu in catalog.gpus]))


@router.get("/gpus/{slug}", response_model=schemas.Gpu, responses=NOT_FOUND, summary="One card")
def get_gpu(request: Request, session: DbSession, slug: str) -> Response:
    catalog = catalog_service.get_catalog(session, caches.of(request).catalog)
    return cached(request, catalog.revision, gpu_out(catalog.gpu(slug)))


@router.get("/systems", response_model=schemas.SystemList, summary="List systems")
def list_systems(request: Request, session: DbSession) -> Response:
    """Every configured workstation, server and appliance."""
    catalog = catalog_service.get_catalog(session, caches.of(request).catalog)
    return cached(request, catalog.revision,
                  schemas.SystemList(items=[system_out(s) for s in catalog.systems]))


@router.get("/systems/{slug}", response_model=schemas.System, responses=NOT_FOUND,
            summary="One system")
def get_system(request: Request, session: DbSession, slug: str) -> Response:
    catalog = catalog_service.get_catalog(session, caches.of(request).catalog)
    return cached(request, catalog.revision, system_out(catalog.system(slug)))


def encode_cursor(slug: str) -> str:
    return base64.urlsafe_b64encode(slug.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> str:
    invalid = ApiProblem(422, "not a cursor this API returned", location="query.cursor")
    if not _CURSOR.match(cursor):
        raise invalid
    try:
        slug = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
    except (binascii.Error, ValueError) as error:
        raise invalid from error
    if not slug:
        raise invalid
    return slug


def page_of(models: Sequence[ModelRecord], *, q: str, family: str | None, cursor: str | None,
            limit: int) -> tuple[list[ModelRecord], str | None]:
    """Models ``q`` finds (slug, Hugging Face id or family, as the calculator's search box
    finds them, typos included) and ``family``, by slug, after the cursor's slug."""
    after = decode_cursor(cursor) if cursor else None
    found = {m.slug for m in catalog_search.search(models, q)}
    chosen = sorted(
        (m for m in models
         if m.slug in found
         and (family is None or m.family.lower() == family.lower())
         and (after is None or m.slug > after)),
        key=lambda m: m.slug,
    )
    page = chosen[:limit]
    more = len(chosen) > limit
    return page, encode_cursor(page[-1].slug) if more and page else None


@router.get("/models", response_model=schemas.ModelPage, summary="Search models")
def list_models(
    request: Request, session: DbSession,
    q: Annotated[str, Query(max_length=100, description="Search slug, HF id, family.")] = "",
    family: Annotated[str | None, Query(max_length=64, examples=["Qwen"])] = None,
    cursor: Annotated[str | None, Query(max_length=200, description="next_cursor of the "
                                        "previous page.")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20,
) -> Response:
    """Catalog models by slug, cursor-paginated."""
    catalog = catalog_service.get_catalog(session, caches.of(request).catalog)
    page, next_cursor = page_of(catalog.models, q=q, family=family, cursor=cursor, limit=limit)
    body = schemas.ModelPage(items=[model_out(m) for m in page], next_cursor=next_cursor)
    return cached(request, catalog.revision, body)


@router.get("/models/{slug}", response_model=schemas.ModelDetail, responses=NOT_FOUND,
            summary="One model, with its config.json")
def get_model(request: Request, session: DbSession, slug: str) -> Response:
    catalog = catalog_service.get_catalog(session, caches.of(request).catalog)
    model = catalog.model(slug)
    summary: dict[str, Any] = model_out(model).model_dump()
    return cached(request, catalog.revision,
                  schemas.ModelDetail(**summary, config=dict(model.config)))

