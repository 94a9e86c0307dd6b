"""GET /metrics in Prometheus' text format (not in any OpenAPI document)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from app.ops import metrics

router = APIRouter(include_in_schema=False)


@router.get("/metrics")
def prometheus_metrics() -> Response:
    body, content_type = metrics.render()
    return Response(body, media_type=content_type)
