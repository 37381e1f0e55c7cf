"""Who may use `symmtui serve`: the token of the printed URL (or its cookie), and Host and Origin checks."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

TOKEN_ENV = "SYMMTUI_SERVE_TOKEN"  # a fixed token (for a bookmark); empty: none, refused off loopback
MIN_TOKEN = 16  # characters of a token given in TOKEN_ENV
MAX_TOKEN_URL = 1024  # its characters once percent-encoded in the URL (aiohttp reads a request line of 8190 bytes)
LOOPBACK_NAMES = frozenset({"localhost"})


def make_token() -> str:
    """A fresh random token (256 bits, URL-safe), as Jupyter makes one."""
    return secrets.token_urlsafe(32)


def cookie_value(token: str) -> str:
    """What the cookie carries for ``token``: its SHA-256 in hex (a cookie holds any token so, whatever characters it
    has: ``;``, ``"``, ``%41``, ``é``)."""
    return hashlib.sha256(b"symmtui-serve:" + token.encode("utf-8", "surrogatepass")).hexdigest() if token else ""


def cookie_name(port: int) -> str:
    """The cookie that carries the token after the first page (cookies ignore ports: one per port)."""
    return f"symmtui-serve-{port}"


def is_loopback_name(host: str) -> bool:
    """``localhost`` or a loopback IP literal (127.0.0.0/8, ::1)."""
    name = host.lower().rstrip(".")
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.strip("[]").split("%")[0]).is_loopback
    except ValueError:
        return False


def host_names(bound: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The names a request may carry in Host/Origin: the bound address (and, on a wildcard address,
    this machine's addresses and host names); loopback names are always accepted."""
    names = {bound.lower().strip("[]"), *(e.lower().strip("[]") for e in extra)}
    return frozenset(n for n in names if n)


def split_host(value: str) -> tuple[str, int | None] | None:
    """``name[:port]`` of a Host header or an Origin's netloc, or None when it is not one."""
    try:
        parts = urlsplit("//" + value)
        port = parts.port
    except ValueError:
        return None
    if parts.hostname is None or parts.username is not None or parts.path:
        return None
    return parts.hostname.lower(), port


class Guard:
    """Checks every request: Host names this server (no DNS rebinding), a WebSocket's Origin is this
    page, and the token (query ``token`` or the cookie) matches; an empty token checks none."""

    def __init__(self, token: str, port: int, names: frozenset[str]) -> None:
        self.token = token
        self.port = port
        self.names = names
        self.cookie = cookie_name(port)
        self.cookie_value = cookie_value(token)

    def _ours(self, name: str, port: int | None, default_port: int) -> bool:
        if (port if port is not None else default_port) != self.port:
            return False
        return is_loopback_name(name) or name.strip("[]") in self.names

    def host_ok(self, host: str | None) -> bool:
        parsed = split_host(host or "")
        return parsed is not None and self._ours(parsed[0], parsed[1], 80)

    def origin_ok(self, origin: str | None) -> bool:
        """A browser's WebSocket always names its page; a client without Origin is no page of another site."""
        if origin is None:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or parts.path not in ("", "/"):
            return False
        parsed = split_host(parts.netloc)
        return parsed is not None and self._ours(parsed[0], parsed[1], 443 if parts.scheme == "https" else 80)

    def token_ok(self, query_token: str | None, cookie_token: str | None) -> bool:
        if not self.token:
            return True
        return any(hmac.compare_digest(want.encode(), given.encode()) for want, given in
                   ((self.token, query_token), (self.cookie_value, cookie_token)) if given is not None)

    def refusal(self, host: str | None, origin: str | None, query_token: str | None,
                cookie_token: str | None, websocket: bool) -> str | None:
        """Why this request is refused (one line), or None when it may go on."""
        if not self.host_ok(host):
            return "this server answers only to its own address (Host); open the URL symmtui serve printed"
        if websocket and not self.origin_ok(origin):
            return "a WebSocket from another site's page (Origin) is refused"
        if not self.token_ok(query_token, cookie_token):
            return "no valid token: open the URL symmtui serve printed (it ends with ?token=...)"
        return None

    def middleware(self) -> Callable[..., Awaitable[Any]]:
        """The aiohttp middleware: 403 with the reason, before any handler runs."""
        from aiohttp import web  # aiohttp (~190 ms): the token and host checks before it run without it

        @web.middleware
        async def guard(request: web.Request, handler: Callable[[web.Request], Awaitable[Any]]) -> Any:
            websocket = request.headers.get("Upgrade", "").lower() == "websocket"
            why = self.refusal(request.headers.get("Host"), request.headers.get("Origin"),
                               request.query.get("token"), request.cookies.get(self.cookie), websocket)
            if why is not None:
                return web.Response(status=403, text=f"symmtui serve: {why}\n")
            response = await handler(request)
            if self.token and request.query.get("token") is not None and isinstance(response, web.Response):
                response.set_cookie(self.cookie, self.cookie_value, httponly=True, samesite="Strict", path="/")
            return response

        return guard
