"""The cards and systems that hold a training job, as set or with a setup, ranked as the
estimate's ``recommendation`` ranks them (:mod:`app.estimates.advice`): the cheapest priced
offer first, ties by the training time; offers on request after every priced one, the
smallest memory first. The first is the estimate's recommendation.

Every figure comes from :func:`app.estimates.service.sizing` (the storefront's numbers); this
module only filters and orders them, so the API's recommendations and the page's rows agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from app.catalog.schemas import Catalog
from app.engine.estimate import Setup
from app.engine.speed import Training
from app.estimates import advice, service
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
    """Per GPU as the offer runs the job: with its setup where it needs one."""
    free_bytes_per_gpu: int
    max_batch_size: int
    setup: Setup | None = None
    """The standard settings the job needs on this offer; None: it fits as set."""
    hours: float | None = None
    """The training time for the customer's data on it (with the setup), where known."""
    memory_bytes: int = 0
    """Usable memory of the whole offer (every card), the tie-break among unpriced offers."""
    price_indicative: bool = False
    """The price is the seed's public, dated one, not yet confirmed by staff."""

    def offer(self) -> advice.Offer:
        """This option as :mod:`app.estimates.advice` ranks it."""
        return advice.Offer(kind=self.kind, slug=self.slug, price_eur_net=self.price_eur_net,
                            memory_bytes=self.memory_bytes, fits=self.setup is None,
                            setup=self.setup, hours=self.hours,
                            price_indicative=self.price_indicative)


@dataclass(frozen=True, slots=True)
class Recommendations:
    sizing: Sizing
    options: tuple[Option, ...]


def rank_key(option: Option) -> tuple[bool, Decimal, float, int, str]:
    """As the estimate's recommendation ranks (:func:`app.estimates.advice.rank_key`)."""
    return advice.rank_key(option.offer())


def _hours(training: Training | None) -> float | None:
    return training.hours if training is not None else None


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
    """Every card and system that fits as set or with a setup, unranked. Loose cards are held
    against the job as asked (``gpus`` cards with ``sharding``); systems as
    :func:`service.system_job` spreads it. With ``only_gpus``, systems of other cards are left
    out as the cards are."""
    by_slug = {gpu.slug: gpu for gpu in catalog.gpus}
    found: list[Option] = []
    for fit in sizing.result.fits:
        gpu = by_slug.get(fit.gpu)
        # not sold: never recommended; nor an offer that holds the job in no standard setup
        if gpu is None or gpu.comparison_only or not (fit.fits or fit.setup is not None):
            continue
        setup = None if fit.fits else fit.setup
        total = fit.total_bytes if setup is None else setup.total_bytes
        unit = gpu.price_eur_net
        found.append(Option(
            kind="gpu", slug=gpu.slug, name=gpu.name, gpu=gpu.slug, cards=gpus,
            quantity=gpus, sharding=sharding, unit_price_eur_net=unit,
            price_eur_net=unit * gpus if unit is not None else None,
            stock_status=gpu.stock_status, total_bytes_per_gpu=total,
            free_bytes_per_gpu=fit.usable_bytes - total, max_batch_size=fit.max_batch_size,
            setup=setup, hours=_hours(fit.training if setup is None else setup.training),
            memory_bytes=fit.usable_bytes * gpus,
            price_indicative=gpu.price_indicative and unit is not None,
        ))
    for row in sizing.systems:
        if not (row.fits or row.setup is not None) or (only_gpus and row.gpu.slug not in only_gpus):
            continue
        row_setup = None if row.fits else row.setup
        total = row.total_bytes_per_gpu if row_setup is None else row_setup.total_bytes
        found.append(Option(
            kind="system", slug=row.system.slug, name=row.system.name, gpu=row.gpu.slug,
            cards=row.gpus, quantity=1, sharding=row.sharding,
            unit_price_eur_net=row.system.price_eur_net, price_eur_net=row.system.price_eur_net,
            stock_status=row.system.stock_status, total_bytes_per_gpu=total,
            free_bytes_per_gpu=row.gpu.usable_bytes - total, max_batch_size=row.max_batch_size,
            setup=row_setup,
            hours=_hours(row.training if row_setup is None else row_setup.training),
            memory_bytes=row.gpu.usable_bytes * row.gpus,
            price_indicative=row.system.price_indicative and row.system.price_eur_net is not None,
        ))
    return found


def recommend(catalog: Catalog, request: EstimateRequest, *,
              cache: EstimateCache) -> Recommendations:
    """The sizing (remembered in ``cache``) and the options that fit it, as set or with a
    setup, best first: the first is the estimate's ``recommendation``. Raises NotFound /
    InvalidInput."""
    sizing = service.sizing(catalog, request, cache=cache)
    found = options(catalog, sizing, gpus=request.job.gpus, sharding=request.job.sharding,
                    only_gpus=request.gpu_slugs)
    return Recommendations(sizing=sizing, options=tuple(sorted(found, key=rank_key)))
