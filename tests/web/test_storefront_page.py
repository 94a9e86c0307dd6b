"""What the calculator page says and how it is laid out (issue 18, points 1, 3, 4, 5, 16).

Every figure says whether it is per GPU or for all GPUs together, and a shared link that sets
GPUs or a sharding opens "Advanced" so the reader sees why; method and base weights are one
control, so the page cannot ask for a combination the engine refuses; the engine's version and
other developer detail stay on "How we calculate", out of the verdict and the customer's
request page.
"""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from app.engine.estimate import ENGINE_VERSION
from tests.web.test_quotes import CONTACT, QUOTE, _form_fields

SHARDED_70B = "/?model=llama-3.1-70b&method=full&gpus=8&sharding=zero3"


def figures(body: str) -> dict[str, str]:
    """The result's figures: label -> id of the value."""
    return dict(re.findall(r'<dt>([^<]+)</dt><dd id="(fig-[a-z-]+)">', body))


def test_every_figure_says_per_gpu_or_all_gpus(client: TestClient) -> None:
    labels = figures(client.get(SHARDED_70B).text)
    assert labels == {
        "Total per GPU, what the card must hold": "fig-total",
        "Weights, gradients and optimizer, per GPU": "fig-states",
        "Weights, gradients and optimizer, all 8 GPUs together": "fig-states-total",
        "of which the adapters, per GPU": "fig-adapter",
        "Activations (the batch's working memory), per GPU": "fig-activations",
        "In use at the busiest moment, per GPU": "fig-allocated",
        "Held by PyTorch with its spare room, per GPU": "fig-reserved",
    }
    one_gpu = figures(client.get("/?model=llama-3.1-8b&method=lora").text)
    assert "Weights, gradients and optimizer, per GPU" in one_gpu
    assert "fig-states-total" not in one_gpu.values()


def test_per_gpu_states_are_a_share_of_the_total(client: TestClient) -> None:
    body = client.get(SHARDED_70B).text.replace("\u00a0", " ")
    per_gpu = re.search(r'id="fig-states">([\d.,]+) GB<', body)
    total = re.search(r'id="fig-states-total">([\d.,]+) GB', body)
    assert per_gpu and total
    assert float(per_gpu.group(1).replace(",", "")) < float(total.group(1).replace(",", "")) / 4


def test_a_shared_link_with_gpus_or_sharding_opens_advanced(client: TestClient) -> None:
    assert '<details class="advanced" open>' in client.get(SHARDED_70B).text
    assert '<details class="advanced" open>' in client.get("/?gpus=2").text
    assert '<details class="advanced">' in client.get("/?model=llama-3.1-8b").text


def test_method_and_base_weights_are_one_choice(client: TestClient) -> None:
    body = client.get("/?model=qwen3-32b&method=qlora&quant=nf4").text
    assert 'id="f-quant"' not in body
    assert '<option value="qlora:nf4" selected>' in body
    assert "Base weights" not in body
    plain = client.get("/?model=qwen3-32b&method=qlora").text
    assert '<option value="qlora" selected>QLoRA (4-bit NF4 base, double quantisation)' in plain


def test_the_combined_choice_posts_to_the_shareable_url(client: TestClient) -> None:
    response = client.post("/", data={"model": "qwen3-8b", "method": "qlora:nf4"})
    assert response.status_code == 303
    location = response.headers["location"]
    assert "method=qlora" in location and "quant=nf4" in location
    assert '<option value="qlora:nf4" selected>' in client.get(location).text


def test_an_old_link_with_lora_and_a_four_bit_base_shows_its_error_beside_the_method(
    client: TestClient,
) -> None:
    body = client.get("/?model=llama-3.1-8b&method=lora&quant=nf4").text
    assert re.search(r'<span id="err-quant" class="field-error">[^<]+</span>', body)
    assert 'aria-describedby="err-method err-quant" aria-invalid="true"' in body


def test_no_engine_version_in_the_verdict_or_the_customer_request(client: TestClient) -> None:
    body = client.get("/?model=llama-3.1-8b&method=lora").text
    assert f"engine {ENGINE_VERSION}" not in body and ENGINE_VERSION not in body
    fields = _form_fields(client.get(QUOTE).text)
    target = client.post("/quote", data={**fields, **CONTACT}).headers["location"]
    request_page = client.get(target).text
    assert "<dt>Engine</dt>" not in request_page and ENGINE_VERSION not in request_page
    assert f"engine {ENGINE_VERSION}" in client.get("/how-we-calculate").text


def test_number_fields_carry_their_message_for_values_the_browser_refuses(
    client: TestClient,
) -> None:
    body = client.get("/").text
    assert re.search(r'<input id="f-batch"[^>]+data-invalid="Enter a number from 1 to [\d,]+\."',
                     body)
    assert re.search(r'<p id="stale-note" class="stale-note" role="alert" hidden\s', body)


def test_language_links_are_marked_for_the_script_that_keeps_them_current(
    client: TestClient,
) -> None:
    body = client.get("/?model=qwen3-8b&batch=2").text
    assert 'data-lang-switch="de" href="/lang/de?next=/%3Fmodel%3Dqwen3-8b%26batch%3D2"' in body


def total_gb(body: str) -> float:
    match = re.search(r'id="fig-total">([\d.,]+)\u00a0GB<', body)
    assert match
    return float(match.group(1).replace(",", ""))


def test_checkpointing_is_on_by_default_for_large_models_and_says_so(client: TestClient) -> None:
    """Issue 18, point 12: 70B QLoRA at the page's defaults is sized as its recipes run it."""
    automatic = client.get("/?model=llama-3.1-70b&method=lora").text
    off = client.get("/?model=llama-3.1-70b&method=lora&ckpt=0").text
    assert 'data-ckpt="large_model"' in automatic and 'id="ckpt-note"' not in off
    assert total_gb(automatic) < total_gb(off)
    assert '<option value="" selected>Automatic</option>' in automatic
    assert total_gb(client.get("/?model=llama-3.1-70b&method=lora&ckpt=1").text) == total_gb(
        automatic)
    small = client.get("/?model=llama-3.1-8b&method=lora").text
    assert 'data-ckpt="small_job"' in small
    assert total_gb(small) == total_gb(client.get("/?model=llama-3.1-8b&method=lora&ckpt=0").text)
    long_sequence = client.get("/?model=llama-3.1-8b&method=lora&seq=8192").text
    assert 'data-ckpt="long_sequence"' in long_sequence


def test_qlora_checkpoints_by_default_as_peft_prepares_it(client: TestClient) -> None:
    """Issue 27, point 1: PEFT's prepare_model_for_kbit_training turns checkpointing on, so
    Qwen3-8B QLoRA at batch 4 needs under 40 GB by default, and the page says why."""
    automatic = client.get("/?model=qwen3-8b&method=qlora&batch=4").text
    assert 'data-ckpt="qlora"' in automatic
    assert total_gb(automatic) < 40
    assert total_gb(client.get("/?model=qwen3-8b&method=qlora&batch=4&ckpt=0").text) > 40


def test_cards_show_nominal_and_usable_memory_and_full_names_in_the_chart(
    client: TestClient,
) -> None:
    """Issue 18, point 13."""
    body = client.get("/?model=llama-3.1-8b&method=lora").text.replace("\u00a0", " ")
    assert "48 GB card: 51.3 GB usable" in body  # explained at the top of the chart (issue 30)
    assert 'id="gib-note"' in body
    chart = body[body.index('class="chart"'):body.index("</figure>")]
    for name in ("NVIDIA RTX PRO 5000 Blackwell 48GB", "NVIDIA RTX PRO 5000 Blackwell 72GB",
                 "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"):
        assert f'<p class="chart-label">{name} <span' in chart
    assert chart.count('class="marker"') == 8
    assert "<text" not in chart, "chart text is HTML, sized like the page's"


def test_the_favicon_is_served(client: TestClient) -> None:
    """Issue 18, point 10: /favicon.ico was a 404."""
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/svg+xml"
    assert response.content.startswith(b"<svg")
    assert '<link rel="icon" href="/favicon.ico"' in client.get("/").text


def test_a_rule_of_thumb_line_names_what_it_leaves_out(client: TestClient) -> None:
    """Issue 27, point 7: "70B QLoRA fits 48 GB" counts the 4-bit weights alone; the line
    under the verdict names the larger terms (PEFT's fp32 embeddings and head: about 8.4 GB
    on Llama 70B, activations, overhead) and links to how we calculate."""
    body = client.get("/?model=llama-3.1-70b&method=qlora",
                      headers={"Accept-Language": "en"}).text
    note = re.search(r'<p class="note" id="thumb-note">(.*?)</p>', body, re.S)
    assert note and "PEFT keeps the embeddings" in note.group(1)
    rest = re.search(r"in fp32 \(([\d.]+)\u00a0GB\)", note.group(1))
    assert rest and 8.0 <= float(rest.group(1)) <= 9.0
    assert 'href="/how-we-calculate"' in note.group(1)
    small = client.get("/?model=llama-3.1-8b&method=full", headers={"Accept-Language": "en"})
    assert 'id="thumb-note"' not in small.text  # 16 bytes a parameter is close enough


def test_lora_becomes_qlora_only_when_the_customer_allows_it(client: TestClient) -> None:
    """Issue 27, point 3: the page's checkbox is the API's allow_method_change."""
    english = {"Accept-Language": "en"}
    allowed = client.get("/?model=llama-3.1-70b&method=lora&change=1", headers=english).text
    setups = re.findall(r'<p class="setup" id="setup-[^"]+">(.*?)</p>', allowed, re.S)
    assert any("QLoRA (a 4-bit base)" in setup for setup in setups)
    assert 'id="f-change" name="change" type="checkbox" value="1" checked' in allowed
    as_set = client.get("/?model=llama-3.1-70b&method=lora", headers=english).text
    assert "QLoRA (a 4-bit base)" not in as_set
