"""The recommendation is never dearer than the cheapest offer that fits (issue 27, point 3).

A brute force over the whole setting space the setup search may use (gradient checkpointing,
every micro-batch that keeps the effective batch, 8-bit AdamW, optimizer offload, QLoRA where
the method may change), against every card and system of the seed catalog, for 60 jobs over the
seed models: no offer cheaper than the recommended one fits the job with any of those settings,
and the recommended one fits with the setup it names. The prices are test prices (the seed's are
the shop's; these spread the cards and systems so that price decides)."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from app.catalog.schemas import Catalog
from app.catalog.seed import load_seed_catalog
from app.engine import Job, estimate, shape_of
from app.engine.job import GpuSpec
from app.estimates import service
from app.estimates.service import EstimateCache, EstimateRequest

MODELS = ("qwen3-0.6b", "llama-3.2-1b", "qwen3-4b", "llama-3.1-8b", "qwen3-8b", "gemma-2-9b",
          "qwen3-14b", "mistral-nemo-12b", "qwen3-30b-a3b", "qwen3-32b", "gemma-3-27b-it",
          "llama-3.1-70b", "qwen2.5-72b", "mixtral-8x7b", "gpt-oss-20b")
JOBS = (  # method, batch, seq, allow the method to change
    ("lora", 4, 2048, False), ("lora", 8, 1024, True), ("qlora", 2, 4096, False),
    ("full", 2, 1024, False),
)


def priced(catalog: Catalog) -> Catalog:
    """Test prices: about 100 EUR per usable GB per card, systems a little under their cards;
    a card and a system of equal memory then differ, and price decides between them."""
    gpus = tuple(dataclasses.replace(g, price_eur_net=Decimal(g.usable_bytes // 10**7))
                 for g in catalog.gpus)
    units = {g.slug: g.price_eur_net for g in gpus}
    systems = tuple(dataclasses.replace(
        s, price_eur_net=(units[s.gpu_slug] or Decimal(0)) * s.gpu_count * Decimal("0.97"))
        for s in catalog.systems)
    return dataclasses.replace(catalog, gpus=gpus, systems=systems)


CATALOG = priced(load_seed_catalog())


def variants(job: Job, allow_method_change: bool) -> Iterator[Job]:
    """Every job the setup search may reach from ``job`` (the customer's defaults left open)."""
    effective = job.batch_size * job.gradient_accumulation
    batches = [b for b in range(1, job.batch_size + 1) if effective % b == 0]
    methods = [job.method] + (["qlora"] if allow_method_change and job.method == "lora" else [])
    for ckpt, optimizer, offload, method, batch in itertools.product(
            sorted({job.gradient_checkpointing, True}), ("adamw", "adamw_8bit"),
            ("none", "optimizer"), methods, batches):
        changes: dict[str, Any] = {
            "gradient_checkpointing": ckpt, "optimizer": optimizer, "offload": offload,
            "method": method, "batch_size": batch, "gradient_accumulation": effective // batch}
        yield dataclasses.replace(job, **changes)


def works(shape: object, job: Job, spec: GpuSpec, allow: bool) -> bool:
    return any(estimate(shape, variant, [spec], with_levers=False).fits[0].fits  # type: ignore[arg-type]
               for variant in variants(job, allow))


CASES = [(model, *job) for model in MODELS for job in JOBS]


@pytest.mark.parametrize(("model", "method", "batch", "seq", "allow"), CASES,
                         ids=[f"{c[0]}-{c[1]}-b{c[2]}-s{c[3]}{'-any' if c[4] else ''}"
                              for c in CASES])
def test_no_cheaper_offer_fits_with_any_setting(model: str, method: str, batch: int, seq: int,
                                                allow: bool) -> None:
    request = EstimateRequest(job=Job(method=method, batch_size=batch, seq_len=seq),  # type: ignore[arg-type]
                              model_slug=model, checkpointing="auto",
                              allow_method_change=allow)
    sizing = service.sizing(CATALOG, request, cache=EstimateCache())
    rec = sizing.result.recommendation
    config = next(m.config for m in CATALOG.models if m.slug == model)
    shape = shape_of(config)
    job, _ = service.resolved_job(shape, request)
    offers: list[tuple[Decimal, str, str, GpuSpec, Job]] = []
    for gpu in CATALOG.gpus:
        if gpu.price_eur_net is not None and not gpu.comparison_only:  # not sold (issue 26)
            offers.append((gpu.price_eur_net, "gpu", gpu.slug, service.gpu_spec(gpu), job))
    by_slug = {gpu.slug: gpu for gpu in CATALOG.gpus}
    for system in CATALOG.systems:
        gpu = by_slug[system.gpu_slug]
        assert system.price_eur_net is not None
        offers.append((system.price_eur_net, "system", system.slug,
                       service.system_link(service.gpu_spec(gpu), system),
                       service.system_job(job, system.gpu_count)))
    price = Decimal(rec.price) if rec is not None and rec.price is not None else None
    cheaper = [o for o in offers if price is None or o[0] < price]
    for offer_price, kind, slug, spec, offer_job in cheaper:
        assert not works(shape, offer_job, spec, allow), (
            f"{kind} {slug} at {offer_price} EUR fits, recommended {rec}")
    if rec is None:
        return
    offer = next(o for o in offers if (o[1], o[2]) == (rec.kind, rec.slug))
    changed = dataclasses.replace(offer[4], **(rec.setup.changes if rec.setup else {}))  # type: ignore[arg-type]
    assert estimate(shape, changed, [offer[3]], with_levers=False).fits[0].fits
    assert price == offer[0]


def test_at_least_fifty_jobs_are_held_to_the_brute_force() -> None:
    assert len(CASES) >= 50
    assert json.dumps([c[0] for c in CASES])  # every case names a seed model


@pytest.mark.parametrize(("model", "method", "batch", "seq", "allow"), CASES[::3],
                         ids=[f"{c[0]}-{c[1]}-b{c[2]}-s{c[3]}{'-any' if c[4] else ''}"
                              for c in CASES[::3]])
def test_the_recommendations_list_leads_with_the_estimate_s_recommendation(
        model: str, method: str, batch: int, seq: int, allow: bool) -> None:
    """POST /recommendations (:mod:`app.estimates.recommendations`) ranks as the estimate's
    ``recommendation`` does (issue 27): its first offer is the recommendation, with the same
    setup and price, and it lists every sold card and system that fits with a setup too."""
    from app.estimates import recommendations

    request = EstimateRequest(job=Job(method=method, batch_size=batch, seq_len=seq),  # type: ignore[arg-type]
                              model_slug=model, checkpointing="auto",
                              allow_method_change=allow)
    found = recommendations.recommend(CATALOG, request, cache=EstimateCache())
    rec = found.sizing.result.recommendation
    if rec is None:
        assert found.options == ()
        return
    first = found.options[0]
    assert (first.kind, first.slug, first.setup) == (rec.kind, rec.slug, rec.setup)
    assert first.price_eur_net == Decimal(rec.price) if rec.price else first.price_eur_net is None
    assert first.hours == rec.hours
    sold = {g.slug for g in CATALOG.gpus if not g.comparison_only}
    with_setup = {("gpu", f.gpu) for f in found.sizing.result.fits
                  if f.gpu in sold and not f.fits and f.setup is not None}
    with_setup |= {("system", s.system.slug) for s in found.sizing.systems
                   if not s.fits and s.setup is not None}
    listed: dict[tuple[str, str], recommendations.Option] = {
        (o.kind, o.slug): o for o in found.options}
    assert with_setup <= set(listed)
    assert all(listed[item].setup is not None for item in with_setup)
    assert [recommendations.rank_key(o) for o in found.options] == sorted(
        recommendations.rank_key(o) for o in found.options)
