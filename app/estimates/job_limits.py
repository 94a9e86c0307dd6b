"""How large a job any surface accepts: one set of bounds for the page, the API and the CLI.

The engine has wider limits of its own (it only needs positive integers); these are the shop's:
a micro-batch or LoRA rank beyond 4096 or more than 1024 GPUs is no job anyone sizes a card
for, and refusing it keeps a typo from becoming a minute of arithmetic. The page and the API
show them beside the field (form bounds, OpenAPI ``maximum``); :func:`check` holds every
request to them in the estimates service, so the CLI and any future surface cannot drift.
"""

from __future__ import annotations

from typing import Final

from app.engine import Job
from app.errors import InvalidInput

MAX_BATCH_SIZE: Final = 4096
MAX_SEQ_LEN: Final = 1 << 20
MAX_GPUS: Final = 1024
MAX_LORA_RANK: Final = 4096
MAX_GRADIENT_ACCUMULATION: Final = 65536
MAX_DATASET_TOKENS: Final = 10**13
"""Tokens per epoch: 10 trillion, beyond any fine-tuning data set (Llama 3's whole pre-training
was 15 x 10^12)."""
MAX_EPOCHS: Final = 1000


def check(job: Job) -> None:
    """Raise :class:`InvalidInput` naming the first field beyond the shop's bounds."""
    bounds = (
        ("batch_size", job.batch_size, MAX_BATCH_SIZE),
        ("seq_len", job.seq_len, MAX_SEQ_LEN),
        ("gpus", job.gpus, MAX_GPUS),
        ("lora_rank", job.lora_rank, MAX_LORA_RANK),
        ("gradient_accumulation", job.gradient_accumulation, MAX_GRADIENT_ACCUMULATION),
        ("dataset_tokens", job.dataset_tokens, MAX_DATASET_TOKENS),
        ("epochs", job.epochs, MAX_EPOCHS),
    )
    for name, value, maximum in bounds:
        if isinstance(value, int) and not isinstance(value, bool) and value > maximum:
            raise InvalidInput(f"at most {maximum}", field=name)
