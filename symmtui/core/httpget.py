"""One bounded HTTP GET for the health probe: a deadline on the whole exchange, the status and headers only.

The probe needs the status code and, for a redirect, where it points. Reading stops at the end of
the headers (at most ``MAX_HEAD`` bytes); the body is never read, so a 200 whose body streams forever
costs nothing. Every wait (name lookup, connect, TLS handshake, send, each read) is bounded by one
deadline for the whole request, so a server that dribbles a byte a second cannot stretch it, and by
a ``cancel`` event checked every ``SLICE`` seconds, so stopping never waits for a request.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_HEAD = 16 * 1024
"""Status line plus headers, at most (a health answer's are a few hundred bytes)."""

SLICE = 0.1
"""How often a wait looks at ``cancel``."""

MAX_TEXT = 200
"""Server-supplied text (reason phrase, Location) kept in a detail, at most, in characters."""


class GetFailed(Exception):
    """The request got no HTTP answer: ``kind`` (dns, refused, timeout, reset, error, cancelled) and words."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True)
class Answer:
    """The status line and the one header the probe uses."""

    status: int
    reason: str
    location: str | None


def shown(text: str) -> str:
    """Server-supplied text made safe to show on one line: controls escaped, length capped."""
    out = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    return out if len(out) <= MAX_TEXT else out[: MAX_TEXT - 1] + "…"


class _Deadline:
    def __init__(self, left: float, seconds: float, cancel: threading.Event | None, clock: Callable[[], float]) -> None:
        self.seconds = seconds  # the whole budget, as the user gave it (for the words)
        self.cancel = cancel
        self.clock = clock
        self.end = clock() + left

    def left(self) -> float:
        return self.end - self.clock()

    def wait(self, sock: socket.socket, *, write: bool, what: str) -> None:
        """Until ``sock`` is ready, the deadline passes (GetFailed timeout) or ``cancel`` is set."""
        while True:
            if self.cancel is not None and self.cancel.is_set():
                raise GetFailed("cancelled", "stopped")
            left = self.left()
            if left <= 0:
                raise GetFailed("timeout", what)
            rd, wr = ([], [sock]) if write else ([sock], [])
            ready = select.select(rd, wr, [], min(left, SLICE))
            if ready[0] or ready[1]:
                return


_Addrs = list[tuple[socket.AddressFamily, tuple[str, int]]]


def _addresses(host: str, port: int, flags: int = 0) -> _Addrs:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=flags)
    return [(fam, (str(addr[0]), int(addr[1]))) for fam, _t, _p, _c, addr in infos]


def _lookup(host: str, port: int, dl: _Deadline) -> _Addrs:
    """getaddrinfo in a helper thread: a lookup that outlives the deadline is left behind, not waited for."""
    box: list[_Addrs | OSError] = []

    def look() -> None:
        try:
            box.append(_addresses(host, port))
        except OSError as exc:
            box.append(exc)

    t = threading.Thread(target=look, name="symmtui-probe-dns", daemon=True)
    t.start()
    while t.is_alive():
        if dl.cancel is not None and dl.cancel.is_set():
            raise GetFailed("cancelled", "stopped")
        left = dl.left()
        if left <= 0:
            raise GetFailed("timeout", f"cannot resolve host {host!r} within {dl.seconds:g} s (DNS)")
        t.join(min(left, SLICE))
    got = box[0]
    if isinstance(got, OSError):
        raise GetFailed("dns", f"cannot resolve host {host!r} (DNS): check the host name in --url")
    return got


def _resolve(host: str, port: int, dl: _Deadline) -> _Addrs:
    """(family, address) for each address of ``host``; an IP literal needs no lookup."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return _lookup(host, port, dl)
    return _addresses(host, port, socket.AI_NUMERICHOST)


def _connect(host: str, port: int, dl: _Deadline) -> socket.socket:
    last: GetFailed | None = None
    for family, addr in _resolve(host, port, dl):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            code = sock.connect_ex(addr)
            if code in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
                dl.wait(sock, write=True,
                        what=f"connect timed out after {dl.seconds:g} s (host unreachable or firewalled)")
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code == 0:
                return sock
            if code == errno.ECONNREFUSED:
                last = GetFailed("refused", "connection refused (nothing listening yet: still starting)")
            else:
                last = GetFailed("error", f"cannot connect: {os.strerror(code)}")
        except BaseException:
            sock.close()
            raise
        sock.close()
    raise last or GetFailed("dns", f"cannot resolve host {host!r} (DNS): no address")


def _tls(sock: socket.socket, host: str, dl: _Deadline) -> ssl.SSLSocket:
    ctx = ssl.create_default_context()
    tls = ctx.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
    what = f"no TLS handshake within {dl.seconds:g} s (the server accepted the connection but hangs)"
    while True:
        try:
            tls.do_handshake()
            return tls
        except ssl.SSLWantReadError:
            dl.wait(tls, write=False, what=what)
        except ssl.SSLWantWriteError:
            dl.wait(tls, write=True, what=what)
        except ssl.SSLError as exc:
            raise GetFailed("error", f"TLS handshake failed: {exc.reason or exc}") from None


def _send(sock: socket.socket, data: bytes, dl: _Deadline) -> None:
    what = f"could not send the request within {dl.seconds:g} s (the server accepted the connection but hangs)"
    view = memoryview(data)
    while view:
        try:
            n = sock.send(view)
        except (BlockingIOError, ssl.SSLWantWriteError):
            dl.wait(sock, write=True, what=what)
            continue
        except ssl.SSLWantReadError:
            dl.wait(sock, write=False, what=what)
            continue
        view = view[n:]


def _read_head(sock: socket.socket, dl: _Deadline) -> bytes:
    """Bytes up to the blank line ending the headers (the body is left unread)."""
    buf = bytearray()
    what = f"no complete answer within {dl.seconds:g} s (the server accepted the connection but hangs)"
    while True:
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            end = buf.find(b"\n\n")
        if end >= 0:
            return bytes(buf[:end])
        if len(buf) > MAX_HEAD:
            raise GetFailed("error", f"the answer's headers exceed {MAX_HEAD // 1024} KiB: not a health endpoint")
        try:
            chunk = sock.recv(4096)
        except (BlockingIOError, ssl.SSLWantReadError):
            dl.wait(sock, write=False, what=what)
            continue
        except ssl.SSLWantWriteError:
            dl.wait(sock, write=True, what=what)
            continue
        if not chunk:
            if buf:
                raise GetFailed("reset", "the server closed the connection in the middle of its answer")
            raise GetFailed("reset", "the server closed the connection without an HTTP answer")
        buf += chunk


def _parse(head: bytes) -> Answer:
    lines = head.decode("latin-1").replace("\r\n", "\n").split("\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not (parts[1].isdigit() and len(parts[1]) == 3):
        raise GetFailed("error", f"not an HTTP answer: {shown(lines[0][:80])!s}")
    location = None
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == "location":
            location = value.strip()
    return Answer(int(parts[1]), parts[2].strip() if len(parts) > 2 else "", location)


def get_head(
    url: str,
    timeout: float,
    *,
    cancel: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
    budget: float | None = None,
) -> Answer:
    """GET ``url`` and return its status line and Location; everything within ``timeout`` seconds in all.

    ``budget``: the whole timeout the user gave, when ``timeout`` is what is left of it (for the words).
    Raises GetFailed (never another exception for network trouble).
    """
    dl = _Deadline(timeout, timeout if budget is None else budget, cancel, clock)
    parts = urlsplit(url)
    host = parts.hostname or ""
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        sock: socket.socket = _connect(host, port, dl)
    except OSError as exc:
        raise GetFailed("error", f"cannot connect: {exc.strerror or exc}") from None
    try:
        if secure:
            sock = _tls(sock, host, dl)
        netloc = f"[{host}]" if ":" in host else host
        if parts.port:
            netloc += f":{parts.port}"
        request = (f"GET {target} HTTP/1.1\r\nHost: {netloc}\r\nUser-Agent: symmtui-probe\r\n"
                   "Accept: */*\r\nConnection: close\r\n\r\n").encode("latin-1", "replace")
        _send(sock, request, dl)
        return _parse(_read_head(sock, dl))
    except ConnectionResetError:
        raise GetFailed("reset", "connection reset by the server") from None
    except OSError as exc:
        if exc.errno in (errno.ECONNRESET, errno.EPIPE):
            raise GetFailed("reset", "connection reset by the server") from None
        raise GetFailed("error", f"{exc.__class__.__name__}: {exc.strerror or exc}") from None
    finally:
        sock.close()
