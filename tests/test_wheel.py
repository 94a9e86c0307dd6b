"""The package is the unit: the wheel built from pyproject.toml carries everything the service
reads at run time (templates, static files, catalogs, migrations, seed and published data), so
installed into a fresh virtual environment outside the checkout it migrates, seeds and serves
the calculator, a Serve result and /readyz, with no source tree anywhere on its path.

The fresh environment gets the locked dependencies (requirements.lock, hash-checked, as the
image does) from the package index or pip's cache, then the wheel without resolving anything.
About a minute on two cores; the figures are printed (run with -s).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.container.support import free_port, stop, wait_for

pytestmark = pytest.mark.long  # a wheel, a fresh environment: pytest-xdist starts this file first

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app"
NOT_SHIPPED = frozenset({".gitkeep", "babel.cfg"})
"""Files under app/ the service never reads: a placeholder and the extraction map, which
tools/catalogs.py reads from the checkout."""


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built as the Dockerfile builds it: from pyproject.toml, README.md and app/
    copied out of the checkout (so a file the package forgets to declare is missing here too)."""
    source = tmp_path_factory.mktemp("source")
    shutil.copy(ROOT / "pyproject.toml", source)
    shutil.copy(ROOT / "README.md", source)
    shutil.copytree(APP, source / "app",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("wheels")
    started = time.monotonic()
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out),
          str(source)], cwd=source)
    print(f"\nwheel built in {time.monotonic() - started:.1f} s")
    (built,) = out.glob("gpu_sizer-*.whl")
    return built


@pytest.fixture(scope="module")
def environment(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment outside the checkout with the lock and the wheel."""
    home = tmp_path_factory.mktemp("installed")
    venv = home / "venv"
    started = time.monotonic()
    _run([sys.executable, "-m", "venv", str(venv)], cwd=home)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile"]
    _run([*pip, "--require-hashes", "--only-binary=:all:", "-r", str(ROOT / "requirements.lock")],
         cwd=home)
    _run([*pip, "--no-deps", "--no-index", str(wheel)], cwd=home)
    _run([str(venv / "bin" / "python"), "-m", "pip", "check"], cwd=home)
    print(f"\nfresh environment with the lock and the wheel in {time.monotonic() - started:.1f} s")
    return venv


def _env(home: Path) -> dict[str, str]:
    """Only what a user's shell would have: no PYTHONPATH, no checkout, a database of its own."""
    keep = {name: os.environ[name] for name in ("PATH", "HOME", "LANG", "TMPDIR")
            if name in os.environ}
    return {**keep, "SIZER_DATABASE_URL": f"sqlite:///{home / 'sizer.db'}"}


def test_the_wheel_carries_every_file_the_package_holds(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    files = {path.relative_to(ROOT).as_posix() for path in APP.rglob("*")
             if path.is_file() and "__pycache__" not in path.parts
             and path.suffix != ".pyc" and path.name not in NOT_SHIPPED}
    assert sorted(files - names) == []
    assert not any(name.startswith(("tests/", "tools/", "docs/")) for name in names)


@pytest.fixture(scope="module")
def served(environment: Path) -> Iterator[str]:
    """`sizer db upgrade`, `sizer db seed`, then `sizer serve`, all from the installed wheel,
    run from a directory outside the checkout."""
    home = environment.parent
    env = _env(home)
    sizer = str(environment / "bin" / "sizer")
    _run([sizer, "db", "upgrade"], cwd=home, env=env)
    _run([sizer, "db", "seed"], cwd=home, env=env)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sizer, "serve", "--host", "127.0.0.1", "--port", str(port)],
                              cwd=home, env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(f"{base_url}/healthz", timeout_s=60)
        yield base_url
    finally:
        stop(server)


def _get(url: str, language: str = "en") -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Accept-Language": language})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, response.read().decode("utf-8")


def test_the_installed_package_is_the_one_running(environment: Path) -> None:
    home = environment.parent
    where = _run([str(environment / "bin" / "python"), "-c", "import app; print(app.__file__)"],
                 cwd=home, env=_env(home))
    assert Path(where.strip()).is_relative_to(environment)
    assert not Path(where.strip()).is_relative_to(ROOT)


def test_the_installed_wheel_is_ready(served: str) -> None:
    status, body = _get(f"{served}/readyz")
    assert status == 200 and '"status":"ok"' in body.replace(" ", ""), body


def test_the_installed_wheel_serves_the_calculator_in_both_languages(served: str) -> None:
    status, english = _get(f"{served}/")
    assert status == 200 and "llama-3.1-8b" in english
    status, german = _get(f"{served}/", language="de")
    assert status == 200 and 'lang="de"' in german and german != english
    status, css = _get(f"{served}/static/css/site.css")
    assert status == 200 and css


def test_the_installed_wheel_answers_a_serve_request(served: str) -> None:
    status, body = _get(f"{served}/serve?model=llama-3.3-70b&gpu=rtx-pro-6000&users=4")
    assert status == 200
    assert 'id="card-rtx-pro-6000"' in body


def test_the_installed_wheel_shows_how_we_calculate_with_its_published_data(served: str) -> None:
    """The page reads app/web/published/, app/estimates/measurements/ and the seed configs (a
    vLLM log's model among them): a file left out of the wheel would make it fail."""
    status, body = _get(f"{served}/how-we-calculate")
    assert status == 200
    assert "/static/img/accuracy.png" in body
    assert "https://github.com/noonghunna/club-3090/issues/612" in body
