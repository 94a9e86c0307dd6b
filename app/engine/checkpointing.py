"""Gradient checkpointing as the published recipes set it: ``auto``, ``on`` or ``off``.

One rule for every model, whether it comes from the catalog, a pasted config.json or the
Hugging Face Hub: the parameters are counted from the config (``ModelShape.total_params``),
never read from a catalog row, so the three give the same answer for the same model.

``auto`` turns checkpointing on

1. for QLoRA: PEFT's ``prepare_model_for_kbit_training(model, use_gradient_checkpointing=True)``
   (peft/utils/other.py; the default every QLoRA recipe calls, the QLoRA paper's qlora.py, TRL's
   and Axolotl's examples) enables it;
2. from :data:`AUTO_PARAMS` parameters: the published recipes for such models all do
   (torchtune's 70B LoRA/QLoRA configs ``enable_activation_checkpointing: True``, the QLoRA
   paper's 33B/65B runs, TRL's and Axolotl's 70B examples);
3. from :data:`AUTO_SEQ` tokens a sequence, where activations outgrow the weights of most
   models (torchtune's long-context configs, Axolotl's ``gradient_checkpointing: true`` at
   ``sequence_len: 8192``).

Otherwise it stays off, as the Hugging Face Trainer's ``gradient_checkpointing=False`` default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from app.engine.errors import EngineError

CheckpointingSetting = Literal["auto", "on", "off"]
CHECKPOINTING_SETTINGS: Final = ("auto", "on", "off")

CheckpointingReason = Literal["set", "qlora", "large_model", "long_sequence", "small_job"]
"""Why checkpointing is on or off: ``set`` by the customer; the others what ``auto`` saw."""

AUTO_PARAMS: Final = 20_000_000_000
"""From this many parameters ``auto`` turns checkpointing on (recipes for 33B-70B models all
do; the smallest of them in the sources above is 33B, the largest without it 13B)."""
AUTO_SEQ: Final = 8192
"""From this sequence length ``auto`` turns checkpointing on."""


@dataclass(frozen=True, slots=True)
class Checkpointing:
    """What was asked for gradient checkpointing and what the estimate used."""

    setting: CheckpointingSetting
    enabled: bool
    reason: CheckpointingReason


def as_set(enabled: bool) -> Checkpointing:
    """Checkpointing the customer set explicitly."""
    return Checkpointing("on" if enabled else "off", enabled, "set")


def choose(setting: str, *, method: str, total_params: int, seq_len: int) -> Checkpointing:
    """Checkpointing for ``setting`` (``auto``, ``on``, ``off``) on a job of ``method`` over a
    model of ``total_params`` parameters at ``seq_len`` tokens. Raises :class:`EngineError`
    naming ``gradient_checkpointing`` for any other setting."""
    if setting == "on":
        return as_set(True)
    if setting == "off":
        return as_set(False)
    if setting != "auto":
        raise EngineError("gradient_checkpointing", "not_one_of", value=repr(setting),
                          allowed=", ".join(CHECKPOINTING_SETTINGS))
    if method == "qlora":
        return Checkpointing("auto", True, "qlora")
    if total_params >= AUTO_PARAMS:
        return Checkpointing("auto", True, "large_model")
    if seq_len >= AUTO_SEQ:
        return Checkpointing("auto", True, "long_sequence")
    return Checkpointing("auto", False, "small_job")
