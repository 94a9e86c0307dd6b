"""`sizer serve` and SIZER_PUBLIC_BASE_URL, the only source of absolute links (issue 13, point
9): required beyond loopback, like a secret of one's own; on loopback, unset, it becomes the
server's own address."""

from __future__ import annotations

import os
from typing import Any

import pytest

from app.cli import main as sizer
from app.config import load_settings

# The fixture itself (pytest finds it by name here); tests name it again as a parameter.
from tests.cli.test_serve import started  # noqa: F401

SECRET = "a-long-random-value-from-the-vault"


def refusal(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line `sizer serve` printed when it refused to start (exit status 2)."""
    with pytest.raises(SystemExit) as exit_info:
        sizer(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "shop.example"])
def test_serving_beyond_loopback_needs_the_public_base_url(
    started: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
    capsys: pytest.CaptureFixture[str], host: str,
) -> None:
    monkeypatch.setenv("SIZER_SECRET_KEY", SECRET)
    error = refusal(["serve", "--host", host], capsys)
    assert "SIZER_PUBLIC_BASE_URL" in error and host in error
    assert started == []


def test_with_the_public_base_url_it_serves_anywhere_and_links_there(
    started: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    monkeypatch.setenv("SIZER_SECRET_KEY", SECRET)
    monkeypatch.setenv("SIZER_PUBLIC_BASE_URL", "https://Sizer.Shop.example/")
    assert sizer(["serve", "--host", "0.0.0.0", "--port", "9000"]) == 0
    assert started[0]["host"] == "0.0.0.0"
    assert load_settings().public_origin == "https://sizer.shop.example"


@pytest.mark.parametrize(
    ("host", "origin"),
    [("127.0.0.1", "http://127.0.0.1:9000"), ("::1", "http://[::1]:9000"),
     ("localhost", "http://localhost:9000")],
)
def test_on_loopback_links_lead_to_the_server_itself(
    started: list[dict[str, Any]], host: str, origin: str,  # noqa: F811
) -> None:
    assert sizer(["serve", "--host", host, "--port", "9000"]) == 0
    assert os.environ["SIZER_PUBLIC_BASE_URL"] == origin  # what spawned workers read
    assert load_settings().public_origin == origin  # and a single worker, in this process


@pytest.mark.parametrize(
    "value",
    ["sizer.shop.example", "ftp://sizer.shop.example", "https://sizer.shop.example/calc",
     "https://sizer.shop.example/?a=1", "https://user:pw@sizer.shop.example",
     "https://sizer.shop.example:99999", "https://", "https://gr\u00f6\u00dfe.example"],
)
def test_an_unusable_public_base_url_stops_start_up(
    started: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
    capsys: pytest.CaptureFixture[str], value: str,
) -> None:
    monkeypatch.setenv("SIZER_PUBLIC_BASE_URL", value)
    assert "SIZER_PUBLIC_BASE_URL" in refusal(["serve"], capsys)
    assert started == []
