"""tools/image.py's choices that need no buildah: which Debian mirror the base comes from,
where the base is kept, and when the build gives up with a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

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
