"""Whom a request counts against, for every per-client limit (quote requests, staff sign-in).

The address is the one the server resolved: the TCP peer's, or a forwarded one only from the
proxies named in SIZER_FORWARDED_ALLOW_IPS (`sizer serve`), never a header of the client's own.
"""

from __future__ import annotations

import ipaddress

IPV6_CLIENT_PREFIX = 64
"""One IPv6 client is its /64: every host gets a whole /64 (RFC 6177), so counting single
addresses would give one machine 2^64 fresh limits."""
UNKNOWN_CLIENT = "unknown"
"""The address of a request without one (a test client, a Unix socket): all share one count."""


def client_identity(host: str | None) -> str:
    """The address as counted: IPv4 as it is (also when mapped into IPv6), IPv6 as its /64,
    anything else (no IP address) as given, or :data:`UNKNOWN_CLIENT`."""
    try:
        address = ipaddress.ip_address(host or "")
    except ValueError:
        return host or UNKNOWN_CLIENT
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # ::ffff:192.0.2.1 is 192.0.2.1
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_CLIENT_PREFIX), strict=False))
    return str(address)
