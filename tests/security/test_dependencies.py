"""Dependency floors and the lock files: no release with a known advisory is allowed, and every
machine that runs ``make`` runs the versions CI tested.

The floors are set by hand (no advisory service is reachable from CI; docs/development.md,
"Dependencies", says how to refresh them and the locks). ``requirements-dev.lock`` (runtime
and dev extra, what ``make`` installs) and ``requirements.lock`` (runtime only, what the Docker
image installs) pin every package with its hashes.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
DEV_LOCK = ROOT / "requirements-dev.lock"

ADVISORY_FLOORS = {
    "fastapi": "0.121",  # Depends(scope=...), and a Starlette range that reaches the fixes
    "starlette": "0.49.1",  # multipart: CVE-2024-47874, CVE-2025-54121; Range: CVE-2025-62727
    "python-multipart": "0.0.22",  # CVE-2024-53981 (0.0.18); a file-write traversal (0.0.22)
    "h11": "0.16",  # uvicorn's parser: CVE-2025-43859 (request smuggling)
    "jinja2": "3.1.6",  # CVE-2024-56326, CVE-2024-56201, CVE-2025-27516 (sandbox escapes)
}
"""The oldest release of each package without a known advisory (set by hand)."""

PIN = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>[^ ;\\]+)(?: ; (?P<marker>[^\\]+?))?"
                 r" \\$")


def _project() -> dict[str, list[Requirement]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {
        "runtime": [Requirement(text) for text in project["dependencies"]],
        "dev": [Requirement(text) for text in project["optional-dependencies"]["dev"]],
    }


def _pins(path: Path) -> dict[str, tuple[Version, str | None]]:
    """``name -> (version, marker)`` for every pin; each pin must be followed by its hashes."""
    lines = path.read_text(encoding="utf-8").splitlines()
    pins: dict[str, tuple[Version, str | None]] = {}
    for number, line in enumerate(lines):
        match = PIN.match(line)
        if match is None:
            continue
        assert lines[number + 1].strip().startswith("--hash=sha256:"), (path.name, line)
        pins[canonicalize_name(match["name"])] = (Version(match["version"]), match["marker"])
    assert pins, f"no pins read from {path.name}"
    return pins


@pytest.mark.parametrize("package", sorted(ADVISORY_FLOORS))
def test_the_floors_leave_out_the_releases_with_known_advisories(package: str) -> None:
    (requirement,) = [r for r in _project()["runtime"] if canonicalize_name(r.name) == package]
    floors = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==")]
    assert floors and max(floors) >= Version(ADVISORY_FLOORS[package]), str(requirement)


@pytest.mark.parametrize(("lock", "groups"), [(LOCK, ("runtime",)),
                                              (DEV_LOCK, ("runtime", "dev"))],
                         ids=["runtime", "dev"])
def test_the_lock_pins_every_dependency_within_pyproject_s_ranges(
    lock: Path, groups: tuple[str, ...]
) -> None:
    pins = _pins(lock)
    for group in groups:
        for requirement in _project()[group]:
            name = canonicalize_name(requirement.name)
            assert name in pins, f"{name} is not in {lock.name}: run `make lock`"
            assert requirement.specifier.contains(pins[name][0], prereleases=True), (
                f"{lock.name} pins {name} {pins[name][0]}, outside {requirement}: run `make lock`"
            )
    for package, floor in ADVISORY_FLOORS.items():
        assert pins[package][0] >= Version(floor), (lock.name, package)


def test_the_runtime_lock_pins_what_the_dev_lock_pins() -> None:
    """The image runs the versions the suite ran."""
    dev = _pins(DEV_LOCK)
    for name, (version, _) in _pins(LOCK).items():
        assert dev[name][0] == version, name


def test_this_environment_runs_the_locked_versions() -> None:
    """``make`` installs from the dev lock (and again whenever it changes), so the suite runs
    on exactly the pinned versions; a different one here means the environment was not built
    from the lock."""
    differ = {}
    for name, (version, marker) in _pins(DEV_LOCK).items():
        if marker is not None and not Marker(marker).evaluate():
            continue
        installed = Version(metadata.version(name))
        if installed != version:
            differ[name] = f"{installed} installed, {version} locked"
    assert differ == {}, "run `make install`"
