"""The HTTP health probe on httpx: one deadline per check (enforced by asyncio cancellation), status and headers
only, redirects kept on the probed host, exponential backoff, clear details, never raises."""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar
from urllib.parse import urljoin, urlsplit

import httpx
from msgspec import Struct

from symmtui.bringup.httpget import GetFailed, Phase, get_head, shown
from symmtui.errors import UserError

if TYPE_CHECKING:  # asyncio, ssl and httpx load with the first check: `wait --log` alone never pays for them
    import ssl

MAX_HOPS = 5
"""Redirects followed on the probed host (scheme, host and port unchanged), at most."""

STOP_POLL = 0.05
"""How often a check in flight looks at the stop event, in seconds."""

_P = ParamSpec("_P")
_T = TypeVar("_T")


class ProbeResult(Struct, frozen=True):
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


class _Lookups(ThreadPoolExecutor):
    """The check's loop executor, where asyncio runs getaddrinfo: each job in its own daemon thread, never joined.

    getaddrinfo cannot be interrupted, so a lookup that outlives the deadline is left behind: neither
    the check, the loop's shutdown nor the process exit waits for a stuck resolver.
    """

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.running = 0
        self._count = threading.Lock()

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        fut: Future[_T] = Future()

        def run() -> None:
            if not fut.set_running_or_notify_cancel():
                return
            with self._count:
                self.running += 1
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001  (handed to the coroutine awaiting it)
                fut.set_exception(exc)
            else:
                fut.set_result(result)
            finally:
                with self._count:
                    self.running -= 1

        threading.Thread(target=run, name="symmtui-probe-dns", daemon=True).start()
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to wait for: each job's thread is a daemon."""


async def _until_set(event: threading.Event) -> None:
    while not event.is_set():
        await asyncio.sleep(STOP_POLL)


class _Where(Struct):
    """The URL a check is at and how far its request got (read when the deadline cancels it)."""

    url: str
    phase: Phase


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
        self._tls: ssl.SSLContext | None = None

    def close(self) -> None:
        """Nothing is kept between checks (each one opens and closes its own transport and connection)."""

    def check(self, cancel: threading.Event | None = None) -> ProbeResult:
        """One GET (following redirects only on the probed host), all within the timeout; never raises.

        Runs on an event loop of its own in the calling thread: at the deadline, or when ``cancel`` is
        set, the request is cancelled wherever it is (lookup, connect, TLS, a header dribbled a byte at a
        time). Only the status line and headers are read, never the body.
        """
        if self._tls is None:
            self._tls = ssl.create_default_context()  # once per probe: loading the CA store costs milliseconds
        lookups = _Lookups()
        loop = asyncio.new_event_loop()
        loop.set_default_executor(lookups)
        try:
            return loop.run_until_complete(self._check(cancel, lookups, self._tls))
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _check(self, cancel: threading.Event | None, lookups: _Lookups, tls: ssl.SSLContext) -> ProbeResult:
        t0 = self._clock()
        where = _Where(self.url, Phase())
        work = asyncio.ensure_future(self._follow(where, tls, t0))
        tasks: set[asyncio.Future[Any]] = {work}
        if cancel is not None:
            tasks.add(asyncio.ensure_future(_until_set(cancel)))
        done, _ = await asyncio.wait(tasks, timeout=max(self.timeout, 0.0), return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # httpx closes the connection as it unwinds
        if work in done:
            return work.result()
        dt = self._clock() - t0
        if cancel is not None and cancel.is_set():
            return ProbeResult(False, "cancelled", "stopped", None, dt, where.url)
        host = urlsplit(where.url).hostname or ""
        detail = where.phase.waiting_for(self.timeout, host if lookups.running else None)
        return ProbeResult(False, "timeout", self._at(detail, where.url), None, dt, where.url)

    def _at(self, detail: str, url: str) -> str:
        return detail if url == self.url else f"{detail} (at {shown(url)}, redirected from {self.url})"

    async def _follow(self, where: _Where, tls: ssl.SSLContext, t0: float) -> ProbeResult:
        home = _origin(self.url)
        hops = 0
        # trust_env=False: a health check goes straight to the server, never through $HTTP_PROXY.
        # No httpx timeout and no retries: the whole check's deadline cancels this coroutine.
        async with httpx.AsyncHTTPTransport(verify=tls, trust_env=False, retries=0) as transport:
            while True:
                url = where.url
                try:
                    answer = await get_head(transport, url, where.phase)
                except GetFailed as exc:
                    return ProbeResult(False, exc.kind, self._at(exc.detail, url), None, self._clock() - t0, url)
                dt = self._clock() - t0
                via = "" if url == self.url else f" (redirected from {self.url})"
                if answer.status in (301, 302, 303, 307, 308) and answer.location is not None:
                    try:
                        target = urljoin(url, answer.location.strip())
                    except ValueError:  # e.g. "http://[::1": urljoin refuses it, so nothing to follow
                        return ProbeResult(
                            False, "redirect",
                            f"GET {shown(url)} answered {answer.status}, pointing to {shown(answer.location)}: "
                            f"not followed (not a valid URL){via}", answer.status, dt, None)
                    if _origin(target) == home and hops < MAX_HOPS:
                        where.url, where.phase, hops = target, Phase(), hops + 1
                        continue
                    why = "another host" if _origin(target) != home else f"more than {MAX_HOPS} redirects"
                    return ProbeResult(
                        False, "redirect",
                        f"GET {shown(url)} answered {answer.status}, pointing to {shown(target)}: not followed ({why})"
                        + via, answer.status, dt, target)
                if answer.status == 200:
                    return ProbeResult(True, "up", f"GET {shown(url)} answered 200 in {dt * 1000:.0f} ms{via}",
                                       200, dt, url)
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
