"""Session: one bring-up of 1..N nodes under any front end; built from a frozen spec (``symmtui.build``).

It owns each node's engine and supervisor, the GPU sampler and topology, our pids, the capability,
the history writer, the patch state and the verdict view, and hands what they produce to its readers
without ever waiting for one: every observer (recorder, notifier, metrics) through a bounded inbox on
a thread of its own, the front end through a bounded mailbox it empties when it can
(``session.mailbox``). A frozen screen therefore delays nothing: a verdict reaches the observers the
moment the engine makes it.

The protocol every front end uses (the replay implements it too, ``bundle.replay``): ``attach(wake)``
gives the mailbox, where a Board (``judge.board``) comes with every batch and every timed wake-up;
``observe``; ``ask(intent)`` (``session.intents``: blocking, call it from a worker thread); ``close``.
Nothing else: a front end never asks the Session for state.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from msgspec import Struct, field
from msgspec.structs import replace

from symmtui import boundary, clitext
from symmtui.bringup.engine import HEARTBEAT, EngineUpdate
from symmtui.errors import UserError
from symmtui.judge import board as boards
from symmtui.judge.board import Board, NodeInput, Relaunch
from symmtui.judge.eta import LiveEta, RateMeter, live_eta
from symmtui.judge.logclock import LogTimes
from symmtui.judge.readiness import Readiness, Snapshot, State
from symmtui.judge.verdict import Changes, NodeView, Verdict, findings, ordered_events, verdict_of
from symmtui.session import intents
from symmtui.session.intents import Intent, Launched, NodeStop
from symmtui.session.mailbox import Mailbox, Relay, Wake
from symmtui.session.messages import (
    VERDICTS,
    EngineBatch,
    GpuRound,
    Notice,
    PatchState,
    SessionMessage,
    StacksTaken,
    VerdictReached,
)
from symmtui.session.node import Node
from symmtui.session.outcome import CHANGED, RECORDED, patch_note
from symmtui.session.patching import Patcher
from symmtui.session.spec import NodePlan, SessionSpec
from symmtui.stacks.gpus import evidence, utilization_of

# `wait --log` starts without what a watch-only session does not use (python -m bench.startup: about
# 70 ms of its CPU; tests/core/test_wait_cli.py): the launcher (supervisor, history, node commands,
# the profile fix), the GPUs (NVML, psutil: session/gpus.py), the stacks (py-spy, subprocess) and the
# history's timings are imported where a session has a profile, GPUs or a dump to take.
if TYPE_CHECKING:
    import signal

    from symmtui.gpu.nvml import Nvml
    from symmtui.gpu.source import GpuSource
    from symmtui.judge.rules import Action
    from symmtui.launch.envinfo import EnvInfo, ServerCommand
    from symmtui.launch.facts import LaunchFacts
    from symmtui.launch.nodes import StopCommandResult
    from symmtui.launch.profile import Profile
    from symmtui.launch.profilefix import ProfileFix
    from symmtui.launch.report import GpuPids, OnProgress, Progress
    from symmtui.launch.state import LaunchRecord
    from symmtui.launch.supervisor import Supervisor
    from symmtui.patch.preflight import Prediction
    from symmtui.proc.identity import Listed, Signalled
    from symmtui.session.gpus import Gpus
    from symmtui.stacks.report import StacksReport

DEFAULT_STACKS_LIMIT = 10.0  # seconds a process's dump may take (symmtui.stacks.pyspy's DEFAULT_LIMIT)

CLOSE_BOUND = 5.0  # close() gives each observer up to this to drain its inbox, and as long again for its thread
Observer = Callable[[SessionMessage], None]
T = TypeVar("T")
R = TypeVar("R")
A = TypeVar("A")


SLOW_CALL = 1.0  # a GPU sampling round in flight this long is named on the Board ("NVML slow")


class _NodeState(Struct):
    """What the Session keeps of one node between its engine's updates (its engine thread's, under the lock)."""

    view: NodeView
    caught_up: bool = True
    settled: bool = True
    settle_waited: float = 0.0
    times: LogTimes | None = None
    meter: RateMeter = field(default_factory=RateMeter)
    live: LiveEta | None = None


class Session:
    """One bring-up under any front end: ``build.open(spec)`` makes it, ``attach``, the intents, ``close``."""

    def __init__(self, spec: SessionSpec, *, clock: Callable[[], float] = time.monotonic,
                 nvml: Nvml | None = None) -> None:
        """``nvml``: an NVML the caller made (a stand-in it drives: the demo, a test), the Session's from here;
        everything else it opens from ``spec`` (plain data)."""
        self.spec = spec
        self.clock = clock
        self.name = spec.name
        self.host = spec.host
        self._lock = threading.RLock()  # the nodes' views and the verdict (one engine thread per node)
        self._closed = threading.Event()
        self._mailbox = Mailbox()
        self._relays: list[Relay] = []
        self._closers: list[Callable[[], None]] = []
        self._gpus: Gpus | None = None
        if nvml is not None or spec.gpus is not None or spec.sample_gpus or spec.stacks_gpus:
            # NVML, topology, the sampler: only a session that watches GPUs
            from symmtui.session.gpus import Gpus

            self._gpus = Gpus(spec, self._send, nvml=nvml)
        gpu_pids = self._gpus.gpu_pids() if self._gpus is not None else None
        self._nodes = tuple(Node(plan, spec.settings, self._supervisor(plan, gpu_pids), spool=spec.spool_log_commands,
                                 probe_timeout=spec.probe_timeout, on_update=self._on_update, clock=clock)
                            for plan in spec.nodes)
        self.named = len(self._nodes) > 1
        """The texts name the node (a server of several nodes): the node column."""
        blank = Readiness(spec.settings.readiness, 0.0).snapshot(0.0)
        self._state = {n.name: _NodeState(NodeView(n.name, blank)) for n in self._nodes}
        self._memo: dict[str, tuple[object, object]] = {}
        self._patched = False
        self._timings: tuple[object, tuple[str, ...]] | None = None  # (the READY it was read for, its lines)
        self._seq = 0
        self._gpu_util: list[int | None] = []  # each GPU's utilization in the last round (a stall's evidence)
        # (the (node, generation, state) it was read for, what changed since the last READY, the restore)
        self._changes: tuple[tuple[str, int, State], Changes | None, tuple[Action, ...]] | None = None
        self._attached: dict[str, LaunchFacts | None] = {}  # a node attached by pid alone: its command, read at start
        self._reached_key: tuple[State, int] | None = None
        self._stalled_on: str | None = None
        self._port_owner = None
        if spec.port_owner:
            from symmtui.proc.ports import port_owner  # psutil: a profile's server

            self._port_owner = port_owner
        self._stacks_lock = threading.Lock()  # one dump at a time
        self._stacks_jobs = threading.Lock()  # guards the two below: request_stacks' worker and its next job
        self._stacks_running: tuple[str | None, bool, bool] | None = None
        self._stacks_next: tuple[str | None, bool, bool] | None = None
        self._board = self._build()

    def _supervisor(self, plan: NodePlan, gpu_pids: GpuPids | None) -> Supervisor | None:
        if plan.profile is None:
            return None
        from symmtui.launch.supervisor import Supervisor  # the launcher: only a session with a profile

        sup = Supervisor(plan.profile, gpu_pids=None if plan.remote else gpu_pids, grace=self.spec.grace,
                         gpu_timeout=self.spec.gpu_timeout, port_timeout=self.spec.port_timeout)
        sup.versions.nvml = self.nvml  # the driver's versions in the history too
        return sup

    # ---- wiring ------------------------------------------------------------------------------

    @property
    def nodes(self) -> tuple[str, ...]:
        """The nodes' names, the head first."""
        return tuple(n.name for n in self._nodes)

    @property
    def head(self) -> Node:
        return self._nodes[0]

    def _node(self, name: str | None) -> Node:
        return next((n for n in self._nodes if n.name == name), self._nodes[0])

    def start(self) -> None:
        """Follow what the spec says to follow, start the GPU sampler, read the launch history for the ETA."""
        for node in self._nodes:
            plan = node.plan
            if node.supervisor is None and plan.pid is not None:  # what it runs, while it runs (what changed)
                # the history's reader (statistics, ~60 ms): only an attach with a history
                from symmtui.session.changes import attached

                self._attached[node.name] = attached(plan.pid)
            if plan.follow and (node.source is not None or plan.url is not None or plan.pid is not None):
                node.follow(pid=plan.pid, new_only=plan.new_only, tail_lines=plan.tail_lines, record=plan.record,
                            recorded=plan.recorded)
        self._track()
        if self.spec.sample_gpus and self._gpus is not None:
            self._gpus.start(topology=not self.named)
        if any(n.supervisor is not None and n.engine is not None for n in self._nodes):  # the gauge's ETA
            threading.Thread(target=self._load_estimates, name="symmtui-history", daemon=True).start()
        if all(n.engine is None for n in self._nodes):  # no engine beats the time yet: the Session does
            threading.Thread(target=self._beat, name="symmtui-board", daemon=True).start()

    def _beat(self) -> None:
        """A Board every HEARTBEAT seconds while no node's engine runs (GPUs only, before a first launch):
        a slow NVML call is named all the same. Ends once an engine runs (its updates beat) or at close."""
        while not self._closed.wait(HEARTBEAT):
            if any(n.engine is not None for n in self._nodes):
                return
            self._repost()

    def attach(self, wake: Wake) -> Mailbox:
        """The front end's mailbox; ``wake`` is called (any thread) when something arrives in an empty one."""
        self._mailbox.attach(wake)
        return self._mailbox

    def observe(self, observer: Observer, *, name: str = "observer") -> None:
        """Hand every message to ``observer`` on a thread of its own, through a bounded inbox (session.mailbox)."""
        self._relays.append(Relay(observer, name=name, failed=lambda text: self.notify(text, "warning")))

    @property
    def nvml(self) -> Nvml | None:
        """The NVML it owns (None: none): the recorder's environment names the driver through it."""
        return self._gpus.nvml if self._gpus is not None else None

    @property
    def gpu_source(self) -> GpuSource | None:
        """What its sampler reads besides NVML alone (exporters, several nodes), as opened from ``spec.gpus``."""
        return self._gpus.source if self._gpus is not None else None

    def on_close(self, closer: Callable[[], None]) -> None:
        """Run ``closer`` when the Session closes, after its observers finished (a plug-in's end)."""
        self._closers.append(closer)

    def _send(self, message: SessionMessage) -> None:
        if self._closed.is_set():
            return
        if isinstance(message, GpuRound):
            self._gpu_util = utilization_of(message.snapshot.samples)  # the next STALLED Board's evidence
        for relay in self._relays:
            relay.put(message)
        self._mailbox.put(message)

    def notify(self, text: str, severity: str = "information") -> None:
        """A one-line note for the user, from any thread; once closed, ``symmtui: ...`` on stderr."""
        if self._closed.is_set():
            clitext.note(f"{severity}: {text}" if severity != "information" else text, sys.stderr)
            return
        self._send(Notice(text, severity))

    def send(self, message: SessionMessage) -> None:
        """Post a message of a plug-in's (a notifier's Bell) to the observers and the front end."""
        self._send(message)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        """Stop every thread, let the observers finish, end the plug-ins (``on_close``), close the GPUs."""
        if self._closed.is_set():
            return
        with boundary.signals_held():  # SIGTERM / SIGHUP now act when everything is closed
            self._close()

    def _close(self) -> None:
        try:
            if self.spec.stop_at_close:
                # the demo's servers: their STOPPED is not news (its bundle's story ends where the user quit)
                self._closed.set()
                self._stop(grace=2.0)
        finally:
            for node in self._nodes:
                node.stop()  # a last batch carries STOPPED unless a verdict was already in
            if self._gpus is not None:
                self._gpus.stop()
            self._closed.set()
            for relay in self._relays:
                relay.close(CLOSE_BOUND)
            for closer in reversed(self._closers):
                closer()
            if self._gpus is not None:
                self._gpus.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the engines and the Board ----------------------------------------------------------

    def _node_view(self, node: Node, snap: Snapshot, ranks: object) -> NodeView:
        key = (snap.cause, snap.errors, snap.warnings, self._patched)
        memo = self._memo.get(node.name)
        if memo is None or memo[0] != key:
            found = findings(ordered_events(snap), ruleset=self.spec.settings.ruleset, port_owner=self._port_owner,
                             patched=self._patched)
            memo = self._memo[node.name] = (key, found)
        eta, runs = node.eta(snap)
        return NodeView(node.name, snap, ranks, memo[1], eta, runs)  # type: ignore[arg-type]

    def _ready_timings(self, state: State, about: Node) -> tuple[str, ...]:
        """Once READY, the phases against earlier launches of the node it is about (read once per launch)."""
        if state is not State.READY:
            return ()
        key = (about.name, about.generation)
        if self._timings is None or self._timings[0] != key:
            sup, launch_id = about.supervisor, about.launch_id(about.generation)
            lines: tuple[str, ...] = ()
            if sup is not None or launch_id is not None:  # a launch (or a profile's log) has a history
                from symmtui.session.timings import ready_timings  # the history's reader: a READY's

                lines = ready_timings(sup.profile.command_hash if sup is not None else None, launch_id,
                                      about.batch_log_path, self._state[about.name].view.snapshot)
            self._timings = (key, lines)
        return self._timings[1]

    def _changed(self, verdict: Verdict) -> Changes | None:
        """Once CRASHED, STALLED or TIMED OUT, what changed since the last READY launch of the node it is about
        (read once per node, launch and state: the history is a file)."""
        if verdict.state not in CHANGED:
            return None
        about = self._node(verdict.node)
        seen = (about.name, about.generation, verdict.state)
        if self._changes is None or self._changes[0] != seen:
            found: tuple[Changes | None, tuple[Action, ...]] = (None, ())
            pid_facts = self._attached.get(about.name)
            if about.supervisor is not None or pid_facts is not None:  # a launch, a profile or a pid: a history
                from symmtui.session.changes import changes_since  # the history's reader: a failure's

                found = changes_since(about, verdict, pid_facts=pid_facts)
            self._changes = (seen, *found)
        return self._changes[1]

    def _input(self, node: Node) -> NodeInput:
        st = self._state[node.name]
        engine = node.engine
        label = engine.numbering().label if engine is not None else (lambda no: f"line {no}")
        return NodeInput(st.view, label, st.times, st.live, node.batch_log_path, node.launch_id(node.generation),
                         node.generation, st.caught_up, st.settled, st.settle_waited)

    def _build(self) -> Board:
        """The Board over every node's latest view, now (under the lock, or before any engine runs)."""
        self._seq += 1
        inputs = [self._input(n) for n in self._nodes]
        verdict = verdict_of([i.view for i in inputs], patched=self._patched)
        stall = evidence(self._gpu_util) if verdict.state is State.STALLED and self._gpu_util else None
        busy = self._gpus.busy_for() if self._gpus is not None else None
        slow = f"NVML slow: waiting {busy:.0f} s for a call" if busy is not None and busy >= SLOW_CALL else None
        why = {i: self.why_not(i) for i in boards.INTENTS}
        return boards.build(
            self._seq, inputs, self.clock(), verdict=verdict, patched=self._patched,
            timings=self._ready_timings(verdict.state, self._node(verdict.node)), changes=self._changed(verdict),
            gpu_stall=stall.short() if stall is not None else None, gpu_slow=slow, why_not=why,
            relaunch=self._relaunch_plan() if why["relaunch"] is None else None,
            stacks_pending=self._stacks_running is not None and self._stacks_running[1])

    def _on_update(self, node: Node, up: EngineUpdate) -> None:
        """A node engine's callback (its dispatcher thread): the history at the node's verdict, the Board,
        then the batch (and a VerdictReached on a change) to every reader at once."""
        warn: str | None = None
        with self._lock:
            if self._closed.is_set() or up.generation < node.generation:
                return  # closed, or a batch of the launch before a relaunch
            restarted = up.generation > node.generation
            if restarted:
                node.generation = up.generation
                node.batch_log_path = node.log_path  # the file of the relaunch, or the command's copy
            st = self._state[node.name]
            st.view = self._node_view(node, up.snapshot, up.ranks)
            st.caught_up, st.settled, st.settle_waited = up.caught_up, up.settled, up.settle_waited
            st.times = up.times
            st.meter.feed(up.snapshot)
            st.live = live_eta(up.snapshot, st.meter)
            judged = up.snapshot
            if self.named and judged.state in RECORDED:  # as the verdict sees it: a quiet worker of a READY server
                views = [self._state[n.name].view for n in self._nodes]
                judged = verdict_of(views, patched=self._patched).view(node.name).snapshot  # is ready, not timed out
            if judged.state in RECORDED and node.supervisor is not None:
                from symmtui.session.changes import named  # the launcher's history: a session with a profile

                # before the Board: READY's timings and a crash's changes read this launch
                warn = node.finish(judged, up.generation, named(st.view.findings))
            board = self._board = self._build()
            self._send(EngineBatch(node.name, up, node.batch_log_path, board, restarted,
                                   node.launch_id(up.generation)))
            reached = self._reached(board)
            if reached is not None:
                self._send(reached)
            stacks_of = self._stacks_due(board)
        if warn is not None:
            self.notify(warn, "warning")
        if stacks_of is not None:
            self._request_stacks(stacks_of, auto=True)

    def _reached(self, board: Board) -> VerdictReached | None:
        """A VerdictReached when the verdict is one the last was not (once per change; a relaunch is news). A
        crash is news once it has settled (the other ranks' copies in): the notifier says the cause `wait` prints."""
        about = self._node(board.node)
        if board.state not in VERDICTS:
            self._reached_key = None  # moved on (a STALLED that resumed): the next verdict is news
            return None
        if board.state is State.CRASHED and not board.about.settled:
            return None
        key = (board.state, about.generation)
        if key == self._reached_key:
            return None
        self._reached_key = key
        return VerdictReached(board, about.generation, about.launch_id(about.generation), about.batch_log_path)

    def _stacks_due(self, board: Board) -> str | None:
        """The node to dump once per stall (``auto_stacks``): again only after it moved and stalled anew."""
        if board.state is not State.STALLED:
            self._stalled_on = None
            return None
        if board.node == self._stalled_on:
            return None
        self._stalled_on = board.node
        return board.node if self.spec.auto_stacks else None

    def _repost(self) -> None:
        """The Board changed without a line (the patch state, a dump done): post it as an empty batch of the head."""
        with self._lock:
            for n in self._nodes:
                st = self._state[n.name]
                st.view = self._node_view(n, st.view.snapshot, st.view.ranks)
            board = self._board = self._build()
            node = self.head
            view = self._state[node.name].view
            up = EngineUpdate((), (), (), view.snapshot, 0, node.generation, view.ranks)
            self._send(EngineBatch(node.name, up, node.batch_log_path, board, False, node.launch_id(node.generation)))


    # ---- the history ----------------------------------------------------------------------------

    def shared_capture(self, read: Callable[[], EnvInfo], command: ServerCommand | None) -> Callable[[], EnvInfo]:
        """``read`` (the recorder's environment capture of ``command``), shared with the head's next launch:
        it reads its history versions from the same capture (one probe of the interpreter)."""
        sup = self.head.supervisor
        if sup is None or command is None:
            return read
        return sup.versions.session_capture(read, command).get

    def _load_estimates(self) -> None:
        for node in self._nodes:
            warn = node.load_estimate()
            if warn is not None:
                self.notify(warn, "warning")

    # ---- stacks (symmtui.stacks): where every process of a node's server is ------------------

    def _dump_stacks(self, node: str | None = None, *, native: bool = False, limit: float = DEFAULT_STACKS_LIMIT,
                     keep: bool = True) -> tuple[StacksReport, str | None]:
        """Dump every process of ``node``'s server (default: the node the verdict is about) now (blocking,
        ~1 s), saved next to its log when ``keep``; UserError when there is nothing to dump (exit 2) or
        ptrace was refused for every process (PtraceDenied, exit 3)."""
        from symmtui.stacks.report import save, take  # py-spy's runner: a dump's

        n = self._node(node if node is not None else self._board.node)
        procs = n.server_procs()
        if not procs:
            raise UserError(n.gone_text())
        log = Path(n.log_file) if n.log_file is not None else None
        with self._stacks_lock:
            rep = take(procs, log=log, native=native, limit=limit, ruleset=self.spec.settings.ruleset,
                       utilization=self._gpus.utilization() if self._gpus is not None else [])
        return rep, str(save(rep, log, self.spec.stacks_dir)) if keep and log is not None else None

    def _take_stacks(self, node: str | None, *, native: bool, auto: bool) -> StacksTaken:
        """A dump that never raises: the dump, or the one line why there is none."""
        name = self._node(node).name
        try:
            rep, saved = self._dump_stacks(name, native=native)
        except UserError as exc:
            return StacksTaken(None, str(exc), auto, node=name)
        return StacksTaken(rep, None, auto, saved, name)

    def _request_stacks(self, node: str | None = None, *, auto: bool = False, native: bool = False) -> None:
        """Take a dump on a worker thread and post it (StacksTaken), then a Board that says it is done. One
        runs at a time: a request made meanwhile waits for it (the latest one; the same dump asked again is
        not doubled, another node's is not lost)."""
        job = (node if node is not None else self._board.node, auto, native)
        with self._stacks_jobs:
            if self._stacks_running is not None:
                if job[0::2] != self._stacks_running[0::2]:
                    self._stacks_next = job
                return
            self._stacks_running = job

        def work(job: tuple[str | None, bool, bool] | None) -> None:
            while job is not None:
                name, auto_, native_ = job
                self._send(self._take_stacks(name, native=native_, auto=auto_))
                with self._stacks_jobs:
                    job, self._stacks_next = self._stacks_next, None
                    self._stacks_running = job
            self._repost()  # the Board no longer waits for a dump

        threading.Thread(target=work, args=(job,), name="symmtui-stacks", daemon=True).start()

    # ---- intents (blocking: call them from a worker thread) ----------------------------------

    def ask(self, intent: Intent[A]) -> A:
        """Carry out ``intent`` (``session.intents``) and answer with its result; UserError when it cannot be
        done (one line)."""
        return cast(A, self._answer(intent))

    def _answer(self, intent: Intent[Any]) -> object:
        match intent:
            case intents.Launch(on_progress, preflight, block, checked):
                return self._launch(on_progress, preflight=preflight, block_on_prediction=block) if checked \
                    else self._launch_unchecked()
            case intents.Stop(on_progress, grace):
                return self._stop(on_progress, grace=grace)
            case intents.KillStranger(pid):
                return self._kill_stranger(pid)
            case intents.SignalProcess(listed, sig, by_pid):
                return self._signal_process(listed, sig, by_pid=by_pid)
            case intents.StillRunning():
                return tuple(n.name for n in self._nodes if n.supervisor is not None and n.supervisor.is_alive())
            case intents.CheckPatch():
                return self._patcher().check()
            case intents.ApplyPatch(view):
                return self._patched_now(self._patcher().apply(view))
            case intents.RevertPatch():
                return self._patched_now(self._patcher().revert())
            case intents.PlanFix(node):
                return self._plan_fix(node)
            case intents.ApplyFix(fix):
                self._apply_fix(fix)
                return None
            case intents.RequestStacks(node, native):
                self._request_stacks(node, native=native)
                return None
            case intents.DumpStacks(node, native, limit, keep):
                return self._dump_stacks(node, native=native, limit=limit, keep=keep)
            case intents.Say(text, severity):
                self.notify(text, severity)
                return None
        raise UserError(f"this session cannot {type(intent).__name__}")

    def why_not(self, intent: str) -> str | None:
        """None when ``intent`` (one of ``judge.board.INTENTS``) can be asked of this Session, else why not
        (every Board carries the answers)."""
        if intent in ("launch", "relaunch"):
            missing = [n.name for n in self._nodes if n.supervisor is None or n.supervisor.profile.argv is None]
            if not missing:
                return None
            if not self.named:
                sup = self.head.supervisor
                if sup is not None:
                    return sup.profile.attach_reason
                return "relaunch needs a profile with server.command (symmtui --config FILE)"
            where = self.spec.profile.path if self.spec.profile is not None else "the profile"
            return (f"cannot launch: node {', '.join(missing)} has no launch command in {where}; "
                    "add launch = \"ssh NODE ...\" to its [[nodes]] table")
        if intent == "patch":
            return None if self.spec.patch is not None else \
                "no SGLang/vLLM install to patch in this session (use symmtui patch)"
        if intent == "fix":
            return None if self.spec.profile is not None and self.spec.profile.path is not None else \
                "no profile to change in this session"
        return None

    def _relaunch_plan(self) -> Relaunch:
        """What a relaunch would do (the question before it, on every Board)."""
        commands = []
        for node in self._nodes:
            sup = node.supervisor
            assert sup is not None
            commands.append((node.name, sup.profile.command_text or " ".join(sup.profile.argv or ())))
        grace = self.head.supervisor.grace if self.head.supervisor is not None else 0.0
        return Relaunch(grace, tuple(commands))

    def _progress(self, node: Node, on_progress: OnProgress | None) -> OnProgress | None:
        """``on_progress`` for one node's steps: named with several nodes; a remote node's GPU and port
        steps left out (they are not on this host)."""
        if on_progress is None or not self.named:
            return on_progress

        def show(p: Progress) -> None:
            if node.plan.remote and p.step in ("gpu", "port"):  # Step.GPU, Step.PORT (a StrEnum: `wait` never loads it)
                return
            on_progress(replace(p, node=node.name, message=f"{node.name}: {p.message}"))

        return show


    def _launch(self, on_progress: OnProgress | None = None, *, preflight: bool = True,
                block_on_prediction: bool = False) -> Launched:
        """Stop what was launched before, check the patch (a local node), launch every node again (head
        first), and follow each new launch."""
        why = self.why_not("launch")
        if why is not None:
            raise UserError(why)
        if self.named:
            self._stop_before_launch(on_progress)
        records: list[tuple[str, LaunchRecord]] = []
        warnings: list[str] = []
        prediction: Prediction | None = None
        for node in self._nodes:
            sup = node.supervisor
            assert sup is not None
            check = preflight and not node.plan.remote
            cap = self._gpus.capability_now() if check and self._gpus is not None else None
            result = sup.relaunch(self._progress(node, on_progress), preflight=check, capability=cap,
                                  block_on_prediction=block_on_prediction)
            node.patch_note = patch_note(result.prediction, preflight_ran=check and cap is not None)
            node.watch(result.record)
            self._track()  # new processes: the GPU side walks the table at the next sample
            records.append((node.name, result.record))
            warnings += result.warnings
            prediction = prediction or result.prediction
        head = self.head.supervisor
        return Launched(tuple(records), tuple(warnings), prediction, tuple(n.source_text for n in self._nodes),
                        head.estimate() if head is not None else None)

    def _track(self) -> None:
        """Tell the GPU side which launches are ours (their processes are the "ours" rows)."""
        if self._gpus is not None:
            self._gpus.track(r for n in self._nodes if (r := n.ours()) is not None)

    def _stop_before_launch(self, on_progress: OnProgress | None) -> None:
        """Several nodes: the last launch's remote servers (stop commands), then every node's local launch at once."""
        launched = [n for n in self._nodes if n.plan.stop is not None and n.supervisor is not None
                    and n.supervisor.current() is not None]
        for result in self._each(launched, self._stop_command):
            if not result.ok:
                self.notify(f"before launching: {result.line()}", "warning")

        def stop_local(node: Node) -> None:
            sup = node.supervisor
            if sup is not None and sup.current() is not None:
                sup.stop(self._progress(node, on_progress))

        self._each(self._nodes, stop_local)

    @staticmethod
    def _each(nodes: Sequence[T], fn: Callable[[T], R]) -> list[R]:
        """``fn`` on every node at once (one thread each); in order of ``nodes``."""
        if len(nodes) < 2:
            return [fn(n) for n in nodes]
        from concurrent.futures import ThreadPoolExecutor  # several nodes only

        with ThreadPoolExecutor(max_workers=len(nodes), thread_name_prefix="symmtui-node") as pool:
            return list(pool.map(fn, nodes))

    def _stop_command(self, node: Node) -> StopCommandResult:
        from symmtui.launch.nodes import run_stop_command  # a node's stop command: only a multi-node stop

        assert node.plan.stop is not None and self.spec.profile is not None
        return run_stop_command(self.spec.profile, node.name, node.plan.stop, node.plan.stop_text)

    def _launch_unchecked(self) -> Launched:
        """Launch every node without stopping or checking first (the demo's first launch) and follow it."""
        why = self.why_not("launch")
        if why is not None:
            raise UserError(why)
        out = []
        for node in self._nodes:
            assert node.supervisor is not None
            record = node.supervisor.launch()
            node.patch_note = None
            node.watch(record)
            out.append((node.name, record))
        self._track()
        return Launched(tuple(out), logs=tuple(n.source_text for n in self._nodes))

    def _stop(self, on_progress: OnProgress | None = None, *, grace: float | None = None) -> tuple[NodeStop, ...]:
        """Stop every node at once: its stop command (the remote server), then its local launch (the whole
        tree), then wait for GPU memory and the port. Every node is tried, whatever the others do; when no
        node could be stopped for a reason of this host (its state dir, a corrupt state file), that reason
        is the UserError."""
        def one(node: Node) -> NodeStop:
            command = self._stop_command(node) if node.plan.stop is not None else None
            if node.supervisor is None:
                return NodeStop(node.name, command)
            try:
                report = node.supervisor.stop(self._progress(node, on_progress), grace=grace)
            except UserError as exc:  # said once, with its own exit code, when it is every node's
                return NodeStop(node.name, command, error=str(exc), exit_code=exc.exit_code)
            return NodeStop(node.name, command, report)

        done = tuple(self._each(self._nodes, one))
        if all(r.error is not None for r in done):
            raise UserError(str(done[0].error), exit_code=done[0].exit_code)
        return done

    def _signal_process(self, listed: Listed, sig: signal.Signals, *, by_pid: bool) -> Signalled:
        """Signal a process the user picked from a list (the process view), if it is still what was listed: the
        one identity check (``proc.identity``), made now, with the server's tree read now (blocking: a worker
        thread). A process outside the tree only ``by_pid`` (the user typed its pid)."""
        from symmtui.proc import identity  # psutil: only a signal intent

        tree = {p.pid for n in self._nodes for p in n.server_procs()}
        return identity.send_listed(listed, sig, in_tree=listed.pid in tree, by_pid=by_pid)

    def _kill_stranger(self, pid: int) -> bool:
        """End ``pid`` (a process symmtui did not start that holds the head's port or GPU memory; the user
        confirmed it); True when it is gone."""
        sup = self.head.supervisor
        if sup is None:
            raise UserError("--kill-pid needs a profile (symmtui stop --config FILE)")
        return sup.kill_stranger(pid, pid)

    def _patcher(self) -> Patcher:
        target = self.spec.patch
        if target is None:
            raise UserError(self.why_not("patch") or "no patch")
        gpus = self._gpus
        if gpus is None:
            from symmtui.gpu.facts import patch_facts  # NVML: only a patch intent

            return Patcher(site=target.site, package=target.package, python=target.python,
                           facts=lambda: patch_facts(None, None))
        return Patcher(site=target.site, package=target.package, python=target.python, facts=gpus.patch_facts)

    @property
    def patched(self) -> bool:
        return self._patched

    def _patched_now(self, state: PatchState) -> PatchState:
        with self._lock:
            self._patched = state.applied
        self._repost()
        return state

    def _plan_fix(self, node: str | None = None) -> ProfileFix | None:
        """The profile change for ``node``'s diagnosis (reads the profile: blocking): back to what worked when
        the diagnosis has a fix and the flags or variables it names differ from the last READY launch (they
        are put back as they were); else its first action that is a flag or an environment variable; None
        when there is neither."""
        # the profile fixer: only a fix intent
        from symmtui.launch.profilefix import APPLICABLE, plan, plan_restore

        profile = self.spec.profile
        if profile is None or profile.path is None:
            return None
        with self._lock:
            board = self._board
            restores = self._changes[2] if self._changes is not None else ()
        view = board.view(node)
        saids = (*((view.cause,) if view.cause is not None else ()), *view.errors, *view.warnings)
        changes = board.changes
        if any(s.fix is not None for s in saids) and restores and changes is not None and not self.named:
            try:  # back to what worked: the culprits the diagnosis names, as the last READY launch had them
                return plan_restore(profile.path, restores, changes.since.removeprefix("since "))
            except UserError:
                pass  # the profile cannot say it (a variable set outside it): the diagnosis's own fix
        for said in saids:
            if said.fix is not None and said.fix.type in APPLICABLE:
                return plan(profile.path, said.fix)
        return None

    def _apply_fix(self, fix: ProfileFix) -> None:
        """Write the profile change (atomically) and launch with it from now on (the next relaunch)."""
        from symmtui.launch.profile import load_profile  # the profile fixer: only a fix intent
        from symmtui.launch.profilefix import apply

        apply(fix)
        fresh = load_profile(fix.path)
        for node in self._nodes:
            if node.supervisor is not None:
                node.supervisor.profile = self._profile_of(fresh, node.plan)
        self._repost()  # the Boards' relaunch says the new command

    def _profile_of(self, profile: Profile, plan: NodePlan) -> Profile:
        from symmtui.launch.nodes import node_profile  # a profile's nodes: only a relaunch intent

        if not profile.nodes:
            return profile
        spec = next(s for s in profile.nodes if s.name == plan.name)
        return node_profile(profile, spec)
