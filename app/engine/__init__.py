"""The memory-accounting engine: plain data in, plain data out, standard library only.

It answers "how many bytes does this training job need per GPU, and does it fit this card".
Nothing here imports the web, the database, templates or any third-party package; the import
contracts in pyproject.toml and tests/engine/test_purity.py hold it to that.
"""

from app.engine.architectures.approximate import shape_of
from app.engine.architectures.registry import parse_config
from app.engine.errors import EngineError
from app.engine.estimate import ENGINE_VERSION, EstimateResult, estimate
from app.engine.job import GpuSpec, Job
from app.engine.shapes import ModelShape

__all__ = [
    "ENGINE_VERSION",
    "EngineError",
    "EstimateResult",
    "GpuSpec",
    "Job",
    "ModelShape",
    "estimate",
    "parse_config",
    "shape_of",
]
