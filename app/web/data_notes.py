"""Notes written beside published measurements, in the reader's language.

"How we calculate" shows two kinds of English notes kept with the data they explain: why a
published training figure is not counted (``excluded`` in
``tools/calibrate/external/figures.json``) and why a vLLM start-up log's weights are not held
to our figure (``weights_check_skipped`` in ``app/estimates/measurements/vllm_logs.json``).
Each is marked here as a message, so that extraction puts it in the catalogs and the German
page shows its translation (``translated()`` in the template). Data with a new note needs the
note added here and translated: tests/web/test_how_we_calculate.py fails until it is.
"""

from __future__ import annotations

from typing import Final

from app.html.forms import N_

EXCLUSION_REASONS: Final[tuple[str, ...]] = (
    N_("below the model-state minimum: 1.236e9 params x 8 B (pure bf16 weights + gradients + "
       "two bf16 AdamW moments) = 9.89 GB > 8.70 GB reported"),
    N_("below the model-state minimum: 3.213e9 params x 8 B (pure bf16 weights + gradients + "
       "two bf16 AdamW moments) = 25.7 GB > 16.51 GB reported (and > the A10G's 24 GB)"),
    N_("below the model-state minimum: 3.821e9 params x 8 B (pure bf16 weights + gradients + "
       "two bf16 AdamW moments) = 30.6 GB > 17.01 GB reported (and > the A10G's 24 GB)"),
    N_("identical to the 1xA10G row to 0.01 GB, as every 4xA10G row of the table is, although "
       "the 4-GPU run uses FSDP with activation checkpointing; the figure looks copied from "
       "the 1-GPU run"),
    N_("same stated settings as the 1x 4090 row (18.9 GiB) but twice the memory: the A6000 run "
       "used settings the README does not state"),
    N_("same stated settings as the 1x 4090 row (16.2 GiB) but nearly twice the memory: the "
       "A6000 run used settings the README does not state"),
)
"""Every reason figures.json gives for leaving a figure out, as English msgids."""

SERVING_WEIGHT_NOTES: Final[tuple[str, ...]] = (
    N_("vLLM 0.19 lays gpt-oss's MXFP4 experts out for its Hopper kernels, padded to the "
       "kernels' tile multiples (hidden 2880); the engine counts the checkpoint's 4.25 bits "
       "only (-8.4 %). The pool and concurrency are held."),
    N_("vLLM 0.19's Gemma 3 loads 0.51 GiB more than the checkpoint's 4.30 B parameters "
       "(0.55 GiB at 12B, 0.32 GiB at 27B: larger with head_dim 256, so probably its two rotary "
       "caches kept in fp32); not modelled, and 0.51 GiB is 5.9 % of this small model. The "
       "pool and concurrency are held."),
)
"""Every note vllm_logs.json gives for a log whose weights are not compared, as msgids."""
