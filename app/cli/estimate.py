"""``sizer estimate``: the engine's answer on the command line, as JSON or a table.

``--model`` resolves against the catalog: the configured database, which must be reachable,
migrated and seeded (else exit 2 saying which), or with ``--offline`` the seed files, said on
standard error; with no database configured and none created yet, the seed files too, said the
same way. Only what the path taken needs is imported: the seed path loads neither SQLAlchemy
nor the settings (``benchmarks/test_cli_speed.py`` times it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.catalog import inline_config
from app.catalog.schemas import Catalog
from app.catalog.seed import load_seed_catalog
from app.cli.errors import CliError
from app.engine import EstimateResult
from app.engine.activations import ATTENTIONS
from app.engine.checkpointing import CHECKPOINTING_SETTINGS
from app.engine.precision import (
    ADAPTER_DTYPES,
    BASE_DTYPES,
    BNB_VERSIONS,
    FRAMEWORKS,
    PRECISIONS,
)
from app.engine.sharding import SHARDING_IMPLS
from app.engine.states import (
    ACCOUNTINGS,
    METHODS,
    MOE_LORAS,
    OFFLOADS,
    OPTIMIZERS,
    QUANTS,
    SHARDINGS,
)
from app.errors import DomainError
from app.estimates import service
from app.estimates.job_input import JOB_INPUT_FIELDS, JobInput
from app.estimates.memory_size import parse_memory_size
from app.estimates.token_count import parse_token_count

if TYPE_CHECKING:
    from app.catalog.hub import ModelChoice

GB = 10**9


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `estimate` command's options."""
    add_model_arguments(parser)
    parser.add_argument("--method", choices=METHODS, required=True)
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default="adamw")
    parser.add_argument("--accounting", choices=ACCOUNTINGS, default="zero")
    parser.add_argument("--lora-rank", type=int, default=16)
    parser.add_argument("--lora-targets", default="all-linear",
                        help="all-linear, attention, qv, mlp, or NAME,NAME")
    parser.add_argument("--lora-dropout", type=float, default=0.0)
    parser.add_argument("--quant", choices=QUANTS, default=None)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--gradient-checkpointing", choices=CHECKPOINTING_SETTINGS,
                        nargs="?", const="on", default="auto",
                        help="auto (default: on for QLoRA, for models of 20B parameters and "
                        "more and for sequences of 8192 tokens and more, as the published "
                        "recipes run), on or off; the bare flag means on")
    parser.add_argument("--allow-method-change", action="store_true",
                        help="let a setup turn LoRA into QLoRA where that makes the job fit")
    parser.add_argument("--attention", choices=ATTENTIONS, default="flash")
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--sharding", choices=SHARDINGS, default="none")
    parser.add_argument("--sharding-impl", choices=SHARDING_IMPLS, default="deepspeed",
                        help="who runs --sharding zero3: deepspeed (its gradient bucket and "
                        "prefetch) or fsdp (FULL_SHARD: the computing and the prefetched next "
                        "layer); fsdp only with zero3")
    parser.add_argument("--moe-lora", choices=MOE_LORAS, default="fused",
                        help="how LoRA adapts a mixture of experts: fused (as PEFT 0.21 on "
                        "transformers 5 builds it: fused expert tensors, gate/up at rank 2r; "
                        "under qlora the experts stay 16-bit, fp32 after PEFT's prepare) or "
                        "per-expert (one adapter per expert, transformers 4; experts in NF4)")
    parser.add_argument("--offload", choices=OFFLOADS, default="none")
    parser.add_argument("--chunked-loss", action="store_true",
                        help="a chunked or fused cross-entropy (Liger Kernel, torchtune)")
    parser.add_argument("--fused-optimizer-step", action="store_true",
                        help="optimizer step fused into backward: gradients freed per layer")
    parser.add_argument("--activation-offload", action="store_true",
                        help="saved activations offloaded to CPU memory")
    parser.add_argument("--gradient-accumulation", type=int, default=1)
    parser.add_argument("--dataset-tokens", metavar="COUNT", default="10M",
                        help="tokens of training data per epoch, for the training time "
                        "(10M, 250k, 1.5B; default 10M)")
    parser.add_argument("--epochs", type=int, default=1,
                        help="passes over the data (default 1)")
    parser.add_argument("--expandable-segments", action="store_true",
                        help="PyTorch's allocator with PYTORCH_CUDA_ALLOC_CONF="
                        "expandable_segments:True (Unsloth, axolotl): a smaller reserve")
    _add_precision_arguments(parser)
    add_card_arguments(parser)
    parser.set_defaults(func=run)


def _add_precision_arguments(parser: argparse.ArgumentParser) -> None:
    """The dtypes, the framework whose recipes set them, and QLoRA's bitsandbytes."""
    parser.add_argument("--precision", choices=PRECISIONS, default=None,
                        help="amp: fp32 master weights, bf16 autocast; bf16: pure bf16 "
                        "(default: as --framework trains)")
    parser.add_argument("--adapter-dtype", choices=ADAPTER_DTYPES, default=None,
                        help="LoRA adapters' dtype (default: as --framework trains)")
    parser.add_argument("--base-dtype", choices=BASE_DTYPES, default=None,
                        help="the frozen base's dtype for LoRA/QLoRA (default: bf16)")
    parser.add_argument("--framework", choices=FRAMEWORKS, default="hf",
                        help="set the dtypes as this framework's recipes do")
    parser.add_argument("--bnb-version", choices=BNB_VERSIONS, default="current",
                        help="QLoRA's bitsandbytes: current (0.43.2 or later) or 0.41 (0.41 to "
                        "0.43.1, which kept every 4-bit layer's input, as most 2023-2024 "
                        "published QLoRA figures were measured)")


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """``--model SLUG`` or ``--model-config PATH``, one of them required (estimate, serving)."""
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--model", metavar="SLUG|OWNER/NAME[@REV]",
                       help="a model in the catalog, or a Hugging Face repository id "
                       "(its config.json is fetched from the Hub)")
    model.add_argument("--model-config", metavar="PATH", type=Path,
                       help="a Hugging Face config.json file")


def add_card_arguments(parser: argparse.ArgumentParser) -> None:
    """The cards to hold a job against and the output format (estimate, serving)."""
    parser.add_argument("--gpu", action="append", default=[], metavar="SLUG",
                        help="hold the job against this card (repeatable); default: every card")
    parser.add_argument("--gpu-memory", metavar="SIZE", default=None,
                        help="an ad-hoc card of this driver-reported total instead (24GiB, "
                        "80GB), reported as gpu 'custom'")
    parser.add_argument("--format", choices=("json", "table"), default="table")
    parser.add_argument("--offline", action="store_true",
                        help="answer from the seed files' catalog without the database "
                        "(said on standard error)")


def custom_memory(args: argparse.Namespace) -> int | None:
    """``--gpu-memory`` in bytes, or None (refused naming gpu_memory when unreadable)."""
    return parse_memory_size(args.gpu_memory) if args.gpu_memory is not None else None


def read_config(path: Path) -> dict[str, Any]:
    """The config.json at ``path``, held to the bounds the page and the API hold it to
    (:mod:`app.catalog.inline_config`); any problem is a DomainError naming the file."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(inline_config.MAX_DOCUMENT_BYTES + 1)
    except OSError as error:
        raise DomainError(f"cannot read {path}: {error.strerror}", field="model-config") from error
    try:
        return inline_config.read_config_bytes(raw)
    except inline_config.ConfigValueError as error:
        raise DomainError(f"{path}: {error}", field="model-config") from error


OFFLINE_NOTE = "offline: the seed files' catalog, not the database"
"""What ``--offline`` says on standard error, so a figure is never taken for the shop's own."""
NO_DATABASE_NOTE = ("no database yet ({url}): the seed files' catalog; `sizer db upgrade` and "
                    "`sizer db seed` make one")
"""What the command says on standard error when SIZER_DATABASE_URL is not set and the default
SQLite file does not exist: a fresh checkout answers, and says from what."""
OFFLINE_HINT = "or pass --offline to answer from the seed files"


@dataclass(frozen=True, slots=True)
class CatalogSource:
    """The catalog a command sizes against, and the database it came from (None: the seed
    files, which is also where a Hub repository id's config.json is then not kept)."""

    catalog: Catalog
    database_url: str | None


def load_catalog(*, offline: bool = False) -> CatalogSource:
    """The catalog: the seed files with ``offline`` (said on standard error; neither the
    settings nor SQLAlchemy are imported), else the configured database, which must be
    reachable, migrated and seeded, or :class:`CliError` (exit 2) says which and how to fix it.
    A bad setting is refused naming it (exit 2). With SIZER_DATABASE_URL unset and the default
    SQLite file not there yet, the seed files answer and say so: connecting would create the
    file, and ``sizer estimate`` run in any directory would leave a ``data/sizer.db`` behind.
    Active rows only, in slug order either way, so the cards come in the same order."""
    if offline:
        print(OFFLINE_NOTE, file=sys.stderr)
        return CatalogSource(load_seed_catalog(), None)
    from app.config import DEFAULT_DATABASE_FILE, ConfigurationError, load_settings

    try:
        settings = load_settings()
    except ConfigurationError as error:
        raise CliError(str(error)) from error
    url = settings.database_url
    if "database_url" not in settings.model_fields_set and not DEFAULT_DATABASE_FILE.exists():
        print(NO_DATABASE_NOTE.format(url=url), file=sys.stderr)
        return CatalogSource(load_seed_catalog(), None)
    return CatalogSource(_database_catalog(url), url)


def _sqlite_file_missing(database_url: str) -> bool:
    from app.db.urls import database_file_missing

    return database_file_missing(database_url)


def _database_catalog(database_url: str) -> Catalog:
    """The catalog of a configured database, or CliError naming what is missing."""
    if _sqlite_file_missing(database_url):
        raise CliError(f"{database_url} does not exist; run `sizer db upgrade` and "
                       f"`sizer db seed` first, {OFFLINE_HINT}", subject="database")
    from sqlalchemy.exc import SQLAlchemyError

    from app.catalog.service import CatalogCache, get_catalog
    from app.config import ConfigurationError
    from app.db import migrate
    from app.db.session import check_database, make_engine, make_session_factory

    try:
        check_database(database_url)
    except ConfigurationError as error:
        raise CliError(f"{error}; {OFFLINE_HINT}") from error
    engine = make_engine(database_url)
    try:
        state = migrate.migration_state(engine)
        if not state.at_head:
            raise CliError(f"at migration {state.current or 'none'}, not {state.head}; run "
                           f"`sizer db upgrade` first, {OFFLINE_HINT}", subject="database")
        with make_session_factory(engine)() as session:
            catalog = get_catalog(session, CatalogCache())  # one read per command
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        raise CliError(f"cannot read the catalog: {reason}; {OFFLINE_HINT}",
                       subject="database") from error
    finally:
        engine.dispose()
    if not catalog.gpus:
        raise CliError(f"the catalog has no cards; run `sizer db seed` first, {OFFLINE_HINT}",
                       subject="database")
    return catalog


def hub_choice(model: str, source: CatalogSource) -> ModelChoice:
    """``--model OWNER/NAME[@REVISION]``: the catalog's model of that id, or the repository's
    config.json from the Hugging Face Hub (``app/catalog/hub.py``, the page's and the API's
    service), kept in the database the catalog came from, fetched every time without one
    (``--offline``, or no database yet). A refusal is a DomainError on ``model`` (exit 2)."""
    from app.catalog import hub
    from app.config import ConfigurationError, load_settings

    try:
        settings = load_settings()
    except ConfigurationError as error:
        raise CliError(str(error)) from error
    access = hub.HubAccess.of(settings, hub.HubFlights())
    if source.database_url is None:
        return hub.choose_model(None, source.catalog, model, access=access)
    from app.db.session import make_engine, make_session_factory

    engine = make_engine(source.database_url)
    try:
        with make_session_factory(engine).begin() as session:  # keeps what it fetched
            return hub.choose_model(session, source.catalog, model, access=access)
    finally:
        engine.dispose()


def job_input(args: argparse.Namespace) -> JobInput:
    """The options of the job as the one input every surface fills (each option is the
    input field's name with dashes, :mod:`app.estimates.job_input`)."""
    values = {name: getattr(args, name) for name in JOB_INPUT_FIELDS}
    return JobInput.of({**values, "dataset_tokens": parse_token_count(args.dataset_tokens)})


def run(args: argparse.Namespace) -> int:
    config: Mapping[str, Any] | None = (read_config(args.model_config) if args.model_config
                                         else None)
    source = load_catalog(offline=args.offline)
    catalog = source.catalog
    slug, fetched = args.model, None
    if args.model is not None and "/" in args.model:  # a Hub repository id (hub.is_repo_id)
        choice = hub_choice(args.model, source)
        slug, config, fetched = choice.slug, choice.config, choice.hub
    request = job_input(args).request(
        model_slug=slug, model_config=config, gpu_slugs=tuple(args.gpu),
        gpu_memory_bytes=custom_memory(args))
    # The command's own (empty) answer cache: one estimate per process, nothing to share.
    # A DomainError (bad input, an unknown model or card) leaves here: main() prints it as
    # one line and exits 2, as for every command.
    result = service.estimate(catalog, request, cache=service.EstimateCache())
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    else:
        if fetched is not None:
            print(f"{fetched.repo_id}: config.json at commit {fetched.commit_sha[:12]} "
                  "(Hugging Face Hub)")
        print(format_table(result))
    return 0


def _gb(value: int) -> str:
    return f"{value / GB:.1f}"


def _changes(changes: Mapping[str, object]) -> str:
    return ", ".join(f"{key} {value}" for key, value in changes.items())


def format_table(result: EstimateResult) -> str:
    """The same numbers for people: aligned, GB with one decimal."""
    b = result.per_gpu_bytes
    lines = [
        f"engine {result.engine_version}  {result.model_type}  "
        f"params {result.params.total:,}  trainable {result.params.trainable:,}"
        + ("  (approximate)" if result.fidelity == "approximate" else ""),
        "",
        "per GPU            GB",
    ]
    for label, value in (
        ("weights", b.weights), ("adapter", b.adapter), ("gradients", b.gradients),
        ("optimizer", b.optimizer), ("activations", b.activations), ("overhead", b.overhead),
        ("total", b.total),
    ):
        lines.append(f"  {label:<14}{_gb(value):>7}")
    lines.append(f"  peak phase: {result.peak_phase}")
    ckpt = result.checkpointing
    lines.append(f"  gradient checkpointing: {'on' if ckpt.enabled else 'off'}"
                 + (f" (auto: {ckpt.reason.replace('_', ' ')})" if ckpt.setting == "auto"
                    else ""))
    lines.append(f"  allocated {_gb(result.allocated_bytes)} GB (live tensors, "
                 f"max_memory_allocated)  reserved {_gb(result.reserved_bytes)} GB (allocator, "
                 "max_memory_reserved); total adds the CUDA context")
    lines.append("")
    lines += _card_rows(result)
    lines.append("  hours: the training time for the data (--dataset-tokens x --epochs) on one "
                 "card of each kind, if the job fits it")
    rec = result.recommendation
    if rec is not None:
        lines += ["", f"  recommendation: {rec.kind} {rec.slug}, "
                  + (f"{rec.price} EUR net" + (" (indicative list price)"
                                                if rec.price_indicative else "")
                     if rec.price is not None else "price on request")
                  + (f", {rec.hours:.2f} h" if rec.hours is not None else "")
                  + (f", with {_changes(rec.setup.changes)}" if rec.setup is not None
                     else ", as set")]
    if result.levers:
        lines += ["", "  levers (card: change -> total GB; price in speed)"]
        for lever in result.levers:
            lines.append(
                f"  {lever.gpu}: {lever.lever} -> {_gb(lever.total_bytes)}; {lever.speed}"
            )
    lines += ["", "assumptions:"] + [f"  - {item}" for item in result.assumptions]
    lines += [f"warning: {item}" for item in result.warnings]
    return "\n".join(lines)


def _card_rows(result: EstimateResult) -> list[str]:
    """One line per card (fit, largest batch and sequence, hours), and its setup beneath."""
    lines: list[str] = []
    header = (f"  {'card':<22}{'usable':>8}{'free':>8}  {'fits':<5}{'max batch':>10}"
              f"{'max seq':>9}{'hours':>9}{'tokens/s':>10}")
    lines.append(header)
    for fit in result.fits:
        speed = fit.training
        hours = (f"{speed.hours:>9.2f}{speed.tokens_per_s:>10,.0f}" if speed
                 else f"{'-':>9}{'-':>10}")
        lines.append(
            f"  {fit.gpu:<22}{_gb(fit.usable_bytes):>8}{_gb(fit.free_bytes):>8}  "
            f"{'yes' if fit.fits else 'no':<5}{fit.max_batch_size:>10}{fit.max_seq_len:>9}"
            f"{hours}" + ("  (comparison card, not sold)" if fit.comparison_only else "")
        )
        if fit.setup is not None:
            with_setup = fit.setup.training
            lines.append(f"    fits with {_changes(fit.setup.changes)}: "
                         f"{_gb(fit.setup.total_bytes)} GB"
                         + (f", {with_setup.hours:.2f} h" if with_setup else ""))
    return lines
