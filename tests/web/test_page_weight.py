"""The calculator stays light: HTML + CSS + JS under 60 KB compressed (gzip -9)."""

from __future__ import annotations

import gzip
import re

from fastapi.testclient import TestClient

BUDGET_BYTES = 60 * 1024


def test_first_load_weighs_under_the_budget(client: TestClient) -> None:
    html = client.get("/").content
    assets = re.findall(rb'(?:src|href)="(/static/[^"]+\.(?:js|css))"', html)
    assert {a.rsplit(b".", 1)[1] for a in assets} == {b"js", b"css"}
    total = len(gzip.compress(html, 9))
    for asset in assets:
        total += len(gzip.compress(client.get(asset.decode()).content, 9))
    assert total < BUDGET_BYTES, f"page weight {total} bytes compressed"


def test_no_third_party_reference_in_the_page(client: TestClient) -> None:
    html = client.get("/").text
    external = re.findall(r'(?:src|href|action)="((?:https?:)?//[^"]+)"', html)
    assert external == []
