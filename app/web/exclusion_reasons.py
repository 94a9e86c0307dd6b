"""Why a published figure is not counted, in the reader's language (issue 18, point 8).

"How we calculate" lists the published GPU figures the comparison leaves out, each with the
reason written beside it in ``tools/calibrate/external/figures.json``. That reason is English
data; it is marked here as a message so that extraction puts it in the catalogs and the German
page shows its translation (``_(reason)`` in the template). A figure excluded with a new reason
needs the reason added here and translated: tests/web/test_how_we_calculate.py fails until it
is.
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
