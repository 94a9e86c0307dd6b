"""GET /metrics in Prometheus' text format (not in any OpenAPI document), for allowed clients.

Anyone else gets a 403 that says how to be allowed (app/ops/access.py): the body names only
the settings, which docs/configuration.md documents anyway.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response

from app.ops import metrics
from app.ops.access import may_read_internals

router = APIRouter(include_in_schema=False)

REFUSED = ("metrics are served to the addresses in SIZER_METRICS_ALLOW_IPS "
           "or with Authorization: Bearer <SIZER_METRICS_TOKEN>\n")


@router.get("/metrics")
def prometheus_metrics(request: Request) -> Response:
    if not may_read_internals(request):
        return PlainTextResponse(REFUSED, status_code=403)
    body, content_type = metrics.render()
    return Response(body, media_type=content_type)
