"""The metrics plug-in: symmtui as a Prometheus exporter (a Session observer, beside the bundle recorder and the notifier).

``BringupMetrics`` follows every message a Session posts (``Session.observe``) and keeps each node's
state, phase and elapsed time, the time to READY of every launch (a histogram seeded from the launch
history), the crashes by catalogue entry, and the Session's verdict. ``MetricsServer`` answers ``/metrics`` (prometheus_client's
exposition of that registry, never the global one) and ``/ready`` (200 only while the state is READY,
503 otherwise: a Kubernetes startupProbe or a load balancer can use the verdict instead of a /health
that answers before the server's warm-up). Bound to 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import errno
import socketserver
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from msgspec import Struct, field
from prometheus_client import CollectorRegistry, Counter, Histogram, make_wsgi_app
from prometheus_client.core import GaugeMetricFamily, Metric, StateSetMetricFamily
from prometheus_client.registry import Collector

from symmtui import clitext
from symmtui.errors import UserError
from symmtui.judge.board import NodeBoard
from symmtui.judge.readiness import Snapshot, State
from symmtui.launch.history import History
from symmtui.launch.profile import Profile
from symmtui.proc.ports import port_owner
from symmtui.session.core import Session
from symmtui.session.messages import EngineBatch, SessionMessage
from symmtui.session.spec import Metrics

READY_BUCKETS: Final = (10.0, 30.0, 60.0, 120.0, 180.0, 300.0, 450.0, 600.0, 900.0, 1200.0, 1800.0, 3600.0)
"""Seconds to READY: bring-ups of large models take minutes; a warm restart of a small one, seconds."""
STATES: Final = tuple(s.value for s in State)
Clock = Callable[[], float]


class _Node(Struct):
    """What one node's batches said last."""

    view: NodeBoard | None = None
    at: float = 0.0  # clock() when its Board arrived
    generation: int = -1
    ready_seen: set[int] = field(default_factory=set)  # generations whose READY went into the histogram
    crash_seen: set[int] = field(default_factory=set)


class BringupMetrics:
    """The observer: call it with every Session message (it returns at once and never raises on them).

    Each node's series carries its name in ``node``; ``/ready`` follows the Session's verdict (the
    aggregate a server of several nodes is judged by: READY when the head serves and every node got going)."""

    def __init__(self, *, profile: str, nodes: Iterable[str], ready_history: Iterable[float] = (),
                 clock: Clock = time.monotonic) -> None:
        names = list(nodes)
        self.profile = profile
        self.clock = clock
        self.registry = CollectorRegistry(auto_describe=True)
        self._lock = threading.Lock()
        self._nodes = {name: _Node() for name in names}
        self._verdict: State | None = None
        self.ready_seconds = Histogram("symmtui_bringup_ready_seconds",
                                       "Seconds from launch (or the start of watching) to READY, one per launch",
                                       ["profile", "node"], buckets=READY_BUCKETS, registry=self.registry)
        self.crashes = Counter("symmtui_bringup_crashes", "Crashed bring-ups by the catalogue entry that "
                               "diagnosed them (entry=\"unknown\": no entry matched)",
                               ["profile", "node", "entry"], registry=self.registry)
        for name in names:
            self.ready_seconds.labels(profile, name)  # every node's series exists from the start (count 0)
        for seconds in ready_history:
            self.ready_seconds.labels(profile, names[0]).observe(seconds)
        self.registry.register(_StateCollector(self))

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(self._nodes)

    def __call__(self, message: SessionMessage) -> None:
        """Session observer: each node's state from its batches; a READY or CRASHED once per launch."""
        if not isinstance(message, EngineBatch) or message.node not in self._nodes:
            return
        view, gen = message.board.view(message.node), message.generation
        snap = view.snapshot
        with self._lock:
            node = self._nodes[message.node]
            if gen < node.generation:
                return  # a batch of the launch before a relaunch
            node.generation = gen
            node.view, node.at = view, self.clock()
            self._verdict = message.board.state
            new_ready = snap.state is State.READY and gen not in node.ready_seen
            new_crash = snap.state is State.CRASHED and gen not in node.crash_seen
            if new_ready:
                node.ready_seen.add(gen)
            if new_crash:
                node.crash_seen.add(gen)
        if new_ready:
            self.ready_seconds.labels(self.profile, message.node).observe(max(0.0, view.elapsed))
        elif new_crash:
            said = view.cause
            entry = (said.entry or said.event.rule_id) if said is not None else "unknown"
            self.crashes.labels(self.profile, message.node, entry).inc()

    def current(self, node: str) -> tuple[Snapshot | None, float]:
        """A node's last snapshot and its elapsed seconds now: its Board's figure, counted on by this clock
        between Boards until a final state."""
        with self._lock:
            n = self._nodes[node]
            view, at = n.view, n.at
        if view is None:
            return None, 0.0
        if view.state.final:
            return view.snapshot, view.elapsed
        return view.snapshot, view.elapsed + max(0.0, self.clock() - at)

    def state_of(self, node: str) -> str:
        snap, _ = self.current(node)
        return snap.state.value if snap is not None else State.WAITING.value

    def overall(self) -> str:
        """The Session's verdict now (what /ready judges)."""
        with self._lock:
            verdict = self._verdict
        return verdict.value if verdict is not None else State.WAITING.value

    @property
    def ready(self) -> bool:
        """True while the verdict is READY (what /ready answers)."""
        return self.overall() == State.READY.value

    def ready_text(self) -> str:
        """/ready's body: the state, and each node's with several ("ready (gpu-a ready, gpu-b starting)")."""
        if len(self._nodes) == 1:
            return self.overall()
        return f"{self.overall()} ({', '.join(f'{n} {self.state_of(n)}' for n in self._nodes)})"


class _StateCollector(Collector):
    """state, phase and elapsed, read at scrape time (elapsed keeps counting between log lines)."""

    def __init__(self, owner: BringupMetrics) -> None:
        self.owner = owner

    def collect(self) -> Iterator[Metric]:
        o = self.owner
        states = StateSetMetricFamily("symmtui_bringup_state", "The bring-up's state (1 for the current one)",
                                      labels=["profile", "node"])
        phase = GaugeMetricFamily("symmtui_bringup_phase", "The bring-up's phase now (1 for the current one)",
                                  labels=["profile", "node", "phase"])
        elapsed = GaugeMetricFamily("symmtui_bringup_elapsed_seconds",
                                    "Seconds since the launch (or the start of watching); frozen at the verdict",
                                    labels=["profile", "node"])
        for node in o.nodes:
            snap, seconds = o.current(node)
            state = snap.state.value if snap is not None else State.WAITING.value
            states.add_metric([o.profile, node], {s: s == state for s in STATES})
            if snap is not None and snap.phase:
                phase.add_metric([o.profile, node, snap.phase], 1.0)
            elapsed.add_metric([o.profile, node], seconds)
        yield states
        yield phase
        yield elapsed

    def describe(self) -> Iterator[Metric]:
        return iter(())


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        """No access log on the terminal the verb prints to."""


class _ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-request (reset, broken pipe, timeout) is not an error: nothing on
        the verb's stderr. Anything else keeps socketserver's report."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class MetricsServer:
    """``/metrics`` and ``/ready`` over HTTP on ``host:port`` in a daemon thread; :meth:`close` stops it."""

    def __init__(self, metrics: BringupMetrics, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.metrics = metrics
        prom = make_wsgi_app(metrics.registry)

        def app(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("PATH_INFO") == "/ready":
                ok = metrics.ready
                start("200 OK" if ok else "503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8")])
                return [f"{metrics.ready_text()}\n".encode()]
            return prom(environ, start)  # type: ignore[no-any-return]

        try:
            self._server = make_server(host, port, app, server_class=_ThreadingServer, handler_class=_Quiet)
        except OSError as exc:
            raise UserError(_bind_error(host, port, exc)) from None
        self.host, self.port = host, int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="symmtui-metrics", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _bind_error(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        owner = port_owner(port)
        held = f" (held by {owner})" if owner else ""
        return f"--metrics-port {port}: the port is in use on {host}{held}: pick another port"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"--metrics-port {port}: not allowed to listen there (ports below 1024 need root): pick a port above 1024"
    return f"--metrics-host {host} --metrics-port {port}: cannot listen ({exc.strerror or exc}): check the address"


def ready_history(profile: Profile | None) -> list[float]:
    """Seconds to READY of this profile's earlier launches (the launch history); [] for an attach."""
    if profile is None:
        return []
    try:
        entries = History().entries()
    except (OSError, UserError):
        return []
    return [e.ready_after for e in entries if e.profile_key == profile.key and e.ready_after is not None]


def plug_in(session: Session, spec: Metrics) -> MetricsServer:
    """The metrics plug-in: observe ``session`` and serve its metrics (a taken port is a UserError before
    anything started). The Session's close ends it, after ``spec.linger`` seconds of answering with the
    verdict (`wait --metrics-linger`; Ctrl-C ends the linger early)."""
    metrics = BringupMetrics(profile=session.name, nodes=session.nodes,
                             ready_history=ready_history(session.spec.head.profile))
    server = MetricsServer(metrics, host=spec.host, port=spec.port)
    session.observe(metrics, name="metrics")

    def close() -> None:
        try:
            if spec.linger:
                linger(spec.linger, server.url)
        finally:
            server.close()

    session.on_close(close)
    return server


def linger(seconds: float, url: str | None = None) -> None:
    """Keep the endpoint answering with the verdict (a probe reads it) until ``seconds`` or Ctrl-C.

    Says so on stderr first (``url``: the endpoint's), inside the Ctrl-C guard: once that line is out,
    Ctrl-C ends the linger and the exit code stays the verdict's."""
    try:
        where = f" on {url}/ready" if url else ""
        clitext.note(f"serving the verdict{where} for {seconds:g} s (--metrics-linger); Ctrl-C ends it")
        threading.Event().wait(seconds)
    except KeyboardInterrupt:
        return
