"""Rank the cards and systems that hold a job: fewest cards, then price, then headroom.

Every figure comes from :func:`app.estimates.service.sizing` (the storefront's numbers); this
module only filters and orders them, so the API's recommendations and the page's rows agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from app.catalog.schemas import Catalog
from app.estimates import service
from app.estimates.service import EstimateCache, EstimateRequest, Sizing

OptionKind = Literal["gpu", "system"]


@dataclass(frozen=True, slots=True)
class Option:
    """One way to buy the job: ``cards`` x ``gpu`` (loose cards or a configured system)."""

    kind: OptionKind
    slug: str
    name: str
    gpu: str
    cards: int
    quantity: int
    sharding: str
    unit_price_eur_net: Decimal | None
    price_eur_net: Decimal | None
    stock_status: str
    total_bytes_per_gpu: int
    free_bytes_per_gpu: int
    max_batch_size: int


@dataclass(frozen=True, slots=True)
class Recommendations:
    sizing: Sizing
    options: tuple[Option, ...]


def rank_key(option: Option) -> tuple[int, bool, Decimal, int, str]:
    """Fewest cards, then price (price on request last), then most free memory per card."""
    price = option.price_eur_net
    return (option.cards, price is None, price or Decimal(0), -option.free_bytes_per_gpu,
            option.slug)


StorefrontKey = tuple[int, int, bool, Decimal, int]


def storefront_key(*, fits: bool, roomy: bool, price_eur_net: Decimal | None,
                   stock_status: str, free_bytes: int) -> StorefrontKey:
    """Best first as a buyer weighs a row of the storefront: fits with
    headroom, then fits tightly, then does not fit; then priced and in stock before the rest;
    then the price (price on request after every price, never as 0 EUR); then the free memory:
    among cards that fit, the smallest that holds the job (with prices equal or unknown the
    economical one, as the verdict always named it), among those that do not, the one least
    short."""
    fit_rank = 0 if roomy else 1 if fits else 2
    ready = 0 if price_eur_net is not None and stock_status == "in_stock" else 1
    return (fit_rank, ready, price_eur_net is None, price_eur_net or Decimal(0),
            free_bytes if fits else -free_bytes)


def options(catalog: Catalog, sizing: Sizing, *, gpus: int, sharding: str,
            only_gpus: tuple[str, ...] = ()) -> list[Option]:
    """Every card and system that fits, unranked. Loose cards are held against the job as
    asked (``gpus`` cards with ``sharding``); systems as :func:`service.system_job` spreads it.
    With ``only_gpus``, systems of other cards are left out as the cards are."""
    by_slug = {gpu.slug: gpu for gpu in catalog.gpus}
    found: list[Option] = []
    for fit in sizing.result.fits:
        gpu = by_slug.get(fit.gpu)
        if gpu is None or gpu.comparison_only or not fit.fits:  # not sold: never recommended
            continue
        unit = gpu.price_eur_net
        found.append(Option(
            kind="gpu", slug=gpu.slug, name=gpu.name, gpu=gpu.slug, cards=gpus,
            quantity=gpus, sharding=sharding, unit_price_eur_net=unit,
            price_eur_net=unit * gpus if unit is not None else None,
            stock_status=gpu.stock_status, total_bytes_per_gpu=fit.total_bytes,
            free_bytes_per_gpu=fit.free_bytes, max_batch_size=fit.max_batch_size,
        ))
    for row in sizing.systems:
        if not row.fits or (only_gpus and row.gpu.slug not in only_gpus):
            continue
        found.append(Option(
            kind="system", slug=row.system.slug, name=row.system.name, gpu=row.gpu.slug,
            cards=row.gpus, quantity=1, sharding=row.sharding,
            unit_price_eur_net=row.system.price_eur_net, price_eur_net=row.system.price_eur_net,
            stock_status=row.system.stock_status, total_bytes_per_gpu=row.total_bytes_per_gpu,
            free_bytes_per_gpu=row.free_bytes_per_gpu, max_batch_size=row.max_batch_size,
        ))
    return found


def recommend(catalog: Catalog, request: EstimateRequest, *,
              cache: EstimateCache) -> Recommendations:
    """The sizing (remembered in ``cache``) and its fitting options, best first. Raises
    NotFound / InvalidInput."""
    sizing = service.sizing(catalog, request, cache=cache)
    found = options(catalog, sizing, gpus=request.job.gpus, sharding=request.job.sharding,
                    only_gpus=request.gpu_slugs)
    return Recommendations(sizing=sizing, options=tuple(sorted(found, key=rank_key)))
