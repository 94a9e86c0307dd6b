"""The engine is a library: importing it loads no web, database or third-party package."""

import subprocess
import sys

FORBIDDEN = ("sqlalchemy", "fastapi", "starlette", "pydantic", "jinja2", "alembic", "torch")


def test_importing_the_engine_loads_nothing_but_the_standard_library() -> None:
    code = (
        "import sys, app.engine, app.engine.estimate, app.engine.fit;"
        f"print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == ""
