"""What to buy: the cheapest offer that fits a training job as set or with a setup.

A buyer should never be sent to a dearer card when a cheaper one fits with a
standard setting (``app/engine/setup.py``). The estimates service holds the job against every
card and system, searches a setup where it does not fit as set, and asks :func:`recommend`
which offer to name: the cheapest priced offer that fits (as set or with its setup), ties
broken by the training time; offers with a price on request rank after every priced one, among
themselves the smallest memory first (the least hardware that does the job).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from app.engine.estimate import Recommendation, Setup


@dataclass(frozen=True, slots=True)
class Offer:
    """One way to buy the job: loose cards or a system, held against the job."""

    kind: str
    slug: str
    price_eur_net: Decimal | None
    """The whole offer (cards x unit price, or the system's price); None: on request."""
    memory_bytes: int
    """Usable memory of the whole offer (every card)."""
    fits: bool
    setup: Setup | None
    hours: float | None
    """The training time as set (the setup's when it fits only with one)."""
    price_indicative: bool = False
    """The price is the seed's public, dated one, not yet confirmed by staff."""

    @property
    def works(self) -> bool:
        return self.fits or self.setup is not None


def rank_key(offer: Offer) -> tuple[bool, Decimal, float, int, str]:
    """Priced before unpriced; then the price; then the time (unknown last); then the memory
    (smallest first); then the slug, so the order never depends on the catalog's order."""
    price = offer.price_eur_net
    hours = offer.hours if offer.hours is not None else math.inf
    if price is None:
        return (True, Decimal(offer.memory_bytes), hours, 0, offer.slug)
    return (False, price, hours, offer.memory_bytes, offer.slug)


def money(value: Decimal | None) -> str | None:
    """Net EUR as the partner API writes money ("8499.00")."""
    return f"{value.quantize(Decimal('0.01'))}" if value is not None else None


def recommend(offers: Iterable[Offer]) -> Recommendation | None:
    """The offer to name, or None when none fits even with a setup."""
    working = sorted((offer for offer in offers if offer.works), key=rank_key)
    if not working:
        return None
    best = working[0]
    return Recommendation(kind=best.kind, slug=best.slug,
                          setup=None if best.fits else best.setup,
                          price=money(best.price_eur_net), hours=best.hours,
                          price_indicative=best.price_indicative and best.price_eur_net is not None)
