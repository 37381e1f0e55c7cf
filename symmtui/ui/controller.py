"""The glue between the engine's threads and the UI: buffers their output, nudges the app, runs intents.

Engine objects (Bringup, GpuSampler, Supervisor, the patcher) call back on their own threads; the
controller keeps what they produce (a buffer of lines and events, latest-value slots for the
readiness and GPU snapshots) and posts one coalesced nudge message. The UI drains on the nudge.
Intents (patch, relaunch) are blocking calls the app runs in thread workers.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.message import Message

from symmtui.core.readiness import Snapshot, State
from symmtui.errors import UserError
from symmtui.gpu.facts import capabilities_of, holders_in
from symmtui.launch.history import verdict_of
from symmtui.ui.messages import EngineDirty, GpuDirty, Notice, TopologyReady

if TYPE_CHECKING:
    from symmtui.core.engine import Bringup, EngineUpdate
    from symmtui.core.events import Event
    from symmtui.core.follow import FileNotice, LogLine
    from symmtui.gpu.nvml import Nvml
    from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
    from symmtui.gpu.topology import Topology
    from symmtui.launch.history import Estimate
    from symmtui.launch.report import Progress, RelaunchResult
    from symmtui.launch.supervisor import Supervisor
    from symmtui.ui.patching import Patcher

Post = Callable[[Message], object]
OURS_REFRESH = 5.0  # seconds between walks of the process table when the GPU process list is unchanged
_STALE = object()  # "compute our pids on the next sample"
MAX_PENDING_LINES = 200_000  # beyond this the oldest pending lines are dropped (the pane reads them back)


@dataclass
class Drained:
    """What arrived since the last drain."""

    lines: list[LogLine] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    notices: list[FileNotice] = field(default_factory=list)
    snapshot: Snapshot | None = None
    dropped: int = 0
    restarted: bool = False
    log_path: str | None = None


class Controller:
    """Owns the engine objects of one dashboard session and feeds the UI from their threads."""

    def __init__(
        self,
        *,
        host: str,
        profile_name: str,
        clock: Callable[[], float] = time.time,
        supervisor: Supervisor | None = None,
        nvml: Nvml | None = None,
        patcher: Patcher | None = None,
        sample_interval: float = 1.0,
    ) -> None:
        self.host = host
        self.profile_name = profile_name
        self.clock = clock
        self.supervisor = supervisor
        self.nvml = nvml
        self.patcher = patcher
        self.sample_interval = sample_interval
        self.engine: Bringup | None = None
        self.sampler: GpuSampler | None = None
        self.topology: Topology | None = None
        self.topology_reason: str | None = None
        self.log_path: str | None = None
        self._post: Post | None = None
        self._lock = threading.Lock()
        self._lines: deque[LogLine] = deque()
        self._events: list[Event] = []
        self._notices: list[FileNotice] = []
        self._snapshot: Snapshot | None = None
        self._dropped = 0
        self._restarted = False
        self._gpu: GpuSnapshot | None = None
        self._our_pids: frozenset[int] = frozenset()
        self._closed = threading.Event()
        self._finished_launch: str | None = None
        self.capability: tuple[int, int] | None = None  # the one the patch targets: gpu.facts' rule
        self.on_close: list[Callable[[], None]] = []
        self._estimate: Estimate | None = None
        self._our_pids_cache: frozenset[int] = frozenset()
        self._ours_key: object = _STALE  # the GPU holders the cache was computed for (None: not listable)
        self._ours_at = 0.0

    # ---- wiring ------------------------------------------------------------------------------

    def attach(self, post: Post) -> None:
        """Connect to the app (its thread-safe post_message) and start the background parts."""
        self._post = post
        if self.nvml is not None:
            self._start_gpu()
        if self.supervisor is not None:
            threading.Thread(target=self._load_estimate, name="symmtui-history", daemon=True).start()
        self._nudge_engine()

    def _load_estimate(self) -> None:
        """Read the launch history (a file: never on the UI thread) for the gauge's ETA."""
        if self.supervisor is not None:
            try:
                self._estimate = self.supervisor.estimate()
            except UserError as exc:
                self.notify(f"launch history unreadable: {exc}", "warning")

    def eta_for(self, snap: Snapshot) -> tuple[float | None, int]:
        """Seconds left predicted from earlier successful launches, and how many there were."""
        est = self._estimate
        if est is None or snap.state not in (State.STARTING, State.WAITING, State.STALLED):
            return None, 0
        in_phase = 0.0
        for span in reversed(snap.phases):
            if span.name == snap.phase and span.end is None:
                in_phase = max(0.0, snap.elapsed - span.start)
                break
        return est.remaining(snap.phase, in_phase, snap.elapsed), est.samples

    def set_engine(self, engine: Bringup, log_path: str | None = None) -> None:
        """The readiness engine to follow (built with ``on_update=controller.on_engine_update``); starts it."""
        self.engine = engine
        self.log_path = log_path
        engine.start()  # now: its clock starts with the launch; updates wait here until the app attaches

    def close(self) -> None:
        """Stop every thread we started, then run the close hooks (the demo stops its servers)."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self.sampler is not None:
            self.sampler.stop()
        if self.engine is not None:
            self.engine.stop()
        for hook in reversed(self.on_close):
            hook()

    def _send(self, message: Message) -> None:
        post = self._post
        if post is not None and not self._closed.is_set():
            post(message)

    def _nudge_engine(self) -> None:
        self._send(EngineDirty())

    def notify(self, text: str, severity: str = "information") -> None:
        """A toast from any thread."""
        self._send(Notice(text, severity))

    # ---- engine side (called on engine threads) ----------------------------------------------

    def on_engine_update(self, update: EngineUpdate) -> None:
        """Bringup's callback: keep the batch, nudge the UI."""
        with self._lock:
            self._lines.extend(update.lines)
            overflow = len(self._lines) - MAX_PENDING_LINES
            for _ in range(max(0, overflow)):
                self._lines.popleft()
                self._dropped += 1
            self._events.extend(update.events)
            self._notices.extend(update.notices)
            if update.snapshot is not None:
                self._snapshot = update.snapshot
        self._nudge_engine()
        if update.snapshot is not None:
            self._maybe_finish(update.snapshot)

    def drain(self) -> Drained:
        """Everything that arrived since the last drain (UI thread)."""
        with self._lock:
            out = Drained(
                lines=list(self._lines),
                events=self._events,
                notices=self._notices,
                snapshot=self._snapshot,
                dropped=self._dropped,
                restarted=self._restarted,
                log_path=self.log_path,
            )
            self._lines.clear()
            self._events = []
            self._notices = []
            self._dropped = 0
            self._restarted = False
        return out

    def snapshot_now(self) -> Snapshot | None:
        """A fresh readiness snapshot (elapsed, time left) for the once-a-second tick."""
        if self.engine is not None:
            return self.engine.snapshot()
        with self._lock:
            return self._snapshot

    def _maybe_finish(self, snap: Snapshot) -> None:
        """Record the launch's outcome in the history once it is ready or failed (for later ETAs)."""
        sup = self.supervisor
        if sup is None or snap.state not in (State.READY, State.CRASHED, State.TIMED_OUT):
            return
        record = sup.current()
        if record is None or record.launch_id == self._finished_launch:
            return
        self._finished_launch = record.launch_id
        verdict = verdict_of(snap.state)
        phases = {s.name: d for s in snap.phases if (d := s.duration()) is not None}
        cause = snap.cause.summary if snap.cause is not None else None
        try:
            sup.finish(record, verdict, cause=cause, phases=phases)
        except (OSError, UserError) as exc:
            self.notify(f"could not write the launch history: {exc}", "warning")
            return
        self._load_estimate()

    # ---- GPUs --------------------------------------------------------------------------------

    def _start_gpu(self) -> None:
        from symmtui.gpu.sampler import GpuSampler

        assert self.nvml is not None
        self.sampler = GpuSampler(self.nvml, interval=self.sample_interval, on_sample=self.on_gpu_sample)
        self.sampler.start()
        threading.Thread(target=self._read_topology, name="symmtui-topology", daemon=True).start()

    def _read_topology(self) -> None:
        from symmtui.gpu.topology import read_topology

        assert self.nvml is not None
        try:
            self.topology = read_topology(self.nvml)
        except Exception as exc:  # noqa: BLE001 - any NVML failure is shown in the panel, not a crash
            self.topology_reason = str(exc) or type(exc).__name__
        if self.topology is not None and not self.topology.matrix:
            self.topology_reason = self.nvml.unavailable_reason or "no GPUs"
        self._send(TopologyReady())

    def on_gpu_sample(self, snapshot: GpuSnapshot) -> None:
        """GpuSampler's callback: keep the latest, nudge the UI."""
        holders = holders_in(snapshot.samples).pids
        now = time.monotonic()
        if holders != self._ours_key or now - self._ours_at > OURS_REFRESH:
            # a walk of the process table: only when the GPU's process list changed, or now and then
            self._our_pids_cache = self._compute_our_pids()
            self._ours_key, self._ours_at = holders, now
        ours = self._our_pids_cache
        with self._lock:
            self._gpu = snapshot
            self._our_pids = ours
            self.capability = capabilities_of(snapshot.infos).for_patch or self.capability
        self._send(GpuDirty())

    def latest_gpu(self) -> tuple[GpuSnapshot | None, frozenset[int]]:
        with self._lock:
            return self._gpu, self._our_pids

    def _compute_our_pids(self) -> frozenset[int]:
        """Pids of the launch we supervise (its whole process tree), for 'ours vs strangers'."""
        sup = self.supervisor
        if sup is None:
            return frozenset()
        from symmtui.launch import proctree

        record = sup.current()
        if record is None:
            return frozenset()
        procs = proctree.collect(record.pid, record.create_time, record.sid, record.pgid, record.launch_id)
        return frozenset(p.pid for p in procs)

    # ---- intents (blocking: call from a worker thread) ---------------------------------------

    @property
    def can_relaunch(self) -> str | None:
        """None when relaunch is possible, else why not (one line)."""
        if self.supervisor is None:
            return "relaunch needs a profile with server.command (symmtui --config FILE)"
        if self.supervisor.profile.argv is None:
            return self.supervisor.profile.attach_reason
        return None

    def relaunch(self, on_progress: Callable[[Progress], None]) -> RelaunchResult:
        """Stop what runs, launch again, and point the engine at the new log and pid."""
        sup = self.supervisor
        assert sup is not None
        result = sup.relaunch(on_progress, capability=self.capability)
        self._finished_launch = None
        self._ours_key = _STALE
        record = result.record
        with self._lock:
            self.log_path = record.log_path
            self._restarted = True
            self._lines.clear()
            self._events = []
        if self.engine is not None:
            self.engine.restart(log_path=record.log_path, pid=record.pid)
        self._nudge_engine()
        return result

    def our_launch_pids(self) -> Sequence[int]:
        return sorted(self._compute_our_pids())
