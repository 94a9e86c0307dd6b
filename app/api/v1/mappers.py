"""Internal records -> the public v1 models (presentation only; no arithmetic on bytes)."""

from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal

from app.api.v1 import schemas
from app.catalog.schemas import GpuRecord, ModelRecord, SystemRecord
from app.estimates.recommendations import Recommendations
from app.quotes.schemas import ACCEPTED_VIA, AcceptedVia
from app.quotes.view import Quote


def money(value: Decimal | None) -> str | None:
    return f"{value.quantize(Decimal('0.01'))}" if value is not None else None


def gpu_out(gpu: GpuRecord) -> schemas.Gpu:
    return schemas.Gpu(
        slug=gpu.slug, name=gpu.name, architecture=gpu.architecture,
        compute_capability=gpu.compute_capability, memory_nominal_gb=gpu.memory_nominal_gb,
        usable_bytes=gpu.usable_bytes, usable_basis=gpu.usable_basis,
        memory_type=gpu.memory_type, memory_bandwidth_gbps=gpu.memory_bandwidth_gbps,
        bf16_dense_tflops=gpu.bf16_dense_tflops, fp8_dense_tflops=gpu.fp8_dense_tflops,
        fp4_dense_tflops=gpu.fp4_dense_tflops, interconnect=gpu.interconnect,
        interconnect_bandwidth_gbps=gpu.interconnect_bandwidth_gbps,
        max_power_w=gpu.max_power_w, form_factor=gpu.form_factor,
        mig_instances=gpu.mig_instances, price_eur_net=money(gpu.price_eur_net),
        price_indicative=gpu.price_indicative, price_source=gpu.price_source,
        price_date=gpu.price_date, stock_status=gpu.stock_status,
        product_url=gpu.product_url, comparison_only=gpu.comparison_only,
    )


def system_out(system: SystemRecord) -> schemas.System:
    return schemas.System(
        slug=system.slug, name=system.name, kind=system.kind,
        gpu=system.gpu_slug, gpu_count=system.gpu_count,
        gpu_interconnect=system.gpu_interconnect, host_ram_gb=system.host_ram_gb,
        price_eur_net=money(system.price_eur_net),
        price_indicative=system.price_indicative, price_source=system.price_source,
        price_date=system.price_date, stock_status=system.stock_status,
        product_url=system.product_url,
    )


def model_out(model: ModelRecord) -> schemas.ModelSummary:
    return schemas.ModelSummary(
        slug=model.slug, hf_id=model.hf_id, family=model.family,
        params=schemas.ModelParams(
            total=model.params_total, active=model.params_active, linear=model.params_linear,
            embedding=model.params_embedding, lm_head=model.params_lm_head,
            norm=model.params_norm, other=model.params_other,
        ),
        max_positions=model.max_positions, license=model.license, gated=model.gated,
    )


def recommendations_out(found: Recommendations,
                        quote_urls: dict[str, str | None]) -> schemas.Recommendations:
    result = found.sizing.result
    return schemas.Recommendations(
        engine_version=result.engine_version, model_type=result.model_type,
        fidelity=result.fidelity, total_bytes_per_gpu=result.per_gpu_bytes.total,
        recommendations=[
            schemas.Recommendation(
                rank=rank, kind=o.kind, slug=o.slug, name=o.name, gpu=o.gpu, cards=o.cards,
                quantity=o.quantity, sharding=o.sharding,
                unit_price_eur_net=money(o.unit_price_eur_net),
                price_eur_net=money(o.price_eur_net),
                price_indicative=o.price_indicative and o.price_eur_net is not None,
                stock_status=o.stock_status,
                total_bytes_per_gpu=o.total_bytes_per_gpu,
                free_bytes_per_gpu=o.free_bytes_per_gpu, max_batch_size=o.max_batch_size,
                setup=schemas.Setup.model_validate(asdict(o.setup)) if o.setup else None,
                hours=o.hours, quote_url=quote_urls.get(f"{o.kind}:{o.slug}"),
            )
            for rank, o in enumerate(found.options, start=1)
        ],
    )


def accepted_via(stored: str | None) -> AcceptedVia | None:
    """The stored ``accepted_via`` as the API's enum; only the desk's two writers set the column
    (``quotes.desk.ACCEPTED_VIA_LINK`` and ``ACCEPTED_VIA_DESK``)."""
    for via in ACCEPTED_VIA:
        if stored == via:
            return via
    return None


def quote_request_out(view: Quote) -> schemas.QuoteRequestOut:
    """A request as the API shows it: its lines and totals only once the quote is sent (before
    that they are staff's draft)."""
    lines = totals = None
    if view.is_sent:
        lines = [
            schemas.QuoteLineOut(
                position=line.position, item_kind=line.item_kind,
                item_slug=line.item_slug, description=line.description,
                quantity=line.quantity, unit_price_eur_net=money(line.unit_price_eur_net) or "",
                discount_percent=money(line.discount_percent) or "",
                net_eur=money(line.net_eur) or "",
            )
            for line in view.lines
        ]
        t = view.totals
        totals = schemas.QuoteTotals(
            net_eur=money(t.net) or "", vat_rate_percent=money(t.vat_rate_percent),
            vat_eur=money(t.vat), gross_eur=money(t.gross),
        )
    request = view.request
    return schemas.QuoteRequestOut(
        id=request.reference, status=view.status, workload=request.workload,
        created_at=request.created_at, updated_at=view.updated_at,
        partner_reference=view.partner_reference,
        item_kind=request.item_kind, item_slug=request.item_slug, item_name=request.item_name,
        quantity=request.contact.quantity, company=request.contact.company,
        country=request.contact.country, engine_version=request.engine_version,
        valid_until=view.valid_until, sent_at=view.sent_at, accepted_at=view.accepted_at,
        accepted_via=accepted_via(view.accepted_via), lines=lines, totals=totals,
    )
