"""The process's caches, on one object that whoever serves requests holds.

Four caches make a worker fast without making it the truth (the database is): the catalog
snapshot (:class:`app.catalog.service.CatalogCache`), the estimate answers
(:class:`app.estimates.service.EstimateCache`), the checked API keys
(:class:`app.accounts.api_keys.KeyCheckCache`) and the calculator's rendered htmx results
(:class:`app.html.fragments.FragmentCache`). ``create_app`` builds one :class:`Caches` and
keeps it on ``app.state.caches`` (the partner sub-application holds the same object), each CLI
command that needs one builds its own, and every service that uses a cache takes it as an
argument. A new application (or a new test) starts with empty caches.

The rule: docs/architecture.md rule 15. How long each keeps what, and what drops it:
docs/architecture.md, "Where caches live".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from app.accounts.api_keys import KeyCheckCache
from app.catalog.hub import HubFlights
from app.catalog.service import CatalogCache
from app.estimates.service import EstimateCache
from app.html.fragments import FragmentCache

if TYPE_CHECKING:
    from starlette.requests import HTTPConnection


@dataclass(frozen=True, slots=True)
class Caches:
    """One process's (one application's) caches; each is thread-safe on its own."""

    catalog: CatalogCache = field(default_factory=CatalogCache)
    estimates: EstimateCache = field(default_factory=EstimateCache)
    key_checks: KeyCheckCache = field(default_factory=KeyCheckCache)
    hub: HubFlights = field(default_factory=HubFlights)
    """Hub look-ups under way (``app/catalog/hub.py``): nothing kept once each is done."""
    fragments: FragmentCache = field(default_factory=FragmentCache)

    def forget(self) -> None:
        """Drop everything all four hold (never needed for correctness)."""
        self.catalog.forget()
        self.estimates.forget()
        self.key_checks.forget()
        self.fragments.forget()


def of(connection: HTTPConnection) -> Caches:
    """The caches of the application serving this request (set by ``create_app``)."""
    return cast(Caches, connection.app.state.caches)
