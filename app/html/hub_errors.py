"""The Hugging Face Hub import's refusals (``app/catalog/hub.py``) in the reader's language,
for both HTML surfaces: the calculator's model field and the staff desk's model import."""

from __future__ import annotations

from typing import Final

from app.errors import DomainError
from app.html.forms import N_, FieldErrors

HUB_ERROR_LABELS: Final[dict[str, str]] = {
    "hub_repo_invalid": N_("This is not a Hugging Face model id: owner/name (letters, digits, "
                           "“.”, “_” and “-”, at most %(max)s each), optionally @revision."),
    "hub_not_found": N_("Hugging Face has no public model %(repo)s (or it is private). Check "
                        "the id, or choose “My own model” and paste its config.json."),
    "hub_revision_not_found": N_("%(repo)s has no revision %(revision)s on Hugging Face. Check "
                                 "the revision, or choose “My own model” and paste its "
                                 "config.json."),
    "hub_gated": N_("%(repo)s is gated on Hugging Face and we have no access to it. Choose “My "
                    "own model” and paste its config.json."),
    "hub_no_config": N_("%(repo)s has no config.json on Hugging Face (not a transformers "
                        "model?). Choose “My own model” and paste its config.json."),
    "hub_bad_config": N_("The config.json of %(repo)s cannot be read (%(reason)s). Choose “My "
                         "own model” and paste a config.json."),
    "hub_too_large": N_("The config.json of %(repo)s is larger than %(max)s KB. Choose “My "
                        "own model” and paste a config.json."),
    "hub_timeout": N_("Hugging Face did not answer within %(seconds)s s. Try again, or choose "
                      "“My own model” and paste its config.json."),
    "hub_unreachable": N_("Hugging Face cannot be reached right now. Try again, or choose “My "
                          "own model” and paste its config.json."),
    "hub_redirect": N_("Hugging Face sent us on to %(host)s, which we do not follow. Choose "
                       "“My own model” and paste its config.json."),
    "hub_rate_limited": N_("Too many models were looked up on Hugging Face from your address. "
                           "Try again in %(seconds)s s, or choose “My own model” and paste "
                           "its config.json."),
    "hub_busy": N_("Too many models are being looked up on Hugging Face at once. Try again in a "
                   "moment, or choose “My own model” and paste its config.json."),
}
"""The Hub import's refusals (``app/catalog/hub.py``), by key, in the customer's language:
each says how to go on without the Hub (paste the config.json)."""


def add(errors: FieldErrors, field: str, error: DomainError) -> None:
    """Put a Hub refusal beside the form ``field``, translated by its key (a service error
    without one keeps its reason)."""
    label = HUB_ERROR_LABELS.get(error.key)
    if label is None:
        errors.add(field, error.reason)
        return
    errors.add(field, label, **error.params)
