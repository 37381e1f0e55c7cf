"""Helpers for the dashboard tests: fixed (deterministic) data from real engine code, and waiting."""

from __future__ import annotations

import asyncio
import atexit
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from msgspec.structs import replace
from textual.app import App
from textual.pilot import Pilot

from symmtui.bringup.engine import HEARTBEAT, EngineUpdate
from symmtui.build import dashboard_spec, demo_spec, open_demo, open_session, watch_spec
from symmtui.demo.nodes import NodesDemo
from symmtui.demo.story import Demo
from symmtui.errors import UserError
from symmtui.gpu.nvml import Nvml
from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
from symmtui.gpu.standin import load_standin, standin_host
from symmtui.gpu.topology import Topology, read_topology
from symmtui.judge import board as boards
from symmtui.judge.board import Board, NodeInput
from symmtui.judge.events import Event, EventBuilder
from symmtui.judge.readiness import Readiness, ReadinessConfig, Snapshot
from symmtui.judge.rules import RuleSet
from symmtui.judge.verdict import NodeView, findings, ordered_events
from symmtui.launch import state
from symmtui.launch.history import Estimate
from symmtui.launch.state import LaunchRecord
from symmtui.logs.decode import LogLine
from symmtui.logs.follow import LogFollower
from symmtui.logs.logcmd import LogCommand
from symmtui.session.core import Session
from symmtui.session.intents import (
    ApplyFix,
    ApplyPatch,
    CheckPatch,
    Intent,
    PlanFix,
    RequestStacks,
    RevertPatch,
    Say,
)
from symmtui.session.mailbox import Mailbox
from symmtui.session.messages import (
    EngineBatch,
    GpuRound,
    Notice,
    PatchState,
    SessionMessage,
    StacksTaken,
    TopologyRead,
)
from symmtui.session.node import eta_of
from symmtui.session.patching import Patcher
from symmtui.stacks.gpus import evidence, utilization_of
from symmtui.ui.screens.confirm import KEY_GUARD, ConfirmScreen
from tests.handclock import HandClock, LeapClock
from tests.ui.screen_text import screen_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
READY_LOG = FIXTURES / "sglang-tp8-ready.log"
CRASH_LOG = FIXTURES / "sglang-tp8-symm-mem-keyerror.log"
FAKE_PID = 424242


def read_lines(path: Path, upto: int | None = None) -> list[LogLine]:
    """The file's lines through the real follower (optionally only the first `upto`)."""
    follower = LogFollower(path)
    try:
        lines = [item for item in follower.poll() if isinstance(item, LogLine)]
    finally:
        follower.close()
    return lines if upto is None else lines[:upto]


def replay(lines: list[LogLine], *, step: float = 0.5) -> tuple[list[Event], Snapshot]:
    """Events and the readiness snapshot after these lines, fed on a fixed clock (step s per line)."""
    builder = EventBuilder(RuleSet())
    readiness = Readiness(ReadinessConfig(timeout=900.0, stall=300.0), 0.0)
    events: list[Event] = []
    now = 0.0
    for line in lines:
        now += step
        for ev in builder.feed(line):
            events.append(ev)
            readiness.feed(ev, now)
        readiness.feed_activity(now)
    for ev in builder.flush():
        events.append(ev)
        readiness.feed(ev, now)
    return events, readiness.snapshot(now + 1.0)


def fixed_gpus(load: float) -> tuple[GpuSnapshot, Topology]:
    """A GPU snapshot and topology of the 8x RTX PRO 6000 stand-in on a fixed clock, `load` of the model."""
    module = load_standin("rtx-pro-6000-x8-pcie", clock=lambda: 1000.0)
    host = standin_host(module)
    if load > 0:
        host.set_load(load, FAKE_PID, name="python3")
    host.set_utilization(87.0 if load > 0 else 0.0)
    nvml = Nvml(module, process_lookup=lambda pid: ("python3", ("python3", "-m", "sglang.launch_server")))
    snap = GpuSampler(nvml).sample_once()
    snap = GpuSnapshot(1000.0, snap.infos, snap.samples, 0.0004, snap.unavailable_reason)
    topo = read_topology(nvml)
    nvml.shutdown()
    return snap, topo


class FixedSession:
    """The Session protocol over fixed data, with no threads: it posts one batch (for snapshots and key
    tests); the patch intents use ``patcher`` when given; every other intent says why not."""

    def __init__(self, lines: list[LogLine], events: list[Event], snapshot: Snapshot,
                 gpus: GpuSnapshot | None, topology: Topology | None, *, log_path: Path | None = None,
                 our_pids: frozenset[int] = frozenset({FAKE_PID}), patcher: Patcher | None = None) -> None:
        self.host, self.name = "gpu-node-7", "glm5-tp8"
        self.fixed_lines = tuple(lines)
        self.fixed_events = tuple(events)
        self.fixed_snapshot = snapshot
        self.fixed_gpus = gpus
        self.fixed_ours = our_pids
        self.fixed_log_path = str(log_path) if log_path else None
        self.topology = topology
        self.patcher = patcher
        self.patched = False
        self.estimate: Estimate | None = None
        self.mailbox = Mailbox()
        self.closed = False
        self.seq = 0
        self.asked: list[object] = []

    @property
    def nodes(self) -> tuple[str, ...]:
        return (self.host,)

    @property
    def named(self) -> bool:
        return False

    def why_not(self) -> dict[str, str | None]:
        return {"launch": NO_LAUNCH, "relaunch": NO_LAUNCH, "fix": "no profile to change in this session",
                "patch": None if self.patcher is not None else
                "no SGLang/vLLM install to patch in this session (use symmtui patch)", "stacks": None}

    def board(self) -> Board:
        """The Board of the fixed snapshot, built as a live Session builds one."""
        snap = self.fixed_snapshot
        found = findings(ordered_events(snap), patched=self.patched)
        view = NodeView(self.host, snap, None, found, *eta_of(self.estimate, snap))
        self.seq += 1
        ev = evidence(utilization_of(self.fixed_gpus.samples)) if self.fixed_gpus is not None else None
        return boards.build(self.seq, [NodeInput(view, log_path=self.fixed_log_path)],
                            snap.started_at + snap.elapsed, patched=self.patched, why_not=self.why_not(),
                            gpu_stall=ev.short() if ev is not None else None)

    def post(self, snap: Snapshot) -> None:
        """A batch with no lines that moves the bring-up to ``snap`` (as a live session's batches do)."""
        self.fixed_snapshot = snap
        self.mailbox.put(self._batch((), ()))

    def _batch(self, lines: tuple[LogLine, ...], events: tuple[Event, ...]) -> EngineBatch:
        update = EngineUpdate(lines, events, (), self.fixed_snapshot, 0, 0)
        return EngineBatch(self.host, update, self.fixed_log_path, self.board())

    def attach(self, wake: Callable[[], object]) -> Mailbox:
        self.mailbox.attach(wake)
        self.mailbox.put(self._batch(self.fixed_lines, self.fixed_events))
        if self.fixed_gpus is not None:
            self.mailbox.put(GpuRound(self.fixed_gpus, self.fixed_ours, 12))
        if self.topology is not None:
            self.mailbox.put(TopologyRead(self.topology, None))
        return self.mailbox

    def observe(self, observer: Callable[[SessionMessage], None], *, name: str = "observer") -> None:
        raise AssertionError("a fixed session has no observers")

    def ask(self, intent: Intent[Any]) -> Any:
        self.asked.append(intent)
        if isinstance(intent, CheckPatch):
            assert self.patcher is not None
            return self.patcher.check()
        if isinstance(intent, ApplyPatch):
            assert self.patcher is not None
            return self._patched(self.patcher.apply(intent.view))
        if isinstance(intent, RevertPatch):
            assert self.patcher is not None
            return self._patched(self.patcher.revert())
        if isinstance(intent, PlanFix):
            return None
        if isinstance(intent, RequestStacks):
            self.mailbox.put(StacksTaken(None, "no server process known: stacks need a launch (a profile) or --pid",
                                         False, node=self.host))
            return None
        if isinstance(intent, Say):
            self.mailbox.put(Notice(intent.text, intent.severity))
            return None
        if isinstance(intent, ApplyFix):
            raise UserError("no profile to change in this session")
        raise UserError(NO_LAUNCH)

    def _patched(self, state: PatchState) -> PatchState:
        self.patched = state.applied
        self.mailbox.put(self._batch((), ()))  # the Board's advice follows the patch state
        return state

    def close(self) -> None:
        self.closed = True


NO_LAUNCH = "relaunch needs a profile with server.command (symmtui --config FILE)"


def crashed_session(**kw: object) -> FixedSession:
    lines = read_lines(CRASH_LOG)
    events, snap = replay(lines)
    gpus, topo = fixed_gpus(0.0)
    return FixedSession(lines, events, snap, gpus, topo, log_path=CRASH_LOG, **kw)  # type: ignore[arg-type]


def starting_session() -> FixedSession:
    """The ready log's first 60 lines, as a file of their own (the pane reads the file it is given)."""
    partial = _scratch() / "sglang-tp8-starting.log"
    if not partial.exists():
        partial.write_text("".join(READY_LOG.read_text(encoding="utf-8").splitlines(keepends=True)[:60]),
                           encoding="utf-8")
    lines = read_lines(partial)
    events, snap = replay(lines)
    gpus, topo = fixed_gpus(0.45)
    return FixedSession(lines, events, snap, gpus, topo, log_path=partial)


def _scratch() -> Path:
    """A folder of this test process's own, removed when it ends."""
    global _SCRATCH
    if _SCRATCH is None:
        _SCRATCH = Path(tempfile.mkdtemp(prefix="symmtui-test-kit-"))
        atexit.register(shutil.rmtree, _SCRATCH, True)
    return _SCRATCH


_SCRATCH: Path | None = None


def ready_session() -> FixedSession:
    lines = read_lines(READY_LOG)
    events, snap = replay(lines)
    gpus, topo = fixed_gpus(1.0)
    return FixedSession(lines, events, snap, gpus, topo, log_path=READY_LOG)


async def wait_for(pilot: Pilot[object], predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Let the app run until `predicate()` holds; fail with the screen text after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; screen:\n{screen_text(pilot.app)}")
        await pilot.pause(0.05)


async def heartbeats(pilot: Pilot[object], clock: LeapClock, beats: int = 2) -> None:
    """Time passing, without waiting for it: ``clock`` leaps past the engine's heartbeat ``beats`` times, and each
    time the app lays out a newer Board (built by the heartbeat: the ETA from the lines' rate, the log's clock)."""
    app = pilot.app
    for _ in range(beats):
        seen = getattr(app, "board", None)
        before = seen.seq if seen is not None else -1
        clock.leap(HEARTBEAT)
        await wait_for(pilot, lambda seq=before: (b := getattr(app, "board", None)) is not None and b.seq > seq,
                       "a Board built by the heartbeat")
    await settle(pilot)


async def send_keys(pilot: Pilot[object], *keys: str) -> None:
    """Press ``keys`` (the app handles each as a key from the terminal) without ``Pilot.press``'s wait for an
    idle process, which lasts up to 2 s a key while this process's threads work (a relaunch, the demo's
    engine): follow it with ``wait_for`` on what the key does."""
    for key in keys:
        pilot.app.simulate_key(key)
    await asyncio.sleep(0)


async def settle(pilot: Pilot[object]) -> None:
    """A few event-loop turns (messages posted from threads get handled)."""
    for _ in range(3):
        await pilot.pause()
    await asyncio.sleep(0)


def text(app: App[object]) -> str:
    return screen_text(app)


def demo_session(speed: float, story: str = "crash", *, nodes: int = 1, tp: int | None = None,
                 clock: Callable[[], float] = time.monotonic, **changes: object) -> tuple[Session, Demo | NodesDemo]:
    """`symmtui demo`'s Session (built as the verb builds it, ``changes`` made to its spec; ``clock``: its) and
    its demo."""
    spec, demo = demo_spec(speed, story, nodes=nodes, tp=tp, record_bundle=False)
    return open_demo(replace(spec, **changes), demo, clock), demo  # type: ignore[arg-type]


def watched(source: Path | LogCommand | None = None, *,
            observe: Callable[[SessionMessage], None] | None = None,
            clock: Callable[[], float] = time.monotonic, nvml: Nvml | None = None, **kw: object) -> Session:
    """A Session that watches ``source`` (and a URL, a pid: ``kw``), built and started as `wait`'s is;
    ``observe`` hears every message from the first (an observer registered before the start); ``clock``: its;
    ``nvml``: a stand-in the test drives, handed to the Session."""
    session = Session(watch_spec(source, **kw), clock=clock, nvml=nvml)  # type: ignore[arg-type]
    if observe is not None:
        session.observe(observe)
    session.start()
    return session


def current_launch(demo: Demo | NodesDemo) -> LaunchRecord | None:
    """The launch the demo's profile has recorded now (the state file its Supervisor writes)."""
    return state.load(demo.profile.key)


def dashboard(config: str | None, log: str | None, url: str | None = None, **kw: object) -> Session:
    """The dashboard's Session (`symmtui [--config] [--log] [--url]`), built as the verb builds it (no bundle)."""
    return open_session(dashboard_spec(config, log, url, record_bundle=False, **kw))  # type: ignore[arg-type]


def toasts(app: App[object]) -> list[str]:
    """Every notification the app shows from now on (through ``App.notify``; the toasts are still shown)."""
    said: list[str] = []
    shown = app.notify

    def notify(message: str, **kw: Any) -> None:
        said.append(str(message))
        shown(message, **kw)

    app.notify = notify  # type: ignore[method-assign]
    return said


def dialog_title(app: App[object]) -> str | None:
    """The title of the question on screen, or None: no ConfirmScreen, or one pushed but not yet composed (a
    screen is the app's ``screen`` before its children mount, so a query in that moment finds nothing)."""
    screen = app.screen
    if not isinstance(screen, ConfirmScreen) or not screen.is_mounted:  # mounted: every child is (its body too)
        return None
    return str(screen.query_one("#confirm-dialog").border_title)


async def answer(pilot: Pilot[object], key: str = "y") -> None:
    """Press ``key`` in the modal on screen once it takes a confirming key (a yes within KEY_GUARD of a
    question opening is ignored, as typed ahead)."""
    screen = pilot.app.screen
    guard = getattr(screen, "guard", None)
    clock = getattr(pilot.app, "clock", None)
    deadline = time.monotonic() + 30
    while guard is None or not guard.accepting:
        if time.monotonic() > deadline:
            raise AssertionError(f"{type(screen).__name__} never took a key")
        if guard is not None and isinstance(clock, HandClock):  # the test's clock: up KEY_GUARD now
            clock.advance(KEY_GUARD)
            continue
        await asyncio.sleep(0.05)
        guard = getattr(screen, "guard", None)
    await send_keys(pilot, key)
