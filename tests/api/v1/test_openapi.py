"""The contract is pinned: /api/v1/openapi.json must equal openapi.snapshot.json.

After an intended contract change, regenerate the snapshot and review its diff:

    UPDATE_OPENAPI_SNAPSHOT=1 .venv/bin/pytest tests/api/v1/test_openapi.py
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from fastapi.testclient import TestClient

from app.config import load_settings
from app.main import create_app

SNAPSHOT = Path(__file__).with_name("openapi.snapshot.json")


def served_document(tmp_path: Path) -> dict[str, object]:
    app = create_app(load_settings(database_url=f"sqlite:///{tmp_path / 'unused.db'}"))
    with TestClient(app) as client:
        document: dict[str, object] = client.get("/api/v1/openapi.json").json()
    return document


def test_the_openapi_document_matches_its_snapshot(tmp_path: Path) -> None:
    document = served_document(tmp_path)
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_OPENAPI_SNAPSHOT") == "1":
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert SNAPSHOT.exists(), "no snapshot: run with UPDATE_OPENAPI_SNAPSHOT=1 (module doc)"
    assert text == SNAPSHOT.read_text(encoding="utf-8"), (
        "the partner contract changed; if intended, regenerate the snapshot (module doc)"
    )


def test_the_document_covers_every_endpoint_with_examples(tmp_path: Path) -> None:
    document = served_document(tmp_path)
    paths = document["paths"]
    assert isinstance(paths, dict)
    assert set(paths) == {
        "/gpus", "/gpus/{slug}", "/systems", "/systems/{slug}", "/models", "/models/{slug}",
        "/estimates", "/recommendations", "/serving-estimates", "/quote-requests",
        "/quote-requests/{id}",
    }
    assert document["servers"] == [{"url": "/api/v1"}]
    components = document["components"]
    assert isinstance(components, dict)
    schemas = components["schemas"]
    assert schemas["EstimateInput"]["examples"]
    assert schemas["ServingInput"]["examples"]
    assert schemas["QuoteRequestIn"]["examples"]
    for operations in paths.values():
        for operation in operations.values():
            assert {"401", "429"} <= set(operation["responses"])


def test_the_docs_page_lists_the_endpoints_and_loads_nothing_else(tmp_path: Path) -> None:
    app = create_app(load_settings(database_url=f"sqlite:///{tmp_path / 'unused.db'}"))
    with TestClient(app) as client:
        page = client.get("/api/v1/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for endpoint in ("GET /api/v1/models", "POST /api/v1/estimates",
                     "GET /api/v1/quote-requests/{id}"):
        assert endpoint in page.text
    assert 'id="problem-rate-limited"' in page.text
    assert "<script" not in page.text and "<link" not in page.text
    assert not re.search(r"(src|href)=\"https?://", page.text)
