"""The HTTP health probe: one deadline per request, status and headers only, redirects kept on the probed host,
exponential backoff, clear details, never raises."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from symmtui.core.httpget import GetFailed, get_head, shown
from symmtui.errors import UserError

MAX_HOPS = 5
"""Redirects followed on the probed host (scheme, host and port unchanged), at most."""


@dataclass(frozen=True)
class ProbeResult:
    """One probe: ``ok`` when the endpoint answered 200. ``kind`` is one of up, http, redirect, refused,
    dns, timeout, reset, error, cancelled. ``detail`` says it in words, naming the URL that answered;
    ``url``: that URL (for ``redirect``: where it pointed, not followed)."""

    ok: bool
    kind: str
    detail: str
    status: int | None = None
    elapsed: float = 0.0
    url: str | None = None


def check_url(url: str) -> str:
    """The URL if it is an http(s) URL with a host; otherwise UserError (exit 2)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"bad --url {url!r}: give a full http:// or https:// URL, e.g. http://127.0.0.1:30000/health")
    try:
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError as exc:
        raise UserError(f"bad --url {url!r}: {exc}") from None
    return url


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    default = 443 if parts.scheme == "https" else 80
    return parts.scheme, (parts.hostname or "").lower(), port or default


class HttpProbe:
    """GET ``url`` until it answers 200: from ``min_interval`` doubling to ``max_interval`` (no hammering).

    ``check()`` does one request; ``run(stop, on_result)`` loops in the calling thread (the engine
    gives it its own); ``kick()`` makes the loop probe now (e.g. the log just said ready).
    """

    def __init__(
        self,
        url: str,
        timeout: float = 2.0,
        *,
        min_interval: float = 0.25,
        max_interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = check_url(url)
        self.timeout = timeout
        self.min_interval = min_interval
        self.max_interval = max_interval
        self._clock = clock
        self._host = urlsplit(url).hostname or ""
        self._kick = threading.Event()

    def close(self) -> None:
        """Nothing is kept between requests (each one opens and closes its own connection)."""

    def check(self, cancel: threading.Event | None = None) -> ProbeResult:
        """One GET (following redirects only on the probed host), all within the timeout; never raises.

        Only the status line and headers are read, never the body. ``cancel`` ends a request early.
        """
        t0 = self._clock()
        url = self.url
        home = _origin(self.url)
        hops = 0
        while True:
            left = self.timeout - (self._clock() - t0)
            try:
                if left <= 0:
                    raise GetFailed("timeout", f"no complete answer within {self.timeout:g} s (redirects)")
                answer = get_head(url, left, cancel=cancel, clock=self._clock, budget=self.timeout)
            except GetFailed as exc:
                detail = exc.detail if url == self.url else f"{exc.detail} (at {shown(url)}, redirected from {self.url})"
                return ProbeResult(False, exc.kind, detail, None, self._clock() - t0, url)
            dt = self._clock() - t0
            via = "" if url == self.url else f" (redirected from {self.url})"
            if answer.status in (301, 302, 303, 307, 308) and answer.location is not None:
                target = urljoin(url, answer.location.strip())
                if _origin(target) == home and hops < MAX_HOPS:
                    url, hops = target, hops + 1
                    continue
                why = "another host" if _origin(target) != home else f"more than {MAX_HOPS} redirects"
                return ProbeResult(
                    False, "redirect",
                    f"GET {shown(url)} answered {answer.status}, pointing to {shown(target)}: not followed ({why})"
                    + via, answer.status, dt, target)
            if answer.status == 200:
                return ProbeResult(True, "up", f"GET {shown(url)} answered 200 in {dt * 1000:.0f} ms{via}", 200, dt, url)
            reason = shown(answer.reason)
            return ProbeResult(False, "http", f"GET {shown(url)} answered {answer.status} {reason}".rstrip() + via,
                               answer.status, dt, url)

    def kick(self) -> None:
        """Probe again now instead of after the backoff."""
        self._kick.set()

    def run(self, stop: threading.Event, on_result: Callable[[ProbeResult], None]) -> None:
        """Probe until ``stop`` is set, calling ``on_result`` after each request."""
        interval = self.min_interval
        last_kind: str | None = None
        try:
            while not stop.is_set():
                self._kick.clear()
                res = self.check(cancel=stop)
                if stop.is_set():
                    return
                on_result(res)
                if res.kind != last_kind:
                    interval = self.min_interval  # something changed: look again soon
                else:
                    interval = min(self.max_interval, interval * 2)
                last_kind = res.kind
                deadline = self._clock() + interval
                while not stop.is_set() and not self._kick.is_set():
                    left = deadline - self._clock()
                    if left <= 0:
                        break
                    self._kick.wait(min(left, 0.1))
        finally:
            self.close()
