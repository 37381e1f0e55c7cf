"""One health GET on an httpx transport: the status line and Location only (the body is never read), failures in words.

The caller owns the deadline: it runs ``get_head`` on an asyncio loop and cancels it when the time is
up or the user stops (httpx/httpcore close the connection on cancellation). ``Phase`` follows the
request through httpcore's trace hook, so a timeout can say what it was waiting for.
"""

from __future__ import annotations

import errno
import socket
import ssl
from typing import Any
from urllib.parse import urlsplit

import httpx  # importers are lazy themselves: `wait --log` with no URL never loads this module (~0.1 s)
from msgspec import Struct

MAX_TEXT = 200
"""Server-supplied text (reason phrase, Location, protocol errors) kept in a detail, at most, in characters."""

MAX_HEAD_KIB = 100
"""httpcore gives up on a status line plus headers longer than this (h11's incomplete-event limit)."""


class GetFailed(Exception):
    """The request got no HTTP answer: ``kind`` (dns, refused, reset, error) and words."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


class Answer(Struct, frozen=True):
    """The status line and the one header the probe uses."""

    status: int
    reason: str
    location: str | None


def shown(text: str) -> str:
    """Server-supplied text made safe to show on one line: controls escaped, length capped."""
    out = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    return out if len(out) <= MAX_TEXT else out[: MAX_TEXT - 1] + "…"


class Phase:
    """Where the request in flight is, from httpcore's trace events (for a timeout's words)."""

    def __init__(self) -> None:
        self.step = "connect"

    async def trace(self, name: str, info: dict[str, Any]) -> None:
        """httpcore's ``trace`` extension: remember the last step that started."""
        for step in ("connect_tcp", "start_tls", "send_request_headers", "receive_response_headers"):
            if name.endswith(f".{step}.started"):
                self.step = step

    def waiting_for(self, seconds: float, resolving: str | None) -> str:
        """The words for a deadline of ``seconds`` that passed in this step (``resolving``: the host being looked up)."""
        if self.step in ("connect", "connect_tcp"):
            if resolving is not None:
                return f"cannot resolve host {resolving!r} within {seconds:g} s (DNS)"
            return f"connect timed out after {seconds:g} s (host unreachable or firewalled)"
        if self.step == "start_tls":
            return f"no TLS handshake within {seconds:g} s (the server accepted the connection but hangs)"
        if self.step == "send_request_headers":
            return f"could not send the request within {seconds:g} s (the server accepted the connection but hangs)"
        return f"no complete answer within {seconds:g} s (the server accepted the connection but hangs)"


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(out) < 8:
        out.append(cur)
        group = cur.exceptions if isinstance(cur, BaseExceptionGroup) else ()
        out.extend(group[:4])
        cur = cur.__cause__ or cur.__context__
    return out


def failed(exc: httpx.HTTPError | httpx.InvalidURL, host: str) -> GetFailed:
    """httpx's exception as a kind and words (``host``: the name in the URL, for a DNS failure)."""
    chain = _chain(exc)
    errnos = {e.errno for e in chain if isinstance(e, OSError)}
    text = shown(str(exc) or exc.__class__.__name__)
    if any(isinstance(e, socket.gaierror) for e in chain):
        return GetFailed("dns", f"cannot resolve host {host!r} (DNS): check the host name in --url")
    if errno.ECONNREFUSED in errnos:
        return GetFailed("refused", "connection refused (nothing listening yet: still starting)")
    if errno.ECONNRESET in errnos or errno.EPIPE in errnos:
        return GetFailed("reset", "connection reset by the server")
    tls = next((e for e in chain if isinstance(e, ssl.SSLError)), None)
    if tls is not None:
        return GetFailed("error", f"TLS handshake failed: {shown(str(tls.reason or tls))}")
    if isinstance(exc, httpx.RemoteProtocolError):
        if "disconnected without sending a response" in str(exc):
            return GetFailed("reset", "the server closed the connection without a complete HTTP answer")
        if "buffer too long" in str(exc):
            return GetFailed("error", f"the answer's headers exceed {MAX_HEAD_KIB} KiB: not a health endpoint")
        return GetFailed("error", f"not an HTTP answer: {text}")
    if isinstance(exc, httpx.ConnectError):
        return GetFailed("error", f"cannot connect: {text}")
    return GetFailed("error", f"{exc.__class__.__name__}: {text}")


async def get_head(transport: httpx.AsyncHTTPTransport, url: str, phase: Phase) -> Answer:
    """GET ``url`` and return its status line and Location, leaving the body unread; raises GetFailed.

    Straight to the transport: one request, no redirect policy of httpx's own (the probe decides what
    to follow, and a Location that is not a URL is still an answer). No timeout of its own: the caller
    cancels it at its deadline.
    """
    host = urlsplit(url).hostname or ""
    try:
        request = httpx.Request("GET", url, headers={"User-Agent": "symmtui-probe", "Accept": "*/*"},
                                extensions={"trace": phase.trace})
        resp = await transport.handle_async_request(request)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise failed(exc, host) from None
    try:
        reason = resp.extensions.get("reason_phrase", b"")
        return Answer(
            resp.status_code,
            reason.decode("latin-1") if isinstance(reason, bytes) else str(reason),
            resp.headers.get("location"),
        )
    finally:
        await resp.aclose()  # the body is never read: closing drops the connection
