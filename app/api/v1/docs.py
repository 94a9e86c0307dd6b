"""GET /api/v1/docs: the endpoints and problems, rendered on the server from the OpenAPI
document. One self-contained page: no script, no stylesheet, no third-party request."""

from __future__ import annotations

from html import escape
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.api.v1.problems import TITLES

router = APIRouter(include_in_schema=False)


def _schema_name(media: dict[str, Any]) -> str:
    ref = str(media.get("schema", {}).get("$ref", ""))
    return ref.rsplit("/", 1)[-1]


def render(spec: dict[str, Any]) -> str:
    info = spec.get("info", {})
    parts = [
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>{escape(info.get('title', 'API'))}</title></head><body>",
        f"<h1>{escape(info.get('title', 'API'))} {escape(info.get('version', ''))}</h1>",
        f"<p>{escape(info.get('description', ''))}</p>",
        "<p>Machine-readable contract: <a href=\"/api/v1/openapi.json\">openapi.json</a>.</p>",
        "<h2>Endpoints</h2>",
    ]
    for path, operations in spec.get("paths", {}).items():
        for method, operation in operations.items():
            parts.append(f"<h3 id=\"{escape(operation.get('operationId', ''))}\">"
                         f"<code>{method.upper()} /api/v1{escape(path)}</code></h3>")
            parts.append(f"<p><strong>{escape(operation.get('summary', ''))}</strong>. "
                         f"{escape(operation.get('description', ''))}</p>")
            params = operation.get("parameters", [])
            if params:
                parts.append("<ul>")
                for param in params:
                    parts.append(f"<li><code>{escape(param['name'])}</code> "
                                 f"({escape(param['in'])}) "
                                 f"{escape(param.get('description', ''))}</li>")
                parts.append("</ul>")
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                parts.append(f"<p>Body: <code>{escape(_schema_name(body))}</code></p>")
            statuses = ", ".join(
                f"{escape(code)} {escape(resp.get('description', ''))}"
                for code, resp in operation.get("responses", {}).items()
            )
            parts.append(f"<p>Responses: {statuses}</p>")
    parts.append("<h2>Problems (application/problem+json)</h2><dl>")
    for status, (title, code) in sorted(TITLES.items()):
        anchor = code.replace("_", "-")
        parts.append(f"<dt id=\"problem-{anchor}\">{status} <code>{code}</code></dt>"
                     f"<dd>{escape(title)}</dd>")
    parts.append("</dl></body></html>")
    return "\n".join(parts)


@router.get("/docs", response_class=HTMLResponse)
def docs(request: Request) -> HTMLResponse:
    """The human-readable reference."""
    return HTMLResponse(render(request.app.openapi()),
                        headers={"Cache-Control": "public, max-age=300"})
