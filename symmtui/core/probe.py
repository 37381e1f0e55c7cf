"""The HTTP health probe: httpx with a timeout on every request, exponential backoff, clear details, never raises."""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from symmtui.errors import UserError


@dataclass(frozen=True)
class ProbeResult:
    """One probe: ``ok`` when the endpoint answered 200. ``kind`` is one of up, http, refused, dns,
    timeout, reset, error. ``detail`` says it in words."""

    ok: bool
    kind: str
    detail: str
    status: int | None = None
    elapsed: float = 0.0


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


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(out) < 8:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def classify(exc: BaseException, timeout: float, host: str) -> tuple[str, str]:
    """(kind, detail) for an httpx exception."""
    chain = _chain(exc)
    text = " / ".join(str(e) for e in chain if str(e))
    low = text.lower()
    errnos = {getattr(e, "errno", None) for e in chain}
    if isinstance(exc, httpx.ConnectTimeout):
        return "timeout", f"connect timed out after {timeout:g} s (host unreachable or firewalled)"
    if isinstance(exc, httpx.TimeoutException):
        return "timeout", f"no answer within {timeout:g} s (the server accepted the connection but hangs)"
    if (
        "name or service not known" in low
        or "nodename nor servname" in low
        or "temporary failure in name resolution" in low
        or "no address associated" in low
        or "getaddrinfo" in low
        or any(isinstance(e, OSError) and e.__class__.__name__ == "gaierror" for e in chain)
    ):
        return "dns", f"cannot resolve host {host!r} (DNS): check the host name in --url"
    if errno.ECONNREFUSED in errnos or "connection refused" in low:
        return "refused", "connection refused (nothing listening yet: still starting)"
    if errno.ECONNRESET in errnos or "reset by peer" in low:
        return "reset", "connection reset by the server"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "reset", "the server closed the connection without an HTTP answer"
    if isinstance(exc, httpx.ConnectError):
        return "error", f"cannot connect: {text or exc.__class__.__name__}"
    return "error", f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__


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
        self._client: httpx.Client | None = None

    def _get_client(self) -> httpx.Client:
        if self._client is None:
            # trust_env=False: a health check goes straight to the server, never through $HTTP_PROXY.
            self._client = httpx.Client(timeout=httpx.Timeout(self.timeout), trust_env=False,
                                        follow_redirects=True, headers={"User-Agent": "symmtui-probe"})
        return self._client

    def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def check(self) -> ProbeResult:
        """One GET with the timeout; never raises."""
        t0 = self._clock()
        try:
            resp = self._get_client().get(self.url)
        except (httpx.HTTPError, OSError) as exc:  # OSError: a socket error httpx did not wrap
            kind, detail = classify(exc, self.timeout, self._host)
            return ProbeResult(False, kind, detail, None, self._clock() - t0)
        dt = self._clock() - t0
        if resp.status_code == 200:
            return ProbeResult(True, "up", f"GET {self.url} answered 200 in {dt * 1000:.0f} ms", 200, dt)
        reason = resp.reason_phrase or ""
        return ProbeResult(False, "http", f"GET {self.url} answered {resp.status_code} {reason}".rstrip(),
                           resp.status_code, dt)

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
                res = self.check()
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
