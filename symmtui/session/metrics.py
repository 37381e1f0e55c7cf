"""symmtui as a Prometheus exporter: a Session observer feeding its own registry, served with /ready.

``BringupMetrics`` follows every message a Session posts (``Session.observe``) and keeps the state, the
phase, the elapsed time, the time to READY of every launch (a histogram seeded from the launch history)
and the crashes by catalogue entry. ``MetricsServer`` answers ``/metrics`` (prometheus_client's
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
from dataclasses import dataclass, field
from typing import Any, Final
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Histogram, make_wsgi_app
from prometheus_client.core import GaugeMetricFamily, Metric, StateSetMetricFamily
from prometheus_client.registry import Collector

from symmtui.core.readiness import Snapshot, State
from symmtui.errors import UserError
from symmtui.session.messages import EngineBatch, SessionMessage, VerdictReached

READY_BUCKETS: Final = (10.0, 30.0, 60.0, 120.0, 180.0, 300.0, 450.0, 600.0, 900.0, 1200.0, 1800.0, 3600.0)
"""Seconds to READY: bring-ups of large models take minutes; a warm restart of a small one, seconds."""
STATES: Final = tuple(s.value for s in State)
Clock = Callable[[], float]


@dataclass
class _Node:
    """What one node's Session said last."""

    snap: Snapshot | None = None
    at: float = 0.0  # clock() when snap arrived
    generation: int = -1
    ready_seen: set[int] = field(default_factory=set)  # generations whose READY went into the histogram
    crash_seen: set[int] = field(default_factory=set)


class BringupMetrics:
    """The observer: call it with every Session message (it returns at once and never raises on them).

    One node (``node=``: the instance itself is the observer) or several (``nodes=``: ``observer(name)``
    for each node's Session; ``ready`` only when every node is READY)."""

    def __init__(self, *, profile: str, node: str | None = None, nodes: Iterable[str] = (),
                 ready_history: Iterable[float] = (), clock: Clock = time.monotonic) -> None:
        names = list(nodes) or [node or "local"]
        self.profile, self.node = profile, names[0]
        self.clock = clock
        self.registry = CollectorRegistry(auto_describe=True)
        self._lock = threading.Lock()
        self._nodes = {name: _Node() for name in names}
        self.aggregate: Callable[[], State] | None = None
        """Several nodes: the state their verdict aggregates to (a [[nodes]] profile's rule); /ready follows it."""
        self.ready_seconds = Histogram("symmtui_bringup_ready_seconds",
                                       "Seconds from launch (or the start of watching) to READY, one per launch",
                                       ["profile", "node"], buckets=READY_BUCKETS, registry=self.registry)
        self.crashes = Counter("symmtui_bringup_crashes", "Crashed bring-ups by the catalogue entry that "
                               "diagnosed them (entry=\"unknown\": no entry matched)",
                               ["profile", "node", "entry"], registry=self.registry)
        for name in names:
            self.ready_seconds.labels(profile, name)  # every node's series exists from the start (count 0)
        for seconds in ready_history:
            self.ready_seconds.labels(profile, self.node).observe(seconds)
        self.registry.register(_StateCollector(self))

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(self._nodes)

    def __call__(self, message: SessionMessage) -> None:
        self._observe(self.node, message)

    def observer(self, node: str) -> Callable[[SessionMessage], None]:
        """The observer of node ``node``'s Session."""
        if node not in self._nodes:
            raise KeyError(node)
        return lambda message: self._observe(node, message)

    def _observe(self, name: str, message: SessionMessage) -> None:
        if isinstance(message, EngineBatch):
            self._update(name, message.snapshot, message.generation)
        elif isinstance(message, VerdictReached):
            snap, gen = message.snapshot, message.generation
            self._update(name, snap, gen)
            node = self._nodes[name]
            if snap.state is State.READY and gen not in node.ready_seen:
                node.ready_seen.add(gen)
                took = snap.verdict_elapsed if snap.verdict_elapsed is not None else snap.elapsed
                self.ready_seconds.labels(self.profile, name).observe(max(0.0, took))
            elif snap.state is State.CRASHED and gen not in node.crash_seen:
                node.crash_seen.add(gen)
                entry = snap.cause.rule_id if snap.cause is not None and snap.cause.rule_id else "unknown"
                self.crashes.labels(self.profile, name, entry).inc()

    def _update(self, name: str, snap: Snapshot, generation: int) -> None:
        with self._lock:
            node = self._nodes[name]
            if generation < node.generation:
                return  # a batch of the launch before a relaunch
            node.generation = generation
            node.snap, node.at = snap, self.clock()

    def current(self, node: str | None = None) -> tuple[Snapshot | None, float]:
        """A node's last snapshot and its elapsed seconds now (still counting until a final state)."""
        with self._lock:
            n = self._nodes[node or self.node]
            snap, at = n.snap, n.at
        if snap is None:
            return None, 0.0
        if snap.state.final and snap.verdict_elapsed is not None:
            return snap, snap.verdict_elapsed
        return snap, snap.elapsed + max(0.0, self.clock() - at)

    def state_of(self, node: str) -> str:
        snap, _ = self.current(node)
        return snap.state.value if snap is not None else State.WAITING.value

    def overall(self) -> str:
        """The state /ready judges: the one node's, the aggregate's, else READY only when every node is."""
        if self.aggregate is not None:
            return self.aggregate().value
        states = {self.state_of(n) for n in self._nodes}
        return states.pop() if len(states) == 1 else "starting"

    @property
    def ready(self) -> bool:
        """True while the state is READY (what /ready answers)."""
        return self.overall() == State.READY.value

    def ready_text(self) -> str:
        """/ready's body: the state, and each node's with several ("ready (gpu-a ready, gpu-b starting)")."""
        if len(self._nodes) == 1:
            return self.state_of(self.node)
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
        from symmtui.launch.ports import port_owner

        owner = port_owner(port)
        held = f" (held by {owner})" if owner else ""
        return f"--metrics-port {port}: the port is in use on {host}{held}: pick another port"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"--metrics-port {port}: not allowed to listen there (ports below 1024 need root): pick a port above 1024"
    return f"--metrics-host {host} --metrics-port {port}: cannot listen ({exc.strerror or exc}): check the address"


def ready_history(session: Any) -> list[float]:
    """Seconds to READY of this profile's earlier launches (the launch history); [] for an attach."""
    sup = getattr(session, "supervisor", None)
    if sup is None:
        return []
    from symmtui.launch.history import History

    key = sup.profile.key
    try:
        entries = History().entries()
    except (OSError, UserError):
        return []
    return [e.ready_after for e in entries if e.profile_key == key and e.ready_after is not None]


def serve_session(session: Any, *, host: str, port: int, profile: str | None = None,
                  node: str | None = None) -> MetricsServer:
    """Observe ``session`` and serve its metrics; the caller closes the server (it may outlive the session:
    ``wait --metrics-linger``)."""
    metrics = BringupMetrics(profile=profile or session.name, node=node or session.host,
                             ready_history=ready_history(session))
    server = MetricsServer(metrics, host=host, port=port)
    session.observe(metrics)
    return server


def serve_nodes(nodes: Any, *, host: str, port: int) -> MetricsServer:
    """Observe every node of a ``[[nodes]]`` NodeSet under one endpoint (``node`` = the node's name);
    /ready follows the profile's aggregate verdict (``session.nodes.aggregate``: READY when the head
    serves and no node crashed). The caller closes the server."""
    from symmtui.session.nodes import NodeView, aggregate

    profile = nodes.profile
    name = profile.path.stem if getattr(profile, "path", None) is not None else "profile"
    specs = [n.spec for n in nodes.nodes]
    metrics = BringupMetrics(profile=name, nodes=[s.name for s in specs],
                             ready_history=ready_history(nodes.head.session))

    def overall() -> State:
        views = []
        for spec in specs:
            snap, _ = metrics.current(spec.name)
            if snap is None:
                return State.WAITING
            views.append(NodeView(spec.name, spec.rank, snap))
        return aggregate(views).state

    metrics.aggregate = overall
    server = MetricsServer(metrics, host=host, port=port)
    for node in nodes.nodes:
        node.session.observe(metrics.observer(node.spec.name))
    return server
