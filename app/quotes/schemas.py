"""Plain records of the quotes domain (no ORM object leaves the repository)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, get_args

# The quotes domain's vocabularies, from app/vocabularies.py (below the tables, whose CHECK
# constraints are built from them); named here, where the domain's users import them.
from app.vocabularies import ITEM_KINDS as ITEM_KINDS
from app.vocabularies import LINE_KINDS as LINE_KINDS
from app.vocabularies import QUOTE_STATUSES as QUOTE_STATUSES
from app.vocabularies import WORKLOADS as WORKLOADS
from app.vocabularies import ItemKind as ItemKind
from app.vocabularies import LineKind as LineKind
from app.vocabularies import QuoteStatus as QuoteStatus
from app.vocabularies import Workload as Workload

SENT_STATUSES: tuple[QuoteStatus, ...] = ("sent", "accepted", "expired")
"""Where a sent quote may still move; its lines and prices are frozen."""
AcceptedVia = Literal["link", "desk"]
ACCEPTED_VIA: tuple[AcceptedVia, ...] = get_args(AcceptedVia)
"""How an acceptance was recorded: the customer's own click on /q/ (``link``), or staff
recording one that came by mail or phone (``desk``)."""


@dataclass(frozen=True, slots=True)
class Contact:
    """Who asks; validated by the surface that collected it, checked again by the service."""

    name: str
    company: str
    email: str
    country: str
    vat_id: str | None
    message: str | None
    quantity: int


@dataclass(frozen=True, slots=True)
class QuoteRequestRecord:
    """A stored request as pages show it."""

    token: str
    reference: str
    created_at: datetime
    locale: str
    contact: Contact
    item_kind: str
    item_slug: str
    item_name: str
    item_sku_price_eur_net: Decimal | None
    calculator_query: str
    engine_version: str
    sizing: dict[str, Any]
    workload: Workload = "training"
    item_price_indicative: bool = False
    """``item_sku_price_eur_net`` was the seed's public list price, shown "indicative"."""
