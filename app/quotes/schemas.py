"""Plain records of the quotes domain (no ORM object leaves the repository)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, get_args

# The quotes domain's vocabularies; the tables' CHECK constraints are built from these.
ItemKind = Literal["gpu", "system"]
ITEM_KINDS: tuple[ItemKind, ...] = get_args(ItemKind)
"""What a customer or partner can ask a quote for: a card or a system of the catalog."""
Workload = Literal["training", "serving"]
WORKLOADS: tuple[Workload, ...] = get_args(Workload)
"""Which calculator a request's sizing came from: fine-tuning (``/``, the partner API) or
serving (``/serve``)."""
LineKind = Literal[ItemKind, "other"]
LINE_KINDS: tuple[LineKind, ...] = get_args(LineKind)
"""What staff can price on a line: a catalog item, or anything else (installation, shipping)."""
QuoteStatus = Literal["new", "in_progress", "sent", "accepted", "expired"]
QUOTE_STATUSES: tuple[QuoteStatus, ...] = get_args(QuoteStatus)
"""The desk's workflow: new -> in_progress -> sent -> accepted | expired."""
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
