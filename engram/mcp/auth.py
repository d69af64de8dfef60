"""The MCP server's door over HTTP: a bearer token on every request (ADR 0124).

Served on a loopback address, the HTTP transport is reachable only from this machine, as
stdio is. Bound to any other address, anyone who reaches the port could call the tools as
any agent the server serves, so a token must be chosen (``--token`` or
``ENGRAM_MCP_TOKEN``) and every request must carry it (``Authorization: Bearer TOKEN``);
one without it is answered 401 before the SDK reads it. A token given on loopback is
enforced the same way.
"""

from __future__ import annotations

import hmac

from starlette.types import ASGIApp, Receive, Scope, Send

from engram.netguard import MIN_TOKEN, check_token, loopback

__all__ = ["MIN_TOKEN", "BearerGuard", "check_token", "loopback"]


class BearerGuard:
    """ASGI middleware: refuse, with 401, an HTTP request without the bearer token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {check_token(token, 'MCP')}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or ()).get(b"authorization", b"")
        if hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        body = b'{"error": "missing or wrong bearer token (Authorization: Bearer TOKEN)"}'
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="engram-mcp"'),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
