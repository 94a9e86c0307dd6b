"""The domains' vocabularies: tuples of words and their ``Literal`` types, standard library only.

They sit below every package because two layers need them: the domains (``app/catalog/``,
``app/quotes/``, ``app/accounts/``), which name them to their users, and ``app/db/tables.py``,
whose CHECK constraints are built from them. Here, the database layer imports no domain and no
package imports one that imports it back (the import contracts in ``pyproject.toml``).
Surfaces import them from their domain (docs/architecture.md rule 4).
"""

from __future__ import annotations

from typing import Literal, get_args

# The catalog's.
StockStatus = Literal["in_stock", "on_order", "on_request"]
STOCK_STATUSES: tuple[StockStatus, ...] = get_args(StockStatus)
"""What the shop says about availability (staff set it; the seed only on insert)."""
SystemKind = Literal["workstation", "server", "appliance"]
SYSTEM_KINDS: tuple[SystemKind, ...] = get_args(SystemKind)
"""The kinds of system the shop configures around its cards."""

# The quotes domain's.
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

# The staff accounts'.
STAFF_ROLES: tuple[str, ...] = ("sales", "admin")
"""``sales`` works the quote desk and the catalog; ``admin`` also reaches the admin pages and
the partner API keys (``app/staff/routes.py``)."""
