"""The page says what a multimodal checkpoint's tower and a hybrid's non-attention layers do to
the figures (issue 16, point 1), in German and English."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient


def test_a_multimodal_checkpoint_names_its_frozen_tower(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client()
    english = client.get("/", params={"model": "gemma-3-4b-it", "method": "lora"},
                         headers={"Accept-Language": "en"}).text
    assert "its vision tower and projector (419,816,304 parameters)" in english
    german = client.get("/", params={"model": "gemma-3-4b-it", "method": "lora"},
                        headers={"Accept-Language": "de"}).text
    assert "sein Bildencoder mit Projektor (419.816.304 Parameter)" in german


def test_a_hybrid_says_which_layers_are_not_attention(
    make_client: Callable[..., TestClient],
) -> None:
    page = make_client().get("/", params={"model": "nvidia-nemotron-nano-9b-v2",
                                          "method": "lora"},
                             headers={"Accept-Language": "en"}).text
    assert "27 of its 56 layers are Mamba-2, not attention" in page
    assert "vision tower" not in page


def test_lora_on_a_multimodal_checkpoint_says_the_tower_is_not_a_target(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client()
    german = client.get("/", params={"model": "gemma-3-4b-it", "method": "lora"},
                        headers={"Accept-Language": "de"}).text
    assert "PEFTs all-linear auf dem ganzen multimodalen Checkpoint" in german
    full = client.get("/", params={"model": "gemma-3-4b-it", "method": "full"},
                      headers={"Accept-Language": "en"}).text
    assert "whole multimodal checkpoint" not in full


def test_lora_on_a_mamba_hybrid_says_peft_refuses_all_linear(
    make_client: Callable[..., TestClient],
) -> None:
    page = make_client().get("/", params={"model": "nvidia-nemotron-nano-9b-v2",
                                          "method": "lora"},
                             headers={"Accept-Language": "en"}).text
    assert "PEFT refuses all-linear on a Mamba hybrid" in page


def _pasted(client: TestClient, slug: str, lang: str) -> str:
    """The LoRA result page for a test fixture's config.json pasted into the form."""
    config = (Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
              / f"{slug}.json").read_text()
    form = {"model": "custom", "config": config, "method": "lora"}
    return client.post("/", data=form, headers={"Accept-Language": lang}).text


def test_longcat_flash_says_how_its_identity_experts_are_counted(
    make_client: Callable[..., TestClient],
) -> None:
    """A pasted LongCat-Flash config: 12 picks, 8 of them real experts on average, and the
    note that transformers before 5.25 builds the identity experts' gate/up tensors too."""
    client = make_client()
    english = _pasted(client, "longcat-flash-chat", "en")
    assert "each token picks 12 of the real and identity experts, 8 real ones" in english
    assert "transformers 5.17 to 5.24 also build a gate/up tensor" in english
    german = _pasted(client, "longcat-flash-chat", "de")
    assert "Jedes Token wählt 12 der echten und Identitäts-Experten, im Mittel 8" in german


def test_lora_on_deepseek_says_its_routers_stay_fp32(
    make_client: Callable[..., TestClient],
) -> None:
    """DeepSeek-V3's 106,430,464 router weights are held in fp32 in the bf16 base."""
    client = make_client()
    english = _pasted(client, "deepseek-v3", "en")
    assert "routers in fp32 whatever dtype it is loaded in" in english
    assert "106,430,464 parameters at 4 bytes" in english
    assert "106.430.464 Parameter mit 4 Byte" in _pasted(client, "deepseek-v3", "de")
