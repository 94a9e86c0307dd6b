"""Quote arithmetic and the VAT rule; the VAT settings (plain functions, no database)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from app.config import DEFAULT_VAT_RATES, ConfigurationError, load_settings
from app.quotes import pricing

RATES = DEFAULT_VAT_RATES


def test_line_and_totals_round_half_up_to_cents() -> None:
    net = pricing.line_net(quantity=3, unit_price_eur_net=Decimal("0.10"),
                           discount_percent=Decimal("12.5"))
    assert net == Decimal("0.26")  # 0.2625
    totals = pricing.totals([Decimal("100.00"), net], vat_rate_percent=Decimal("19"))
    assert (totals.net, totals.vat, totals.gross) == (
        Decimal("100.26"), Decimal("19.05"), Decimal("119.31"))


@pytest.mark.parametrize(("country", "vat_id", "rate", "rule"), [
    ("DE", None, "19", "domestic"),
    ("DE", "DE123456789", "19", "domestic"),
    ("AT", "ATU12345678", "0", "reverse_charge"),
    ("GR", "EL123456789", "0", "reverse_charge"),
    ("AT", None, "20", "destination"),
    ("AT", "DE123456789", "20", "destination"),  # a VAT ID of another country
    ("CH", None, "0", "export"),
    ("NO", "NO123456789", "0", "export"),
])
def test_vat_rule(country: str, vat_id: str | None, rate: str, rule: str) -> None:
    decision = pricing.vat_for(country=country, vat_id=vat_id, home_country="DE", rates=RATES)
    assert decision == pricing.VatDecision(Decimal(rate), rule)  # type: ignore[arg-type]


def test_vat_settings() -> None:
    assert load_settings().vat_rates["FI"] == Decimal("25.5")
    assert len(load_settings().vat_rates) == 27
    assert load_settings(vat_rates="de=7, AT=10").vat_rates == {
        "DE": Decimal("7"), "AT": Decimal("10")}
    assert load_settings(vat_rates='{"FR": 5.5}').vat_rates == {"FR": Decimal("5.5")}
    for bad, message in (("DE", "COUNTRY=RATE"), ("DE=x", "not a number"),
                         ("DE=120", "from 0 to 100"), ("DEU=19", "two-letter")):
        with pytest.raises(ConfigurationError, match=message) as info:
            load_settings(vat_rates=bad)
        assert info.value.setting == "SIZER_VAT_RATES"
