"""Per-key rate limits: RateLimit-* headers on every answer, 429 with Retry-After."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from app.api.v1.ratelimit import FixedWindowLimiter
from tests.api.v1.conftest import assert_problem


def test_a_key_s_own_limit_counts_down_then_429(
    client: TestClient, issue_key: Callable[..., str]
) -> None:
    headers = {"Authorization": f"Bearer {issue_key(rate_limit=3)}"}
    remaining = []
    for _ in range(3):
        response = client.get("/api/v1/gpus", headers=headers)
        assert response.status_code == 200
        assert response.headers["RateLimit-Limit"] == "3"
        assert 1 <= int(response.headers["RateLimit-Reset"]) <= 60
        remaining.append(response.headers["RateLimit-Remaining"])
    assert remaining == ["2", "1", "0"]
    limited = client.get("/api/v1/gpus", headers=headers)
    body = assert_problem(limited, 429, "rate_limited")
    assert "3 requests" in str(body["detail"])
    assert 1 <= int(limited.headers["Retry-After"]) <= 60
    assert limited.headers["RateLimit-Remaining"] == "0"


def test_limits_are_per_key(client: TestClient, issue_key: Callable[..., str]) -> None:
    first = {"Authorization": f"Bearer {issue_key(rate_limit=1)}"}
    second = {"Authorization": f"Bearer {issue_key(partner='Other', rate_limit=1)}"}
    assert client.get("/api/v1/gpus", headers=first).status_code == 200
    assert client.get("/api/v1/gpus", headers=first).status_code == 429
    assert client.get("/api/v1/gpus", headers=second).status_code == 200


def test_the_default_limit_comes_from_the_settings(
    api: Callable[..., TestClient], auth: dict[str, str]
) -> None:
    client = api(api_rate_limit_per_minute=2)
    assert client.get("/api/v1/systems", headers=auth).headers["RateLimit-Limit"] == "2"
    assert client.post("/api/v1/estimates", headers=auth, json={}).status_code == 422
    assert_problem(client.get("/api/v1/models", headers=auth), 429)


def test_error_answers_carry_the_headers_too(client: TestClient, auth: dict[str, str]) -> None:
    response = client.get("/api/v1/gpus/no-such-card", headers=auth)
    assert response.status_code == 404
    assert "RateLimit-Remaining" in response.headers


def test_the_fixed_window_resets_on_the_next_minute() -> None:
    now = [600.0]
    limiter = FixedWindowLimiter(clock=lambda: now[0])
    assert limiter.hit("k", limit=2).remaining == 1
    assert limiter.hit("k", limit=2).remaining == 0
    denied = limiter.hit("k", limit=2)
    assert not denied.allowed and denied.reset_seconds == 60
    assert denied.headers()["Retry-After"] == "60"
    now[0] = 659.5
    assert limiter.hit("k", limit=2).reset_seconds == 1
    now[0] = 660.0
    fresh = limiter.hit("k", limit=2)
    assert fresh.allowed and fresh.remaining == 1 and "Retry-After" not in fresh.headers()
