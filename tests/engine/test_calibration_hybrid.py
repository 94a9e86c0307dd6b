"""Hybrid models' activations against real training steps (issue 16): Gated DeltaNet (Qwen3-Next
with experts, Qwen3.5 dense) and Mamba-2 (Nemotron-H; Granite 4.0 H with experts and 256-token
chunks, Falcon-H1 with and without the mixer's gated norm, issue 29) layers beside attention,
full fine-tuning and LoRA, with and without checkpointing, each case within 10 % of the step's
measured peak (tools/calibrate/results/cpu-hybrid.json; no torch needed here)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from app.engine import parse_config
from app.engine.activations import NORM_STATS_BYTES, full_layer_bytes_per_token
from app.engine.activations_hybrid import mixer_bytes_per_token
from app.engine.shapes import MixerLayers
from tools.calibrate import accuracy

CONFIGS = Path(accuracy.__file__).resolve().parent / "configs"
HYBRID_PATH = accuracy.GRID_PATH.with_name("cpu-hybrid.json")
GRID = accuracy.load_grid(HYBRID_PATH)
ROWS = {row.case: row for row in accuracy.compare(GRID)}


def test_every_hybrid_kind_and_method_was_measured() -> None:
    assert not GRID["failures"]
    kinds = {record["model_type"] for record in GRID["cases"]}
    assert kinds >= {"qwen3_next", "qwen3_5_text", "nemotron_h", "granitemoehybrid", "falcon_h1"}
    assert {record["method"] for record in GRID["cases"]} == {"full", "lora"}
    assert {record["checkpointing"] for record in GRID["cases"]} == {True, False}


@pytest.mark.parametrize("case", sorted(ROWS))
def test_the_engine_is_within_ten_percent_of_the_measured_step(case: str) -> None:
    row = ROWS[case]
    error = (row.estimated_bytes - row.measured_bytes) / row.measured_bytes
    assert abs(error) <= 0.10, f"{case}: {100 * error:+.1f} %"


def _mamba(chunk_size: int = 128, gated_norm: bool = True) -> MixerLayers:
    """The Mamba-2 mixer of tools/calibrate/configs/tiny-granitehybrid.json."""
    return MixerLayers("mamba2", 3, attention_layers=1, mlp_layers=4, key_dim=64,
                       expanded_key_dim=256, value_dim=512, heads=8, state_per_head=2048,
                       conv_dim=640, chunk_size=chunk_size, gated_norm=gated_norm)


def test_longer_chunks_keep_a_wider_matrix_per_head_and_fewer_chunk_states() -> None:
    """transformers' Mamba-2 torch path keeps a chunk x chunk matrix per head and chunk and one
    state per chunk: 256-token chunks (Granite 4.0 H, Falcon-H1 by default) keep 8,078 bytes
    more a token and layer than 128-token ones on this mixer; whole steps of the tiny Granite
    without experts measured 7,980 (611,458,550 against 562,421,318 bytes, 2,048 tokens,
    three Mamba layers)."""
    more = (mixer_bytes_per_token(_mamba(chunk_size=256), trained=True)
            - mixer_bytes_per_token(_mamba(), trained=True))
    assert more == 8_078
    assert abs(more - (611_458_550 - 562_421_318) / (2_048 * 3)) / more < 0.02


def test_a_mixer_without_its_gated_norm_keeps_less() -> None:
    """Falcon-H1 with mamba_rms_norm false: 10 V less on a frozen base, 8 V less trained."""
    with_norm, without = _mamba(), _mamba(gated_norm=False)
    assert (mixer_bytes_per_token(with_norm, trained=False)
            - mixer_bytes_per_token(without, trained=False)) == 10 * 512
    assert (mixer_bytes_per_token(with_norm, trained=True)
            - mixer_bytes_per_token(without, trained=True)) == 8 * 512


@pytest.mark.parametrize("slug", ["tiny-granitehybrid", "tiny-falconh1"])
def test_two_norm_hybrids_keep_both_norms_of_every_layer(slug: str) -> None:
    """Granite 4.0 H and Falcon-H1 layers hold two RMSNorms (input and post-attention or
    pre-feed-forward), not Nemotron-H's one a block: the layer average counts both."""
    config = json.loads((CONFIGS / f"{slug}.json").read_text())
    shape = parse_config(config)
    assert shape.norms_per_layer == 2
    one_norm = replace(shape, norms_per_layer=1)
    per_norm = 13 * shape.hidden_size + NORM_STATS_BYTES // 2  # amp: the fp32 residual's norm
    assert (full_layer_bytes_per_token(shape, "amp")
            - full_layer_bytes_per_token(one_norm, "amp")) == per_norm
