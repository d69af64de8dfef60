"""The hub's door: a token, a Host check, CSRF on writes and strict response headers.

:class:`Guard` is ASGI middleware in front of every route (ADR 0042):

- the ``Host`` header must name a loopback address or a host the operator allowed, so a
  page on another site cannot reach the hub through DNS rebinding;
- every request carries the token: ``Authorization: Bearer TOKEN``, the ``engram_hub``
  cookie, or ``?token=TOKEN`` on a first visit, answered with a redirect that sets the
  cookie (HttpOnly, SameSite=Strict) and drops the token from the address;
- every response gets a Content-Security-Policy that allows no inline script or style and
  no other origin, and headers that forbid framing, sniffing and referrers.

Writes are POST only and each form carries a CSRF token (:meth:`Guard.csrf_ok`), derived
from the access token so a page on another origin can neither read nor guess it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engram.netguard import check_token

COOKIE = "engram_hub"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


def new_token() -> str:
    """Return a fresh random access token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def host_name(header: str) -> str:
    """Return the host part of a ``Host`` header value (no port, no IPv6 brackets)."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """ASGI middleware: Host check, token, security headers (see the module docstring)."""

    def __init__(
        self, app: ASGIApp, *, token: str, hosts: Iterable[str] = (), public: Iterable[str] = ()
    ) -> None:
        self.app = app
        self.token = check_token(token)
        self.hosts = LOOPBACK | {h.lower() for h in hosts}
        self.public = tuple(public)  # path prefixes served without the token (static files)
        self.csrf = hmac.new(token.encode(), b"engram-hub-csrf", hashlib.sha256).hexdigest()

    def csrf_ok(self, value: object) -> bool:
        """Say whether a form's CSRF field holds this hub's CSRF token."""
        return isinstance(value, str) and hmac.compare_digest(value.encode(), self.csrf.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a foreign Host or a missing token; add the headers to every response."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        host = host_name(headers.get("host", ""))
        if host not in self.hosts:
            await _plain(secured, 400, f"host {host!r} is not served here (DNS rebinding guard)")
            return
        if scope["path"].startswith(self.public):
            await self.app(scope, receive, secured)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        given = query.get("token")
        if given is not None and scope["method"] == "GET" and self._same(given):
            rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
            # "//host" would be another origin to the browser: only our own paths go back.
            path = "/" + quote(scope["path"]).lstrip("/")
            await _redirect(secured, path + (f"?{rest}" if rest else ""), self.token)
            return
        if not self._authorised(headers):
            await _plain(
                secured, 401, "engram hub: open the address printed at start (it holds the token)"
            )
            return
        await self.app(scope, receive, secured)

    def _authorised(self, headers: dict[str, str]) -> bool:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and self._same(auth[7:].strip()):
            return True
        cookie: SimpleCookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is no token
            return False
        morsel = cookie.get(COOKIE)
        return morsel is not None and self._same(morsel.value)

    def _same(self, value: str) -> bool:
        return hmac.compare_digest(value.encode("utf-8", "replace"), self.token.encode())


async def _plain(send: Any, status: int, text: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8")],
        }
    )
    await send({"type": "http.response.body", "body": text.encode()})


async def _redirect(send: Any, location: str, token: str) -> None:
    cookie = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", location.encode()), (b"set-cookie", cookie.encode())],
        }
    )
    await send({"type": "http.response.body", "body": b""})
