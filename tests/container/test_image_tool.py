"""tools/image.py's choices that need no buildah: which Debian mirror the base comes from,
where the base is kept, and when the build gives up with a reason."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.web.conftest import client, make_client, seeded  # noqa: F401 (fixtures)
from tools import image

ONE_LINE = """\
# deb http://old.example/debian bookworm main
deb http://security.debian.org/debian-security bookworm-security main
deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian/ bookworm main contrib
"""
DEB822 = """\
Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main

Types: deb deb-src
# a comment inside the stanza
URIs: http://ftp.de.debian.org/debian http://second.example/debian
Suites: bookworm bookworm-updates
Components: main
"""
THIRD_PARTY = "deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n"


def test_the_base_comes_from_the_bookworm_archive_apt_uses() -> None:
    assert image.debian_mirror([THIRD_PARTY, ONE_LINE]) == "http://mirror.example/debian"
    assert image.debian_mirror([DEB822]) == "http://ftp.de.debian.org/debian"


def test_without_a_configured_bookworm_archive_it_is_debians_own() -> None:
    assert image.debian_mirror([THIRD_PARTY, "Types: deb\nURIs: http://x/\nSuites: trixie\n"]) \
        == image.DEFAULT_MIRROR


def test_the_base_is_kept_outside_the_checkout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("SIZER_IMAGE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert image.cache_dir() == tmp_path / "gpu-sizer"
    monkeypatch.setenv("SIZER_IMAGE_CACHE", str(tmp_path / "here"))
    assert image.cache_dir() == tmp_path / "here"
    assert not image.cache_dir().is_relative_to(image.ROOT)


@pytest.mark.parametrize(("setting", "storage"), [("vfs", image.VFS),
                                                 ("overlay", image.OVERLAY)])
def test_the_storage_driver_can_be_chosen(monkeypatch: pytest.MonkeyPatch, setting: str,
                                          storage: tuple[str, ...]) -> None:
    image.buildah.cache_clear()
    monkeypatch.setenv(image.DRIVER_ENV, setting)
    try:
        assert image.buildah() == storage
    finally:
        image.buildah.cache_clear()


def test_without_buildah_the_storage_is_vfs(monkeypatch: pytest.MonkeyPatch) -> None:
    image.buildah.cache_clear()
    monkeypatch.delenv(image.DRIVER_ENV, raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    try:
        assert image.buildah() == image.VFS
    finally:
        image.buildah.cache_clear()


def test_overlay_keeps_a_storage_root_of_its_own() -> None:
    """buildah refuses a root another driver made, and the default root may hold vfs images."""
    assert "--root" in image.OVERLAY and "--root" not in image.VFS


def test_a_machine_without_the_tools_gets_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    reason = image.unavailable()
    assert reason is not None and "buildah and debootstrap not installed" in reason


def test_make_image_says_why_it_cannot_build(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert image.main([]) == 2
    assert "no docker daemon" in capsys.readouterr().err


def test_the_build_context_follows_dockerignore() -> None:
    rules = ["data", "tools", "!tools/kept.json", "**/__pycache__", "docs", "!docs/a.json"]
    assert image.shipped("app/main.py", rules)
    assert not image.shipped("data/sizer.db", rules)
    assert not image.shipped("tools/image.py", rules)
    assert image.shipped("tools/kept.json", rules)
    assert not image.shipped("app/web/__pycache__/pages.cpython-311.pyc", rules)
    assert image.shipped("docs/a.json", rules) and not image.shipped("docs/b.md", rules)


def test_the_image_is_built_from_the_package_alone() -> None:
    """The Dockerfile builds the wheel from pyproject.toml, README.md and app/, and installs the
    lock: nothing else of the checkout travels into the build."""
    for path in ("app/templates/base.html", "app/migrations/env.py", "pyproject.toml",
                 "README.md", "requirements.lock"):
        assert image.shipped(path), path
    for path in ("tests/conftest.py", "docs/api.md", "tools/image.py", "data/sizer.db",
                 "requirements-dev.lock", "app/web/__pycache__/pages.cpython-311.pyc"):
        assert not image.shipped(path), path


# Every file under the checkout that the service opens while serving its pages must travel into
# the image, and all of them are package data inside app/ (a page that read a results document
# under docs/ or tools/ answered 500 in the container, twice; the wheel has only app/).
PAGES = ["/", "/?model=llama-3.1-8b&method=qlora", "/how-we-calculate", "/healthz", "/readyz",
         "/quote?item=gpu:rtx-pro-6000&model=llama-3.1-8b&method=lora&batch=1&seq=2048"]


def test_every_file_the_pages_read_is_in_the_image(client: TestClient) -> None:  # noqa: F811
    opened: list[Path] = []
    recording = [True]

    def record(event: str, args: tuple[Any, ...]) -> None:
        if recording[0] and event == "open" and isinstance(args[0], str | Path):
            opened.append(Path(args[0]))

    sys.addaudithook(record)  # audit hooks stay for the process: this one records only here
    try:
        for page in PAGES:
            assert client.get(page).status_code == 200, page
    finally:
        recording[0] = False
    checkout = image.ROOT.resolve()
    read = {path.resolve().relative_to(checkout).as_posix() for path in opened
            if path.resolve().is_relative_to(checkout)
            and not path.resolve().is_relative_to(checkout / ".venv")
            and "__pycache__" not in path.parts}  # bytecode: written here, never shipped
    assert "app/web/published/accuracy.json" in read  # the hook saw the documents
    assert sorted(path for path in read if not path.startswith("app/")) == []
    assert sorted(path for path in read if not image.shipped(path)) == []
