"""What the training speed adds to one estimate against the whole seed catalog (issue 26: under
0.1 ms). Run: `make bench` (or `.venv/bin/pytest benchmarks/test_training_speed.py`).

The speed is computed inside :func:`app.engine.estimate`: once per estimate the job's work
(:func:`speed_job`, :func:`step_work`: FLOPs, bytes and transfers), then per card only
:func:`training` against its figures. This times exactly those calls for every card of the
catalog (the cards the shop sells and the comparison cards), which is all the speed adds.
:func:`test_whole_estimate_against_the_whole_catalog` times the whole engine estimate of the
same jobs (memory, fits and speed, without levers) for the share the speed takes of it. Each
benchmark's ``extra_info`` carries the catalog's card count. Reported in docs/performance.md,
never asserted: wall-clock limits in tests are flaky. For CPU time under load:
``--benchmark-timer=time.process_time``.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.catalog.seed import load_seed_catalog
from app.engine import Job
from app.engine.estimate import estimate
from app.engine.job_speed import speed_job
from app.engine.speed import Training, config_attention_layers, step_work, training
from app.engine.step_model import model_states
from app.estimates.service import gpu_spec

CATALOG = load_seed_catalog()
SPECS = [gpu_spec(g) for g in CATALOG.gpus]
CARDS = [spec.speed for spec in SPECS]

JOBS = {
    "lora-8b-b4": ("llama-3.1-8b", Job(method="lora", batch_size=4)),
    "full-8b-b1": ("llama-3.1-8b", Job(method="full")),
    "qlora-70b-ckpt": ("llama-3.3-70b", Job(method="qlora", gradient_checkpointing=True)),
    "lora-mixtral-eager": ("mixtral-8x7b", Job(method="lora", attention="eager")),
}


def speed_of_every_card(shape: Any, job: Job, layers: Any,
                        trainable: int) -> list[Training | None]:
    work = step_work(shape, speed_job(shape, job, trainable), layers)
    return [training(work, card, dataset_tokens=job.dataset_tokens, epochs=job.epochs)
            for card in CARDS]


def _model(name: str) -> tuple[Job, Any, Any]:
    """The job of ``name``, its model's shape and attention layers."""
    from app.engine import shape_of

    slug, job = JOBS[name]
    config = CATALOG.model(slug).config
    shape = shape_of(config)
    return job, shape, config_attention_layers(config, shape)


@pytest.mark.parametrize("name", list(JOBS))
def test_speed_against_the_whole_catalog(benchmark: Any, name: str) -> None:
    job, shape, layers = _model(name)
    # the parameters estimate() has counted for the memory already
    trainable = model_states(shape, job).trainable_params
    benchmark.extra_info["cards"] = len(CARDS)
    found = benchmark(speed_of_every_card, shape, job, layers, trainable)
    assert len(found) == len(CATALOG.gpus) and any(found)


@pytest.mark.parametrize("name", list(JOBS))
def test_whole_estimate_against_the_whole_catalog(benchmark: Any, name: str) -> None:
    job, shape, layers = _model(name)
    benchmark.extra_info["cards"] = len(SPECS)
    result = benchmark(estimate, shape, job, SPECS, with_levers=False, layers=layers)
    assert len(result.fits) == len(SPECS) and any(fit.training for fit in result.fits)
