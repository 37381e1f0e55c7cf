"""A multi-node server: one Session per node under one aggregate verdict (READY, CRASHED on a node, STALLED behind).

Each node of a ``[[nodes]]`` profile gets its own Session (its own engine following its own log, its own
supervisor for its launch command); the head node (the first) also probes ``server.url``. The NodeSet
hears every node's messages, keeps each node's latest snapshot, and judges them together
(:func:`aggregate`): READY only when the head's server answers and no node has crashed; CRASHED when
any node crashed, naming it; STALLED naming the node that is behind. Front ends get each node's
messages wrapped in :class:`NodeMessage` and every change of the aggregate as a :class:`NodesUpdate`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from symmtui.core.logcmd import LogCommand
from symmtui.core.readiness import Snapshot, State
from symmtui.core.rules import PHASE_ORDER
from symmtui.session.core import Session
from symmtui.session.messages import EngineBatch, SessionMessage
from symmtui.session.settings import bringup_settings

if TYPE_CHECKING:
    from symmtui.core.ranks import RankSummary
    from symmtui.gpu.nvml import Nvml
    from symmtui.gpu.source import GpuSource
    from symmtui.launch.nodes import StopCommandResult
    from symmtui.launch.profile import NodeSpec, Profile
    from symmtui.launch.report import OnProgress, StopReport
    from symmtui.launch.state import LaunchRecord

_INDEX = {p: i for i, p in enumerate(PHASE_ORDER)}


@dataclass(frozen=True)
class NodeView:
    """One node as the aggregate sees it: its name, rank, latest snapshot and who is behind inside it."""

    name: str
    rank: int
    snapshot: Snapshot
    ranks: RankSummary | None = None

    @property
    def phase_text(self) -> str:
        """``loading weights (40%)``, ``crashed``, ``stalled in init distributed``: the node's phase in words."""
        snap = self.snapshot
        phase = snap.phase or "no phase seen"
        if snap.progress is not None and snap.state in (State.STARTING, State.STALLED):
            phase += f" ({snap.progress * 100:.0f}%)"
        if snap.state in (State.STARTING, State.WAITING):
            return phase
        if snap.state is State.STALLED:
            return f"stalled in {phase}"
        return snap.state.value


@dataclass(frozen=True)
class NodesVerdict:
    """The aggregate: a state, the node it is about (crashed, behind, timed out; None: none in
    particular), the least advanced phase, one line saying it, and every node's view."""

    state: State
    node: str | None
    phase: str | None
    text: str
    nodes: tuple[NodeView, ...]

    def view(self, name: str) -> NodeView | None:
        return next((v for v in self.nodes if v.name == name), None)


def _phase_index(view: NodeView) -> int:
    return _INDEX.get(view.snapshot.phase or "", -1)


def _behind(views: Sequence[NodeView]) -> NodeView:
    """The node that is behind: the earliest phase; then one with a rank behind; then the longest silent."""
    return min(views, key=lambda v: (_phase_index(v), not (v.ranks is not None and v.ranks.behind),
                                     -(v.snapshot.since_activity or 0.0), v.rank))


def _others(views: Sequence[NodeView], skip: str) -> str:
    rest = [f"{v.name} {v.phase_text}" for v in views if v.name != skip]
    return f"; {', '.join(rest)}" if rest else ""


def aggregate(views: Sequence[NodeView]) -> NodesVerdict:
    """Judge the nodes together; ``views[0]`` is the head (the one that serves the URL)."""
    nodes = tuple(views)
    assert nodes, "a node set has at least one node"
    head = nodes[0]
    least = min(nodes, key=_phase_index).snapshot.phase
    for final in (State.CRASHED, State.STOPPED):
        hit = [v for v in nodes if v.snapshot.state is final]
        if hit:
            first = min(hit, key=lambda v: (v.snapshot.verdict_elapsed or v.snapshot.elapsed, v.rank))
            snap = first.snapshot
            why = snap.cause.headline() if snap.cause is not None else snap.detail
            text = f"{final.value.upper()} on {first.name}: {why}{_others(nodes, first.name)}"
            return NodesVerdict(final, first.name, least, text, nodes)
    unseen = [v.name for v in nodes if v.snapshot.state is State.WAITING]
    if head.snapshot.state is State.READY and not unseen:
        return NodesVerdict(State.READY, None, head.snapshot.phase,
                            f"READY: {head.name} {head.snapshot.detail}{_others(nodes, head.name)}", nodes)
    timed = [v for v in nodes if v.snapshot.state is State.TIMED_OUT]
    if timed:
        late = _behind(nodes)  # the node behind, timed out or not: the others waited for it
        text = f"TIMED OUT: {late.name} in {late.snapshot.phase or 'no phase seen'}{_others(nodes, late.name)}"
        return NodesVerdict(State.TIMED_OUT, late.name, least, text, nodes)
    if any(v.snapshot.state is State.STALLED for v in nodes):
        late = _behind(nodes)
        where = late.snapshot.phase or "no phase seen"
        ranks = f", {late.ranks.text}" if late.ranks is not None and late.ranks.text else ""
        text = f"STALLED: {late.name} is behind ({where}{ranks}){_others(nodes, late.name)}"
        return NodesVerdict(State.STALLED, late.name, least, text, nodes)
    started = any(v.snapshot.state is not State.WAITING for v in nodes)
    state = State.STARTING if started else State.WAITING
    text = ", ".join(f"{v.name} {v.phase_text}" for v in nodes)
    if head.snapshot.state is State.READY:  # no READY while a node's log has said nothing: it may be down
        text = f"{head.name} answers; waiting for the log of {', '.join(unseen)}: {text}"
    return NodesVerdict(state, None, least, text, nodes)


@dataclass(frozen=True)
class NodeMessage:
    """A message of one node's Session, named by the node."""

    node: str
    message: SessionMessage


@dataclass(frozen=True)
class NodesUpdate:
    """The aggregate changed (state, node or any node's phase)."""

    verdict: NodesVerdict


NodesPost = Callable[[NodeMessage | NodesUpdate], object]


@dataclass
class Node:
    """One node: its spec from the profile, its Session, and the log its engine follows (a file, or the
    node's ``log_cmd``: e.g. ``ssh node1 tail -F /var/log/sglang.log``, restarted with backoff)."""

    spec: NodeSpec
    session: Session
    log: Path | None

    @property
    def source(self) -> Path | LogCommand | None:
        """What the node's engine follows: its log command, else its log file."""
        return self.session.log_command if self.session.log_command is not None else self.log

    @property
    def source_text(self) -> str:
        cmd = self.session.log_command
        return f"`{cmd.text}`" if cmd is not None else str(self.log)


@dataclass(frozen=True)
class NodeStopResult:
    """What stopping one node did: its stop command's result (if it has one) and its local launch's report."""

    node: str
    command: StopCommandResult | None
    report: StopReport | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        cmd_ok = self.command is None or self.command.ok
        rep_ok = self.report is None or not self.report.survivors
        return cmd_ok and rep_ok and self.error is None

    def lines(self) -> list[str]:
        """One line per thing done on the node, each naming it; a node not reached says why."""
        out: list[str] = []
        if self.command is not None:
            out.append(self.command.line())
        if self.error is not None:
            out.append(f"{self.node}: not stopped: {self.error}")
        if self.report is not None:
            out.append(f"{self.node}: {self.report.summary()}")
        if not out:
            out.append(f"{self.node}: no launch and no stop command: nothing to stop")
        return out


class NodeSet:
    """The Sessions of a multi-node profile and their aggregate. Build it with :func:`for_nodes`."""

    def __init__(self, profile: Profile, nodes: Sequence[Node]) -> None:
        self.profile = profile
        self.nodes = tuple(nodes)
        self._post: NodesPost | None = None
        self._observers: list[Callable[[NodesUpdate], None]] = []
        self._lock = threading.Lock()
        self._views: dict[str, NodeView] = {}
        self._last_key: tuple[object, ...] | None = None
        self._stalled_on: str | None = None  # the node whose stacks were taken for the current STALLED
        self.auto_stacks = False
        """When the aggregate becomes STALLED, dump the stacks of the node it names (once per stall), posted
        as that node's StacksTaken (the dashboard turns it on; each node's own auto_stacks stays off)."""

    @property
    def head(self) -> Node:
        return self.nodes[0]

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.spec.name == name)

    def attach(self, post: NodesPost, *, sample_gpus: bool = False, acks_for: str | None = None,
               acks: bool = False) -> None:
        """Hear every node's messages (wrapped) and the aggregate's changes at ``post`` (any thread).

        ``acks_for``: the node whose engine batches the front end acknowledges (``Session.batch_done``);
        the other nodes' batches flow freely. ``acks``: the front end acknowledges every node's batches
        (the dashboard keeps a log pane per node and switches between them).
        """
        self._post = post
        for node in self.nodes:
            node.session.attach(self._poster(node), sample_gpus=sample_gpus,
                                acks=acks or node.spec.name == acks_for)

    def observe(self, observer: Callable[[NodesUpdate], None]) -> None:
        """Also hand every change of the aggregate to ``observer`` (notifications), on the sending thread,
        before the front end gets it; like a Session observer it returns at once and never raises."""
        self._observers.append(observer)

    def _poster(self, node: Node) -> Callable[[SessionMessage], None]:
        def post(message: SessionMessage) -> None:
            self._on_message(node, message)

        return post

    def _on_message(self, node: Node, message: SessionMessage) -> None:
        post = self._post
        if post is not None:
            post(NodeMessage(node.spec.name, message))
        if isinstance(message, EngineBatch):
            self._note(NodeView(node.spec.name, node.spec.rank, message.snapshot, message.ranks))

    def _note(self, view: NodeView) -> None:
        with self._lock:
            self._views[view.name] = view
            if len(self._views) < len(self.nodes):
                return
            verdict = aggregate([self._views[n.spec.name] for n in self.nodes])
            key = (verdict.state, verdict.node, *(
                (v.snapshot.state, v.snapshot.phase) for v in verdict.nodes))
            if key == self._last_key:
                return
            self._last_key = key
            stacks_of = None
            if verdict.state is State.STALLED and verdict.node is not None:
                if self.auto_stacks and verdict.node != self._stalled_on:
                    stacks_of = verdict.node
                self._stalled_on = verdict.node
            else:
                self._stalled_on = None
        if stacks_of is not None:
            self.node(stacks_of).session.request_stacks(auto=True)
        update = NodesUpdate(verdict)
        for observer in tuple(self._observers):
            observer(update)
        post = self._post
        if post is not None:
            post(update)

    def views_now(self) -> list[NodeView]:
        """Every node's state now (fresh snapshots from the engines; a node not followed yet reads WAITING)."""
        out: list[NodeView] = []
        for node in self.nodes:
            engine = node.session.engine
            if engine is None:
                continue
            out.append(NodeView(node.spec.name, node.spec.rank, engine.snapshot(), engine.ranks()))
        return out

    def verdict_now(self) -> NodesVerdict:
        """The aggregate over fresh snapshots (the headless loop's tick)."""
        views = self.views_now()
        for v in views:
            self._note(v)
        return aggregate(views)

    # ---- follow, launch, stop ----------------------------------------------------------------

    def follow(self, *, new_only: bool = False) -> None:
        """Follow every node's log (and, where this profile launched it and it runs, its launch process)."""
        for node in self.nodes:
            sup = node.session.supervisor
            record = sup.current() if sup is not None else None
            pid = record.pid if record is not None and sup is not None and sup.is_alive(record) else None
            node.session.follow(node.source, pid=pid, new_only=new_only and node.session.log_command is None,
                                record=record if pid is not None else None)

    def launch(self, progress_for: Callable[[str], OnProgress] | None = None) -> list[LaunchRecord]:
        """Stop what each node ran before, then start every node's launch command (head first); follow them."""
        from symmtui.errors import UserError

        missing = [n.spec.name for n in self.nodes if n.spec.launch is None]
        if missing:
            raise UserError(f"cannot launch: node {', '.join(missing)} has no launch command in "
                            f"{self.profile.path}; add launch = \"ssh NODE ...\" to its [[nodes]] table")
        for result in self.stop_commands(only_launched=True):  # the remote servers of the last launch
            if not result.ok:
                self.node(result.node).session.notify(f"before launching: {result.line()}", "warning")

        def stop_local(node: Node) -> None:  # every node's earlier launch at once (each waits out its grace)
            sup = node.session.supervisor
            if sup is not None and sup.current() is not None:
                sup.stop(progress_for(node.spec.name) if progress_for is not None else None)

        with ThreadPoolExecutor(max_workers=len(self.nodes), thread_name_prefix="symmtui-node-stop") as pool:
            list(pool.map(stop_local, self.nodes))
        with self._lock:  # a new launch: the last one's node states are no evidence about it
            self._views.clear()
            self._last_key = None
            self._stalled_on = None
        records: list[LaunchRecord] = []
        for node in self.nodes:
            own = node.spec.log is None  # else the node's log is elsewhere: follow it from its end
            on_progress = progress_for(node.spec.name) if progress_for is not None else None
            launched = node.session.launch(on_progress, preflight=False,
                                         watch_log=None if own else str(node.log))
            records.append(launched.record)
        return records

    def stop_commands(self, *, only_launched: bool = False) -> list[StopCommandResult]:
        """Run every node's stop command at once (``only_launched``: only nodes with a recorded launch)."""
        from symmtui.launch.nodes import run_stop_command

        todo = [n for n in self.nodes if n.spec.stop is not None and (
            not only_launched or (n.session.supervisor is not None and n.session.supervisor.current() is not None))]
        if not todo:
            return []
        with ThreadPoolExecutor(max_workers=len(todo), thread_name_prefix="symmtui-node-stop") as pool:
            return list(pool.map(lambda n: run_stop_command(self.profile, n.spec), todo))

    def stop(self, progress_for: Callable[[str], OnProgress] | None = None) -> list[NodeStopResult]:
        """Stop every node, all at once: its stop command (reaches the remote server), then its local launch.

        A node that cannot be reached is a result that says so; every node is tried, whatever the others do.
        """
        def one(node: Node) -> NodeStopResult:
            from symmtui.errors import UserError
            from symmtui.launch.nodes import run_stop_command

            cmd = run_stop_command(self.profile, node.spec) if node.spec.stop is not None else None
            report = None
            error = None
            if node.session.supervisor is not None:
                try:
                    report = node.session.supervisor.stop(
                        progress_for(node.spec.name) if progress_for is not None else None)
                except UserError as exc:
                    error = str(exc)
            return NodeStopResult(node.spec.name, cmd, report, error)

        with ThreadPoolExecutor(max_workers=len(self.nodes), thread_name_prefix="symmtui-node-stop") as pool:
            return list(pool.map(one, self.nodes))

    def close(self) -> None:
        for node in self.nodes:
            node.session.close()


def for_nodes(
    profile: Profile,
    *,
    timeout: float | None = None,
    stall: float | None = None,
    ready: Sequence[str] = (),
    crash: Sequence[str] = (),
    grace: float | None = None,
    url: str | None = None,
    gpus: bool = False,
    nvml: Nvml | None = None,
) -> NodeSet:
    """A NodeSet for a ``[[nodes]]`` profile: per node, a Session with its rules, limits and supervisor.

    ``url`` (else ``server.url``) is probed by the head node's Session only. ``gpus``: the head's Session
    also samples every node's GPUs (each node's ``gpus``: NVML through ``nvml``, or an exporter's URL),
    shown under the node's name (:func:`gpu_source`).
    """
    from symmtui.launch.nodes import node_profile, watched_log
    from symmtui.launch.supervisor import Supervisor

    probe = url if url is not None else profile.url
    if probe is not None:
        from symmtui.core.probe import check_url

        check_url(probe)
    nodes: list[Node] = []
    for spec in profile.nodes:
        nprof = node_profile(profile, spec)
        settings = bringup_settings(nprof, ready=ready, crash=crash, timeout=timeout, stall=stall)
        sup = Supervisor(nprof, grace=grace) if spec.launch is not None else None
        session = Session(host=spec.name, name=f"{_stem(profile)} {spec.name}", settings=settings, supervisor=sup,
                          url=probe if spec.rank == 0 else None,
                          gpus=gpu_source(profile, nvml=nvml) if gpus and spec.rank == 0 else None)
        if spec.log_cmd is not None:
            session.log_command = LogCommand(spec.log_cmd, spec.log_cmd_text, profile.shell)
            session.log_command.check()
        nodes.append(Node(spec, session, watched_log(profile, spec) if spec.log_cmd is None else None))
    return NodeSet(profile, nodes)


def gpu_source(profile: Profile, *, nvml: Nvml | None = None, timeout: float = 2.0) -> GpuSource:
    """Every node's GPUs as one source, each GPU's ``host`` the node's name (rows grouped by node)."""
    from symmtui.gpu.multi import MultiSource
    from symmtui.gpu.named import NamedSource
    from symmtui.gpu.specs import open_source

    return MultiSource([NamedSource(open_source(n.gpus, nvml=nvml, timeout=timeout), n.name) for n in profile.nodes])


def _stem(profile: Profile) -> str:
    return profile.path.stem if profile.path is not None else "profile"


def nodes_profile(config: str | None) -> Profile | None:
    """The profile the dashboard would open (``--config``, else ./symmtui.toml, ...) when it lists
    ``[[nodes]]``; None otherwise (no profile, or one server)."""
    from symmtui.launch.profile import find_profile, load_profile

    if config is None and find_profile(None) is None:
        return None
    profile = load_profile(config)
    return profile if profile.nodes else None


def open_nodes(profile: Profile, *, url: str | None = None) -> NodeSet:
    """A NodeSet for the dashboard, following every node (and its running launch), sampling every node's GPUs."""
    nvml = None
    if any(n.gpus == "nvml" for n in profile.nodes):
        from symmtui.gpu.nvml import Nvml

        nvml = Nvml()
    nodes = for_nodes(profile, url=url, gpus=True, nvml=nvml)
    try:
        nodes.follow()
    except BaseException:
        nodes.close()
        raise
    return nodes
