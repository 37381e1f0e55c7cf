"""Helpers for the dashboard tests: fixed (deterministic) data from real engine code, and waiting."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from textual.app import App
from textual.pilot import Pilot

from symmtui.core.decode import LogLine
from symmtui.core.events import Event, EventBuilder
from symmtui.core.follow import LogFollower
from symmtui.core.readiness import Readiness, ReadinessConfig, Snapshot
from symmtui.core.rules import RuleSet
from symmtui.gpu.nvml import Nvml
from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
from symmtui.gpu.standin import load_standin, standin_host
from symmtui.gpu.topology import Topology, read_topology
from symmtui.session.core import Session
from symmtui.session.messages import EngineBatch, GpuSample, SessionMessage, TopologyRead
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


class FixedSession(Session):
    """A session with no threads: it posts one fixed batch (for snapshots and key tests)."""

    def __init__(self, lines: list[LogLine], events: list[Event], snapshot: Snapshot,
                 gpus: GpuSnapshot | None, topology: Topology | None, *, log_path: Path | None = None,
                 our_pids: frozenset[int] = frozenset({FAKE_PID})) -> None:
        super().__init__(host="gpu-node-7", name="glm5-tp8")
        self.fixed_lines = tuple(lines)
        self.fixed_events = tuple(events)
        self.fixed_snapshot = snapshot
        self.fixed_gpus = gpus
        self.fixed_ours = our_pids
        self.fixed_log_path = str(log_path) if log_path else None
        self.topology = topology

    def attach(self, post: Callable[[SessionMessage], object], *, acks: bool = False,
               sample_gpus: bool = True) -> None:
        self._post = post
        post(EngineBatch(self.fixed_lines, self.fixed_events, (), self.fixed_snapshot, 0, 0, self.fixed_log_path))
        if self.fixed_gpus is not None:
            post(GpuSample(self.fixed_gpus, self.fixed_ours, 12))
        if self.topology is not None:
            post(TopologyRead(self.topology, None))

    def snapshot_now(self) -> Snapshot | None:
        return self.fixed_snapshot


def crashed_session(**kw: object) -> FixedSession:
    lines = read_lines(CRASH_LOG)
    events, snap = replay(lines)
    gpus, topo = fixed_gpus(0.0)
    return FixedSession(lines, events, snap, gpus, topo, log_path=CRASH_LOG, **kw)  # type: ignore[arg-type]


def starting_session() -> FixedSession:
    lines = read_lines(READY_LOG, upto=60)
    events, snap = replay(lines)
    gpus, topo = fixed_gpus(0.45)
    return FixedSession(lines, events, snap, gpus, topo, log_path=READY_LOG)


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
