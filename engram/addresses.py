"""Network addresses as the servers judge them: what is loopback (the hub, MCP over HTTP)."""

from __future__ import annotations

import ipaddress

__all__ = ["loopback"]


def loopback(host: str) -> bool:
    """Say whether ``host`` is a loopback address (or ``localhost``): reachable from this
    machine alone, so a server bound to it needs no token of its own."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
