"""Small customer pages: the language switcher and "How we calculate"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.config import STATIC_DIR, Settings
from app.engine.architectures.registry import SUPPORTED_MODEL_TYPES
from app.engine.documentation import CUDA_CONTEXTS, CURRENT_CONTEXT, TERMS
from app.engine.estimate import ENGINE_VERSION
from app.html.i18n import LOCALE_COOKIE
from app.html.return_paths import same_site_path
from app.html.templating import render
from app.web import serving_view, speed_view
from app.web.method_terms import CONTEXT_LOADING, CONTEXT_TEXTS, TERM_TEXTS

router = APIRouter(include_in_schema=False)

PUBLISHED_DIR = Path(__file__).resolve().parent / "published"
"""The results documents this page renders, package data (``app/web/published/``), written
by ``make accuracy`` and ``python -m tools.calibrate.external``."""
ACCURACY_JSON = PUBLISHED_DIR / "accuracy.json"
ACCURACY_PNG = STATIC_DIR / "img" / "accuracy.png"
EXTERNAL_JSON = PUBLISHED_DIR / "external_results.json"
"""Published GPU runs against the engine and fitcheck-llm (tools/calibrate/external/results.py)."""
ONE_YEAR_S = 365 * 24 * 3600
FAVICON = STATIC_DIR / "img" / "favicon.svg"


HOME = "/"
"""Where the switch goes back to when the requested return path is refused."""


def safe_next(target: str) -> str:
    """The return path as a path on this site (app/html/return_paths.py), or HOME."""
    return same_site_path(target) or HOME


@router.get("/favicon.ico")
def favicon() -> Response:
    """The site's icon where browsers look for it without a link."""
    return Response(FAVICON.read_bytes(), media_type="image/svg+xml",
                    headers={"Cache-Control": f"public, max-age={ONE_YEAR_S // 365}"})


@router.get("/lang/{code}")
def switch_language(request: Request, code: str, next: str = "/") -> Response:
    """The visible switcher: remember the choice in a cookie and go back where we were."""
    settings: Settings = request.app.state.settings
    response = Response(status_code=303, headers={"Location": safe_next(next)})
    if code in settings.supported_locales:
        response.set_cookie(
            LOCALE_COOKIE, code, max_age=ONE_YEAR_S, httponly=True, samesite="lax",
            secure=request.url.scheme == "https",
        )
    return response


def _published(path: Path) -> dict[str, Any] | None:
    """A committed results document, or None when it is missing or unreadable (the page then
    says the measurement is pending rather than failing)."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else {"rows": data}


def _accuracy() -> dict[str, Any] | None:
    return _published(ACCURACY_JSON)


@router.get("/how-we-calculate", response_class=HTMLResponse)
def how_we_calculate(request: Request) -> HTMLResponse:
    """Every term with its formula and source: the engine's constants in the web layer's
    wording, in the reader's language."""
    return render(
        request, "web/how_we_calculate.html",
        {"terms": [(term, TERM_TEXTS[term.key]) for term in TERMS],
         "engine_version": ENGINE_VERSION,
         "accuracy": _accuracy(),
         "accuracy_plot": ACCURACY_PNG.is_file(), "external": _published(EXTERNAL_JSON),
         "model_types": SUPPORTED_MODEL_TYPES, "serving": serving_view.method_page(),
         "speed": speed_view.method_page(),
         "contexts": [(row, CONTEXT_TEXTS[row.key], CONTEXT_LOADING[row.loading])
                      for row in CUDA_CONTEXTS],
         "current_context": CURRENT_CONTEXT},
    )
