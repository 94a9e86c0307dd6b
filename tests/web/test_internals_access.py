"""/metrics and the migration ids in /readyz answer only allowed addresses or the metrics token
(issue 13, point 7): loopback by default, SIZER_METRICS_ALLOW_IPS and SIZER_METRICS_TOKEN
otherwise. /healthz and /readyz's status stay open to every load balancer."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

TOKEN = "a-metrics-token-for-the-tests"
OUTSIDER = ("192.0.2.10", 40000)  # TEST-NET-1 (RFC 5737)


def _from(make_client: Callable[..., TestClient], peer: tuple[str, int],
          **settings: object) -> TestClient:
    """A client whose TCP peer address is ``peer`` on an app with these settings."""
    app = make_client(**settings).app
    return TestClient(app, client=peer, follow_redirects=False)


@pytest.mark.parametrize(
    ("peer", "settings", "status"),
    [
        (("127.0.0.1", 40000), {}, 200),
        (("127.8.9.10", 40000), {}, 200),
        (("::1", 40000), {}, 200),
        (("::ffff:127.0.0.1", 40000), {}, 200),
        (OUTSIDER, {}, 403),
        (("testclient", 50000), {}, 403),  # no address at all
        (OUTSIDER, {"metrics_allow_ips": "192.0.2.0/24"}, 200),
        (OUTSIDER, {"metrics_allow_ips": "192.0.2.10"}, 200),
        (OUTSIDER, {"metrics_allow_ips": "198.51.100.0/24,::1"}, 403),
        (("127.0.0.1", 40000), {"metrics_allow_ips": ""}, 403),  # token only
    ],
    ids=["loopback", "loopback-block", "ipv6-loopback", "ipv4-mapped", "outsider",
         "no-address", "allowed-network", "allowed-address", "other-network", "none-allowed"],
)
def test_metrics_answer_allowed_addresses_only(
    make_client: Callable[..., TestClient], peer: tuple[str, int],
    settings: dict[str, object], status: int,
) -> None:
    response = _from(make_client, peer, **settings).get("/metrics")
    assert response.status_code == status
    if status == 403:
        assert "sizer_" not in response.text and "SIZER_METRICS_TOKEN" in response.text
    else:
        assert "sizer_http_request_duration_seconds" in response.text


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        (f"Bearer {TOKEN}", 200),
        (f"bearer   {TOKEN} ", 200),
        (f"Bearer {TOKEN}x", 403),
        (f"Basic {TOKEN}", 403),
        ("Bearer ", 403),
        ("Bearer \u00e9\u00e9\u00e9", 403),
    ],
    ids=["token", "token-spaced", "wrong-token", "wrong-scheme", "empty", "latin-1"],
)
def test_the_token_opens_metrics_from_anywhere(
    make_client: Callable[..., TestClient], authorization: str, status: int
) -> None:
    client = _from(make_client, OUTSIDER, metrics_token=TOKEN)
    response = client.get("/metrics", headers={b"Authorization": authorization.encode("latin-1")})
    assert response.status_code == status


def test_without_a_configured_token_no_bearer_opens_metrics(
    make_client: Callable[..., TestClient],
) -> None:
    client = _from(make_client, OUTSIDER)
    assert client.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 403
    guess = {"Authorization": "Bearer " + "x" * 20}
    assert client.get("/metrics", headers=guess).status_code == 403


def test_readyz_tells_outsiders_only_whether_it_is_ready(
    make_client: Callable[..., TestClient],
) -> None:
    outsider = _from(make_client, OUTSIDER).get("/readyz")
    assert outsider.status_code == 200
    assert outsider.json() == {"status": "ok", "database": "reachable"}
    insider = _from(make_client, ("127.0.0.1", 40000)).get("/readyz").json()
    assert insider["status"] == "ok" and insider["migration"]["current"]
    with_token = _from(make_client, OUTSIDER, metrics_token=TOKEN).get(
        "/readyz", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert with_token["migration"] == insider["migration"]
    assert _from(make_client, OUTSIDER).get("/healthz").json() == {"status": "ok"}


def test_readyz_keeps_the_database_s_error_text_from_outsiders() -> None:
    from app.config import load_settings
    from app.main import create_app

    app = create_app(load_settings(database_url="postgresql+psycopg://nobody@127.0.0.1:1/x"))
    outsider = TestClient(app, client=OUTSIDER).get("/readyz")
    assert outsider.status_code == 503
    assert outsider.json() == {"status": "unavailable", "database": "unreachable"}
    insider = TestClient(app, client=("127.0.0.1", 40000)).get("/readyz")
    assert insider.json()["detail"].startswith("cannot connect to the database")
