"""Which client a request comes from, as the limits on clients count it.

The address is the connection's own; `X-Forwarded-For` is read only as far as the
TRUSTED_PROXIES proxies in front wrote it (DRF's NUM_PROXIES, read the way DRF reads it), so a
client cannot name a new address for each request. An IPv6 client counts as its /64, the block
one subscriber is given: each of its addresses counted alone, it could take a new one for
every request.
"""

from __future__ import annotations

import ipaddress


def scope_header(scope: dict, name: bytes) -> str | None:
    """A header of an ASGI request as Django reads it into `META`: every line of that name,
    joined with commas (None if there is none). So a limit or a handshake that reads a header
    here sees what a view sees: a second `Authorization` line makes one header that DRF
    refuses, not a first one taken alone."""
    values = [value.decode("latin-1") for key, value in scope.get("headers") or () if key == name]
    return ",".join(values) if values else None


def authorization_parts(header: str) -> tuple[str, str] | None:
    """An `Authorization` header as DRF's TokenAuthentication reads it: split on any
    whitespace (a tab too), a scheme in any case and one credential after it; else None, which
    DRF refuses. Read so by the per-client limit and the socket handshake, so that `token KEY`
    and `Token  KEY` are one client and one sign-in, as over REST."""
    parts = header.split()
    return (parts[0].lower(), parts[1]) if len(parts) == 2 else None


def forwarded_for(remote: str, forwarded: str | None, num_proxies: int) -> str:
    """The address the nearest trusted proxy saw: `remote` itself with no proxy in front."""
    if num_proxies == 0 or not forwarded:
        return remote
    hops = forwarded.split(",")
    return hops[-min(num_proxies, len(hops))].strip()


def client_block(ident: str) -> str:
    """An IPv4 address as it is; an IPv6 one as its /64; anything else (a proxy's odd header)
    as it is."""
    try:
        address = ipaddress.ip_address(ident)
    except ValueError:
        return ident
    if address.version == 4:
        return ident
    if address.ipv4_mapped is not None:  # an IPv4 client on a dual-stack socket
        return str(address.ipv4_mapped)
    return str(ipaddress.ip_network(f"{address}/64", strict=False))
