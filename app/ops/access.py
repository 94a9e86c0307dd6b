"""Who may read the service's internals: /metrics and the migration ids in /readyz.

Both tell an outsider what runs here (routes, traffic, the exact schema version), so they answer
only a client whose address is in SIZER_METRICS_ALLOW_IPS (loopback by default) or that sends
``Authorization: Bearer <SIZER_METRICS_TOKEN>`` (what Prometheus' ``authorization`` setting
sends). The address is the TCP peer's, or the forwarded one only where `sizer serve` was told
to believe the proxy (SIZER_FORWARDED_ALLOW_IPS).
"""

from __future__ import annotations

import hmac
import ipaddress

from starlette.requests import Request

from app.config import Settings


def _bearer(request: Request) -> bytes | None:
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip().encode("utf-8", "surrogateescape")


def _allowed_address(host: str | None, settings: Settings) -> bool:
    if host is None:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # a Unix socket or a test client: no address to allow
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1 on a dual-stack socket
    return any(address in ipaddress.ip_network(network)
               for network in settings.metrics_allow_ips)


def may_read_internals(request: Request) -> bool:
    """True for an allowed address or the right token (compared in constant time)."""
    settings: Settings = request.app.state.settings
    token = settings.metrics_token
    sent = _bearer(request)
    if token is not None and sent is not None and hmac.compare_digest(
        sent, token.get_secret_value().encode("utf-8")
    ):
        return True
    return _allowed_address(request.client.host if request.client else None, settings)
