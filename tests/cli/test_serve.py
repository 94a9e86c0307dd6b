"""`sizer serve` start-up checks: what it refuses before any worker starts."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from app.cli import main as sizer


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """Records what uvicorn would have been started with (nothing is served)."""
    calls: list[dict[str, Any]] = []
    root = logging.getLogger()  # `sizer serve` installs its JSON handler: give it a copy
    monkeypatch.setattr(root, "handlers", list(root.handlers))
    monkeypatch.setattr(root, "level", root.level)
    monkeypatch.setenv("SIZER_DATABASE_URL", f"sqlite:///{tmp_path / 'sizer.db'}")
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: calls.append(kwargs))
    return calls


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "shop.example"])
def test_the_development_secret_is_refused_beyond_this_computer(
    started: list[dict[str, Any]], capsys: pytest.CaptureFixture[str], host: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        sizer(["serve", "--host", host])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "SIZER_SECRET_KEY" in error and host in error
    assert started == []


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_the_development_secret_is_fine_on_loopback(
    started: list[dict[str, Any]], host: str
) -> None:
    assert sizer(["serve", "--host", host]) == 0
    assert started[0]["host"] == host


def test_a_secret_from_the_environment_serves_anywhere(
    started: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIZER_SECRET_KEY", "a-long-random-value-from-the-vault")
    assert sizer(["serve", "--host", "0.0.0.0"]) == 0
    assert started[0]["host"] == "0.0.0.0"
