"""Plain records of the quotes domain (no ORM object leaves the repository)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

ItemKind = Literal["gpu", "system"]


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
