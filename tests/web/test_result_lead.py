"""The result leads with one figure (issue 30, point 5): "Needs 42.8 GB per GPU" and the best
choice's price right under the verdict; the breakdown tiles, in plain words, behind "details";
cards named as they are sold, the usable memory explained once.

The walk found six tiles with allocator words first, the figure that matters ("total per GPU")
last, and "48 GB card, 51.3 GB usable" on every row, which reads as an error to a buyer."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

URL = "/?model=llama-3.1-8b&method=lora"


def test_the_result_leads_with_the_total_per_gpu_and_the_best_price(client: TestClient,
                                                                     htmx: bool) -> None:
    body = client.get(URL, headers={"HX-Request": "true"} if htmx else {}).text
    body = body.replace("\u00a0", " ")
    result = body[body.index('id="result-title"'):]
    lead = re.search(r'<p class="lead" id="lead-figure">Needs ([\d.,]+ GB) per GPU(.*?)</p>',
                     result, re.S)
    assert lead, "the lead figure"
    total = re.search(r'id="fig-total">([\d.,]+ GB)<', result)
    assert total and lead.group(1) == total.group(1)
    assert "EUR" in lead.group(2) or "€" in lead.group(2) or "Price on request" in lead.group(2)
    # nothing but notes between the verdict and the lead: no tile, table or chart before it
    before = result[:result.index('id="lead-figure"')]
    assert "<dl" not in before and "<table" not in before and "<figure" not in before


def test_the_breakdown_tiles_are_behind_details_with_the_total_first(client: TestClient) -> None:
    body = client.get(URL).text
    details = re.search(r'<details class="breakdown" id="breakdown">(.*?)</details>', body, re.S)
    assert details, "the breakdown is behind details"
    tiles = re.findall(r'<dd id="(fig-[a-z-]+)">', details.group(1))
    assert tiles[0] == "fig-total"
    assert set(tiles) == set(re.findall(r'<dd id="(fig-[a-z-]+)">', body))
    for word in ("Allocated", "Reserved", "allocator", "live tensors", "Model states"):
        assert word not in details.group(1), word


def test_cards_are_named_as_sold_and_usable_memory_is_explained_once(client: TestClient) -> None:
    body = client.get(URL).text.replace("\u00a0", " ")
    start = body.index('id="cards-title"')
    table = body[start:body.index("</table>", start)]
    assert re.search(r'id="card-rtx-pro-5000-48gb".*?<small>48 GB card</small>', table, re.S)
    assert not [name for name in re.findall(r"<small>([^<]*)</small>", table) if "usable" in name]
    assert body.count('id="gib-note"') == 1
    assert "48 GiB" in body


@pytest.mark.parametrize("lang", ["de"])
def test_the_lead_is_german_on_german_pages(client: TestClient, lang: str) -> None:
    body = client.get(URL, headers={"Accept-Language": lang}).text
    assert re.search(r'id="lead-figure">Braucht [\d.,]+\u00a0GB je GPU', body)
    assert "Details: woraus die" in body


FOLDS = re.compile(r'<details class="(chart-fold|systems-fold)" id="[a-z-]+"( open)?>')


@pytest.mark.parametrize(("url", "systems_open"), [
    (URL, False),  # a card holds it: the systems fold away
    ("/?model=llama-3.3-70b&method=full", True),  # a server is the answer: they stay shown
    ("/serve?model=llama-3.1-8b", False),
    ("/serve?model=llama-3.3-70b", True),
])
def test_the_chart_and_the_systems_a_card_makes_needless_are_folded(
    client: TestClient, htmx: bool, url: str, systems_open: bool
) -> None:
    """A fresh walk of issue 30, point 6: the breakdown was folded, yet a phone result was
    still 8,650 px long: the chart (870 px) open under the lead and every system (2,700 px) one
    under another though one card holds the job."""
    body = client.get(url, headers={"HX-Request": "true"} if htmx else {}).text
    folds = dict(FOLDS.findall(body))
    assert folds.get("chart-fold") == "", "the chart is behind details, closed"
    # A system as the answer: the table under its heading, no fold repeating the heading.
    assert folds.get("systems-fold") == (None if systems_open else "")
    assert 'id="system-' in body
    chart = body.index('id="chart-fold"')
    assert chart < body.index('class="chart"') < body.index("</details>", chart)


def test_the_lead_figure_follows_the_verdict_before_any_note(client: TestClient) -> None:
    body = client.get(URL).text
    result = body[body.index('id="result-title"'):]
    lead = result.index('id="lead-figure"')
    for later in ('class="model-line"', 'id="thumb-note"', 'id="ckpt-note"'):
        assert later not in result or result.index(later) > lead, later


@pytest.mark.parametrize(("lang", "key", "label"), [
    ("en", "a 48 GB card holds 51.5 GB", "48 GB card: 51.3 GB usable"),
    ("de", "eine 48-GB-Karte fasst also 51,5 GB", "Karte mit 48 GB: 51,3 GB nutzbar"),
])
@pytest.mark.parametrize("url", [URL, "/serve?model=llama-3.1-8b"])
def test_the_chart_says_why_usable_memory_reads_higher_before_its_first_card(
    client: TestClient, lang: str, key: str, label: str, url: str
) -> None:
    """A fresh walk of issue 30, point 6: the cards table names each card as sold, yet the
    chart still read "48 GB card, 51.3 GB usable" on every row, its explanation (the GiB note)
    further down under "Every card we sell"."""
    body = client.get(url, headers={"Accept-Language": lang}).text.replace("\u00a0", " ")
    chart = body[body.index('class="chart"'):body.index("</figure>")]
    assert key in chart[:chart.index('class="chart-label"')]
    assert label in chart
    assert not re.search(r"\d GB card, [\d.,]+ GB usable|mit \d+ GB, [\d.,]+ GB nutzbar", body)
