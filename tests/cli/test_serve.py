"""`sizer serve` start-up checks: what it refuses before any worker starts."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.testclient import TestClient

from app.cli import main as sizer


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """Records what uvicorn would have been started with (nothing is served)."""
    calls: list[dict[str, Any]] = []
    root = logging.getLogger()  # `sizer serve` installs its JSON handler: give it a copy
    monkeypatch.setattr(root, "handlers", list(root.handlers))
    monkeypatch.setattr(root, "level", root.level)
    monkeypatch.setenv("SIZER_DATABASE_URL", f"sqlite:///{tmp_path / 'sizer.db'}")
    monkeypatch.setenv("SIZER_PUBLIC_BASE_URL", "")  # serve sets it on loopback: undone after
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
    monkeypatch.setenv("SIZER_PUBLIC_BASE_URL", "https://sizer.shop.example")
    assert sizer(["serve", "--host", "0.0.0.0"]) == 0
    assert started[0]["host"] == "0.0.0.0"


def served(app: Any, uvicorn_kwargs: dict[str, Any]) -> Any:
    """``app`` as uvicorn serves it with what `sizer serve` passed: uvicorn's own Config wraps
    it (ProxyHeadersMiddleware or not), so a test sees what a real client would."""
    config = uvicorn.Config(app, proxy_headers=uvicorn_kwargs["proxy_headers"],
                            forwarded_allow_ips=uvicorn_kwargs["forwarded_allow_ips"])
    config.load()
    return config.loaded_app


async def _echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The client address and scheme the application is handed."""
    body = f"{scope['client'][0]} {scope['scheme']}".encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


def _seen_by_the_app(uvicorn_kwargs: dict[str, Any], peer: str) -> str:
    client = TestClient(served(_echo, uvicorn_kwargs), client=(peer, 40000))  # no lifespan
    return client.get("/", headers={"X-Forwarded-For": "192.0.2.66",
                                    "X-Forwarded-Proto": "https"}).text


def test_forwarded_headers_are_believed_from_nobody_by_default(
    started: list[dict[str, Any]],
) -> None:
    """uvicorn's own default trusts loopback: any client connecting over it (a local proxy
    that passes headers on, a sidecar) could name its own address and get fresh sign-in
    attempts (issue 13)."""
    assert sizer(["serve"]) == 0
    assert started[0]["proxy_headers"] is False and started[0]["forwarded_allow_ips"] == []
    for peer in ("127.0.0.1", "::1", "10.0.0.2"):
        assert _seen_by_the_app(started[0], peer) == f"{peer} http"


def test_forwarded_headers_are_believed_from_the_named_proxies_only(
    started: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIZER_FORWARDED_ALLOW_IPS", "10.0.0.2, 172.16.0.0/12")
    assert sizer(["serve"]) == 0
    assert started[0]["proxy_headers"] is True
    assert started[0]["forwarded_allow_ips"] == ["10.0.0.2/32", "172.16.0.0/12"]
    assert _seen_by_the_app(started[0], "10.0.0.2") == "192.0.2.66 https"
    assert _seen_by_the_app(started[0], "172.17.0.5") == "192.0.2.66 https"
    for peer in ("127.0.0.1", "10.0.0.3"):  # not named: its headers are its own word
        assert _seen_by_the_app(started[0], peer) == f"{peer} http"


@pytest.mark.parametrize("value", ["*", "10.0.0.1/33", "proxy.internal", "10.0.0.256"])
def test_an_unusable_proxy_address_stops_start_up(
    started: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], value: str,
) -> None:
    monkeypatch.setenv("SIZER_FORWARDED_ALLOW_IPS", f"10.0.0.2,{value}")
    with pytest.raises(SystemExit) as exit_info:
        sizer(["serve"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "SIZER_FORWARDED_ALLOW_IPS" in error and value in error
    assert started == []
