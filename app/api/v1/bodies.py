"""What every estimate body (training and serving) is checked for before the service sees it."""

from __future__ import annotations

from typing import Any

from app.api.v1.problems import ApiProblem
from app.catalog import inline_config
from app.errors import InvalidInput


def check_model_choice(model: str | None, config: dict[str, Any] | None) -> None:
    """One of ``model`` and ``model_config``, the config within its size (413 beyond it)."""
    if config is not None:
        try:
            inline_config.check_size(config)
        except inline_config.ConfigValueError as error:
            raise ApiProblem(413, f"model_config: {error.reason}") from error
    if (model is None) == (config is None):
        raise InvalidInput("give either model (a catalog slug) or model_config", field="model")
