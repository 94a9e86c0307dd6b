"""The catalog edit forms: which fields each kind has, their labels, and parsing them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from app.catalog.schemas import STOCK_STATUSES, SYSTEM_KINDS
from app.html import forms
from app.html.forms import N_, FieldErrors
from app.staff import forms as staff_forms

FieldKind = Literal["text", "longtext", "int", "float", "decimal", "choice", "bool", "url"]


@dataclass(frozen=True, slots=True)
class FormField:
    name: str
    label: str
    kind: FieldKind = "text"
    required: bool = False
    choices: tuple[str, ...] = ()
    hint: str = ""


PRICE = FormField("price_eur_net", N_("Price (EUR net, empty: on request)"), "decimal")
CONFIRM = FormField("price_confirm", N_("Confirm this price (until then customers see it as "
                                        "indicative)"), "bool")
"""Shown only while the price is the seed's indicative one; changing the price confirms too."""
STOCK = FormField("stock_status", N_("Stock"), "choice", True, STOCK_STATUSES)
URL = FormField("product_url", N_("Product page"), "url")

GPU: tuple[FormField, ...] = (
    FormField("name", N_("Name"), required=True),
    PRICE, CONFIRM, STOCK, URL,
    FormField("architecture", N_("Architecture"), required=True),
    FormField("compute_capability", N_("Compute capability"), required=True),
    FormField("memory_nominal_gb", N_("Memory (GB, nominal)"), "int", True),
    FormField("usable_bytes", N_("Usable memory (bytes)"), "int", True),
    FormField("usable_basis", N_("Basis of the usable figure"), "longtext", True),
    FormField("memory_type", N_("Memory type"), required=True),
    FormField("memory_bandwidth_gbps", N_("Memory bandwidth (GB/s)"), "float", True),
    FormField("bf16_dense_tflops", N_("BF16 dense TFLOPS"), "float"),
    FormField("fp8_dense_tflops", N_("FP8 dense TFLOPS"), "float"),
    FormField("fp4_dense_tflops", N_("FP4 dense TFLOPS"), "float"),
    FormField("interconnect", N_("Interconnect"), required=True),
    FormField("interconnect_bandwidth_gbps", N_("Interconnect bandwidth (GB/s)"), "float"),
    FormField("max_power_w", N_("Max. power (W)"), "int"),
    FormField("form_factor", N_("Form factor"), required=True),
    FormField("mig_instances", N_("MIG instances"), "int"),
)
SYSTEM: tuple[FormField, ...] = (
    FormField("name", N_("Name"), required=True),
    PRICE, CONFIRM, STOCK, URL,
    FormField("kind", N_("Kind"), "choice", True, SYSTEM_KINDS),
    FormField("gpu_slug", N_("GPU"), "choice", True),
    FormField("gpu_count", N_("Number of GPUs"), "int", True),
    FormField("gpu_interconnect", N_("GPU interconnect"), required=True),
    FormField("host_ram_gb", N_("Host RAM (GB)"), "int"),
)
MODEL: tuple[FormField, ...] = (
    FormField("hf_id", N_("Hugging Face ID"), required=True),
    FormField("family", N_("Family"), required=True),
    FormField("license", N_("License"), required=True),
    FormField("gated", N_("Gated (licence must be accepted)"), "bool"),
)
SLUG = FormField("slug", N_("Slug (in links; cannot change later)"), required=True)


def parse(data: Mapping[str, str], fields: Sequence[FormField], errors: FieldErrors,
          *, choices: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:
    """Typed values by field name; problems go to ``errors`` beside their field."""
    values: dict[str, Any] = {}
    for field in fields:
        name = field.name
        raw = data.get(name, "").strip()
        if not forms.no_control(data, name, errors, multiline=field.kind == "longtext"):
            values[name] = None
        elif field.kind == "bool":
            values[name] = forms.flag(data, name)
        elif field.kind == "choice":
            options = (choices or {}).get(name, field.choices)
            values[name] = forms.choice(data, name, errors, choices=options,
                                        default=options[0] if options else "")
        elif field.kind in ("text", "longtext", "url"):
            longtext = field.kind == "longtext"
            values[name] = forms.text(data, name, errors, required=field.required,
                                      max_length=5000 if longtext else 200,
                                      multiline=longtext)
            if field.kind == "url" and not values[name]:
                values[name] = None
        elif not raw:
            if field.required:
                errors.add(name, N_("This field is required."))
            values[name] = None
        elif field.kind == "decimal":
            values[name] = staff_forms.decimal(data, name, errors)
        elif field.kind == "int":
            values[name] = forms.integer(data, name, errors, default=0, minimum=0,
                                         maximum=10**15)
        else:
            values[name] = _float(raw, name, errors)
    return values


def _float(raw: str, name: str, errors: FieldErrors) -> float | None:
    try:
        value = float(raw.replace(",", "."))
    except ValueError:
        errors.add(name, N_("Enter a number, e.g. 1234.50."))
        return None
    if value != value or value in (float("inf"), float("-inf")):
        errors.add(name, N_("Enter a number, e.g. 1234.50."))
        return None
    if value < 0:
        errors.add(name, N_("Must not be negative."))
        return None
    return value
