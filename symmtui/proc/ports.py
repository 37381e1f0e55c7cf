"""The server's TCP port: parse it from the health URL, tell whether it is free, and who holds it."""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import socket
from urllib.parse import urlsplit

import psutil  # type: ignore[import-untyped,unused-ignore]


def url_port(url: str | None) -> tuple[str, int] | None:
    """(host, port) of an http(s) URL, with the scheme's default port; None if no URL or no host."""
    if not url:
        return None
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return parts.hostname, port


def listeners(port: int) -> list[int | None]:
    """Pids with a TCP socket listening on ``port`` (any address); None for a holder we cannot see."""
    out: list[int | None] = []
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError):
        return out
    for c in conns:
        if c.status == psutil.CONN_LISTEN and c.laddr and int(c.laddr.port) == port:
            pid = None if c.pid is None else int(c.pid)
            if pid not in out:
                out.append(pid)
    return out


def port_owner(port: int) -> str | None:
    """Who listens on ``port``, for messages: "pid 1234 (python -m sglang...)"; None if nobody."""
    holders = listeners(port)
    if not holders:
        return None
    out = []
    for pid in holders:
        if pid is None:
            out.append("a process of another user")
            continue
        try:
            cmd = " ".join(str(a) for a in psutil.Process(pid).cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            cmd = ""
        out.append(f"pid {pid} ({cmd})" if cmd else f"pid {pid}")
    return ", ".join(out)


def is_free(host: str, port: int) -> bool:
    """True if nothing listens on ``port``: a listener found in the socket table, or a bind that fails, says held.

    The bind uses SO_REUSEADDR like the servers do, so TIME_WAIT leftovers do not count as held.
    """
    if listeners(port):
        return False
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        infos = [(socket.AF_INET, socket.SOCK_STREAM, 0, "", ("0.0.0.0", port))]
    for family, kind, proto, _name, addr in infos:
        if not _local(str(addr[0])):
            continue  # another host's port: nothing to check from here
        try:
            with socket.socket(family, kind, proto) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(addr)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            # e.g. IPv6 disabled for "localhost" -> ::1: that address cannot be held either
    return True


def _local(host: str) -> bool:
    with contextlib.suppress(ValueError):
        ip = ipaddress.ip_address(host)
        if ip.is_loopback or ip.is_unspecified:
            return True
    try:
        local = {str(a.address) for addrs in psutil.net_if_addrs().values() for a in addrs}
    except OSError:
        return False
    return host in local
