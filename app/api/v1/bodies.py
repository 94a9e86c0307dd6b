"""What every estimate body (training and serving) is checked for before the service sees it."""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi import Request
from sqlalchemy.orm import Session

from app import caches
from app.api.v1 import schemas
from app.api.v1.problems import ApiProblem
from app.catalog import hub, inline_config
from app.catalog.schemas import Catalog
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


_Body = TypeVar("_Body", schemas.EstimateInput, schemas.ServingInput)


def resolved(request: Request, session: Session, catalog: Catalog, body: _Body) -> _Body:
    """The body (a fine-tuning or a serving job) with a Hugging Face repository id in
    ``model`` replaced by what it names (``app/catalog/hub.py``): the catalog's model of that
    id, or the repository's config.json as ``model_config``. Refusals name the field ``model``
    (422, 404, or 503 while the Hub cannot be reached)."""
    if body.model is None or not hub.is_repo_id(body.model):
        return body
    access = hub.HubAccess.of(request.app.state.settings, caches.of(request).hub)
    choice = hub.choose_model(session, catalog, body.model, access=access)
    config = dict(choice.config) if choice.config is not None else None
    return body.model_copy(update={"model": choice.slug, "inline_config": config})
