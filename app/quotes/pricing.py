"""Quote arithmetic: line amounts, the VAT rate for a customer, totals. Pure, no database.

VAT (the shop is in ``home_country``; rates come from settings, percent by country):

* customer in the home country: the home rate;
* customer in another EU country (a country with a rate) with a VAT ID of that country:
  0 %, reverse charge (Art. 196 / intra-community supply, Art. 138 VAT Directive);
* customer in another EU country without one: that country's rate (distance sale);
* customer outside the rates table (CH, GB, NO, ...): 0 %, export.

The VAT ID is only checked for its shape and country prefix (Greece's is EL), not against
VIES; staff see which rule applied before sending.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Literal, Protocol

CENT = Decimal("0.01")
HUNDRED = Decimal(100)
VatRule = Literal["domestic", "destination", "reverse_charge", "export"]
_VAT_PREFIX = {"GR": "EL"}


def money(value: Decimal) -> Decimal:
    """Round to cents, half up (as invoices do)."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def line_net(*, quantity: int, unit_price_eur_net: Decimal, discount_percent: Decimal) -> Decimal:
    """quantity x unit price, less the discount, in cents."""
    gross_line = unit_price_eur_net * quantity
    return money(gross_line * (HUNDRED - discount_percent) / HUNDRED)


@dataclass(frozen=True, slots=True)
class VatPolicy:
    """Where the shop is and the rates by country (settings ``SIZER_VAT_HOME_COUNTRY`` and
    ``SIZER_VAT_RATES``; each surface builds it from its settings)."""

    home_country: str
    rates: Mapping[str, Decimal]

    @classmethod
    def of(cls, settings: VatSettings) -> VatPolicy:
        """The policy the settings set (what the desk, the page and the API all price with)."""
        return cls(home_country=settings.vat_home_country, rates=settings.vat_rates)


class VatSettings(Protocol):
    """The two settings VAT is decided by (``app.config.Settings`` has them)."""

    @property
    def vat_home_country(self) -> str: ...
    @property
    def vat_rates(self) -> Mapping[str, Decimal]: ...


@dataclass(frozen=True, slots=True)
class VatDecision:
    rate_percent: Decimal
    rule: VatRule


def vat_for(
    *, country: str, vat_id: str | None, home_country: str, rates: Mapping[str, Decimal]
) -> VatDecision:
    """The VAT rate and the rule that chose it (module docstring)."""
    country = country.upper()
    if country == home_country:
        return VatDecision(rates.get(home_country, Decimal(0)), "domestic")
    if country not in rates:
        return VatDecision(Decimal(0), "export")
    prefix = _VAT_PREFIX.get(country, country)
    if vat_id and vat_id.upper().startswith(prefix) and len(vat_id) >= 4:
        return VatDecision(Decimal(0), "reverse_charge")
    return VatDecision(rates[country], "destination")


@dataclass(frozen=True, slots=True)
class Totals:
    net: Decimal
    vat_rate_percent: Decimal
    vat: Decimal
    gross: Decimal


def totals(line_nets: Iterable[Decimal], *, vat_rate_percent: Decimal) -> Totals:
    """Net (sum of the rounded lines), VAT on the net, gross."""
    net = money(sum(line_nets, Decimal(0)))
    vat = money(net * vat_rate_percent / HUNDRED)
    return Totals(net=net, vat_rate_percent=vat_rate_percent, vat=vat, gross=net + vat)
