"""What a server bound to the network asks (the hub, MCP over HTTP): whether its address is
loopback, reachable from this machine alone, and whether a token is fit to guard it."""

from __future__ import annotations

import ipaddress

__all__ = ["MIN_TOKEN", "check_token", "loopback"]

#: The shortest token accepted from an operator: guessing must stay out of reach.
MIN_TOKEN = 16


def loopback(host: str) -> bool:
    """Say whether ``host`` is a loopback address (or ``localhost``): reachable from this
    machine alone, so a server bound to it needs no token of its own."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_token(token: str, what: str = "hub") -> str:
    """Return ``token`` if it is fit to guard the ``what`` server, else raise ValueError
    saying why: at least :data:`MIN_TOKEN` characters of printable ASCII, no space and no
    ';' (a cookie's separator)."""
    if not isinstance(token, str) or len(token) < MIN_TOKEN:
        raise ValueError(f"the {what} token must be at least {MIN_TOKEN} characters")
    if not token.isascii() or not token.isprintable() or " " in token or ";" in token:
        raise ValueError(f"the {what} token must be printable ASCII without spaces or ';'")
    return token
