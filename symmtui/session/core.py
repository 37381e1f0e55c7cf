"""Session: one bring-up, headless. It owns the engine, the GPU sampler and topology, the supervisor,
our pids, the capability, the history writer and the verdict's end, and posts what they produce.

Every front end (the dashboard, `wait`, `launch`, `stop`, `demo`, the benchmarks) builds one Session
(see ``symmtui.session.build``) and reads what it posts: plain dataclasses from
``symmtui.session.messages``. Engine batches go out one at a time when the front end asks for
acknowledgements (the dashboard does): while one is being rendered the engine keeps collecting in its
one buffer (one cap, one drop policy), so a slow screen never grows a second queue. GPU samples go
out as they come (the Textual adapter lets a newer one replace a pending one).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from symmtui.core.engine import Bringup, EngineUpdate, is_log_command
from symmtui.core.readiness import Snapshot, State
from symmtui.errors import UserError
from symmtui.session.messages import (
    EngineBatch,
    GpuSample,
    Notice,
    PatchState,
    SessionMessage,
    StacksTaken,
    TopologyRead,
    VerdictReached,
)
from symmtui.session.outcome import RECORDED, outcome_of, patch_note
from symmtui.session.settings import BringupSettings, bringup_settings

if TYPE_CHECKING:
    import os

    from symmtui.core.logcmd import LogCommand
    from symmtui.gpu.nvml import Nvml
    from symmtui.gpu.sampler import GpuSampler, GpuSnapshot
    from symmtui.gpu.source import GpuSource
    from symmtui.gpu.topology import Topology
    from symmtui.launch.history import Estimate
    from symmtui.launch.proctree import ProcInfo
    from symmtui.launch.report import Progress, RelaunchResult, StopReport
    from symmtui.launch.state import LaunchRecord
    from symmtui.launch.supervisor import Supervisor
    from symmtui.session.patching import Patcher, PatchView
    from symmtui.session.timings import PhaseTimings

Post = Callable[[SessionMessage], object]
VERDICTS = (State.READY, State.CRASHED, State.STALLED, State.TIMED_OUT, State.STOPPED)
"""States an observer hears of as a VerdictReached (STALLED too: it is what a user walking away wants to know)."""
OURS_REFRESH = 5.0  # seconds between walks of the process table when the GPU process list is unchanged
_STALE = object()  # "compute our pids at the next sample"
ACK_POLL = 0.1  # how often a batch waiting for the front end checks whether the session closed


class Session:
    """One bring-up under any front end: build it, ``attach(post)``, ``follow`` or ``launch``, ``close``."""

    def __init__(
        self,
        *,
        host: str,
        name: str,
        settings: BringupSettings | None = None,
        supervisor: Supervisor | None = None,
        nvml: Nvml | None = None,
        patcher: Patcher | None = None,
        url: str | None = None,
        port_owner: Callable[[int], str | None] | None = None,
        sample_interval: float = 1.0,
        gpus: GpuSource | None = None,
    ) -> None:
        self.host = host
        self.name = name
        self.settings = settings if settings is not None else bringup_settings()
        self.supervisor = supervisor
        self.nvml = nvml
        self.patcher = patcher
        self.url = url
        self.port_owner = port_owner
        """Names the process holding a port, for "Address already in use" (``diagnose(port_owner=)``)."""
        self.sample_interval = sample_interval
        self.gpus = gpus
        """Where the GPU sampler reads (``symmtui.gpu.source``: exporters, several nodes); None: ``nvml``."""
        self.engine: Bringup | None = None
        self.sampler: GpuSampler | None = None
        self.topology: Topology | None = None
        self.capability: tuple[int, int] | None = None
        """The capability the SM120 patch targets (``symmtui.gpu.facts``' rule: the highest)."""
        self.patch_applied = False
        self.log_path: str | None = None
        self.log_command: LogCommand | None = None
        """The command whose output is the log (``follow(LogCommand)``); relaunches follow it again."""
        self.spool_log_commands = False
        """Keep a copy of a log command's output in the state dir while it runs (the dashboard sets it:
        its log pane reads lines that left its memory back from that copy, as from a log file)."""
        self._spool: str | None = None
        self._batch_log_path: str | None = None  # the file of the generation being posted
        self.estimate: Estimate | None = None
        self.on_close: list[Callable[[], None]] = []
        self._post: Post | None = None
        self._observers: list[Callable[[SessionMessage], None]] = []
        self._verdict_seen: tuple[int, State] | None = None  # (generation, state) last posted as VerdictReached
        self._acks = False
        self._gate = threading.Event()  # set: the front end may take the next engine batch
        self._closed = threading.Event()
        self._generation = 0  # the engine generation posted last (a relaunch starts a new one)
        self._record: LaunchRecord | None = None  # the launch being watched (for the history)
        # The engine generation that watches _record: a verdict of another generation (the server a
        # relaunch just stopped) is never written as this launch's outcome.
        self._record_gen = 0
        self._patch_note: str | None = None
        self._finished: str | None = None  # launch_id already written to the history
        self._history_lock = threading.Lock()
        self._ours: frozenset[int] = frozenset()
        self._ours_key: object = _STALE  # the GPU holders our pids were computed for (None: not listable)
        self._ours_at = 0.0
        self.auto_stacks = False
        """Dump the server's stacks once each time the state becomes STALLED (the dashboard turns it on)."""
        self._stalled = False
        self._pid: int | None = None  # the followed pid (an attach); a launch's tree comes from its record
        self._stacks_lock = threading.Lock()  # one dump at a time
        self.stall_nvml: Nvml | None = None
        """NVML read once per stacks dump when no sampler runs (`wait`): the GPUs' evidence of a hang."""
        self.timings: PhaseTimings | None = None
        """A launch's phases against its usual ones, once READY (a profile's session: it has a history)."""
        if supervisor is not None:
            from symmtui.session.timings import PhaseTimings

            self.timings = PhaseTimings(supervisor.profile.command_hash)
            self.observe(self.timings.observe)  # first: the notification's text may quote it

    # ---- wiring ------------------------------------------------------------------------------

    def attach(self, post: Post, *, acks: bool = False, sample_gpus: bool = True) -> None:
        """Send messages to ``post`` (thread-safe) and start the GPU sampler, topology and ETA reads.

        ``acks``: the front end calls :meth:`batch_done` after each EngineBatch; the next waits for it.
        ``sample_gpus``: False for a front end that shows no GPUs (the command line).
        """
        self._post = post
        self._acks = acks
        if (self.nvml is not None or self.gpus is not None) and sample_gpus:
            self._start_gpu()
        if self.supervisor is not None:
            threading.Thread(target=self._load_estimate, name="symmtui-history", daemon=True).start()
        self._gate.set()

    def batch_done(self) -> None:
        """The front end finished with the last EngineBatch: the next one may come."""
        self._gate.set()

    def observe(self, observer: Callable[[SessionMessage], None]) -> None:
        """Also hand every message to ``observer`` (notifications, the bundle recorder, the metrics
        endpoint), on the sending thread, before the front end gets it. An observer must return at once
        (hand slow work to its own thread) and must not raise (catch what it expects and turn it into a
        Notice through :meth:`notify`)."""
        self._observers.append(observer)

    def send(self, message: SessionMessage) -> None:
        """Post a message to the observers and the front end (any thread); dropped once closed or before attach."""
        if self._closed.is_set():
            return
        for observer in tuple(self._observers):
            observer(message)
        post = self._post
        if post is not None:
            post(message)

    def notify(self, text: str, severity: str = "information") -> None:
        """A one-line note for the user, from any thread."""
        self.send(Notice(text, severity))

    def close(self) -> None:
        """Stop every thread we started, then run the close hooks (the demo stops its servers)."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._gate.set()  # a batch waiting for an acknowledgement gives up
        if self.sampler is not None:
            self.sampler.stop()
        if self.gpus is not None:
            self.gpus.close()
        if self.stall_nvml is not None:
            self.stall_nvml.shutdown()
        if self.engine is not None:
            self.engine.stop()
        for hook in reversed(self.on_close):
            hook()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    # ---- the engine --------------------------------------------------------------------------

    def follow(
        self,
        log_path: str | os.PathLike[str] | LogCommand | None,
        *,
        pid: int | None = None,
        new_only: bool = False,
        tail_lines: int | None = None,
        probe_timeout: float = 2.0,
        record: LaunchRecord | None = None,
        recorded: bool = False,
    ) -> Bringup:
        """Start judging a bring-up (the log, ``self.url``, ``pid``); ``record``: the launch it is (history);
        ``recorded``: its outcome is in the history already (kept to know a stop we asked for).

        ``log_path`` is a file, or a ``LogCommand`` whose output is the log (``core.logcmd``): then
        ``log_path`` stays None (no file to read lines back from) and ``log_command`` is set."""
        if self.engine is not None:
            raise RuntimeError("this session already follows a bring-up; use launch() to start over")
        spool = None
        if is_log_command(log_path):
            self.log_command = log_path
            self.log_path = None
            if self.spool_log_commands:
                from symmtui.core.logcmd import spool_path
                from symmtui.paths import state_dir

                spool = self._spool = str(spool_path(state_dir("logcmd")))
            self._batch_log_path = self._spool
        else:
            self.log_command = None
            self.log_path = self._batch_log_path = str(log_path) if log_path is not None else None
        with self._history_lock:
            self._record, self._record_gen = record, 0
            if recorded and record is not None:
                self._finished = record.launch_id
        self._pid = pid
        self.engine = Bringup(
            log_path, ruleset=self.settings.ruleset, config=self.settings.readiness, url=self.url, pid=pid,
            new_only=new_only, tail_lines=tail_lines, on_update=self._on_engine_update,
            probe_timeout=probe_timeout, exit_reason=self._exit_reason, log_spool=spool,
        )
        self.engine.start()  # now: its clock starts with the launch; batches wait until a front end attaches
        return self.engine

    def _exit_reason(self, code: int | None) -> str | None:
        """The engine asks when the watched pid exits: a stop noted for this launch makes it STOPPED."""
        sup, record = self.supervisor, self._record
        if sup is None or record is None:
            return None
        return sup.stop_reason(record)

    def snapshot_now(self) -> Snapshot | None:
        """A fresh readiness snapshot (elapsed, time left) for a once-a-second redraw; None when there
        is no engine or it is busy with a batch (never blocks the caller's loop)."""
        return self.engine.snapshot_if_free() if self.engine is not None else None

    def _on_engine_update(self, update: EngineUpdate) -> None:
        """Bringup's callback (its dispatcher thread): write the history at the verdict, post the batch."""
        if update.generation < self._generation:
            return  # a batch of the launch before a relaunch
        restarted = update.generation > self._generation
        self._generation = update.generation
        if restarted:  # the file of the relaunch (set before the engine restarted), or the command's copy
            self._batch_log_path = self.log_path if self.log_path is not None else self._spool
        if update.snapshot.state in RECORDED:
            self._finish(update.snapshot, update.generation)
        verdict = self._verdict_change(update)
        stalled = update.snapshot.state is State.STALLED
        if stalled and not self._stalled and self.auto_stacks:
            self.request_stacks(auto=True)  # once per stall: again only after it moved and stalled anew
        self._stalled = stalled
        batch = EngineBatch(update.lines, update.events, update.notices, update.snapshot, update.dropped_lines,
                            update.generation, self._batch_log_path, restarted, update.ranks)
        # One batch in flight: until the front end is done with the last one, the engine keeps collecting.
        while not self._gate.wait(ACK_POLL):
            if self._closed.is_set():
                return
        if self._acks:
            self._gate.clear()
        self.send(batch)
        if verdict is not None:
            self.send(verdict)

    def _verdict_change(self, update: EngineUpdate) -> VerdictReached | None:
        """A VerdictReached when this update's state is a verdict the last one was not (once per change)."""
        state = update.snapshot.state
        key = (update.generation, state)
        if state not in VERDICTS:
            if self._verdict_seen is not None and self._verdict_seen[0] == update.generation:
                self._verdict_seen = None  # moved on (a STALLED that resumed): the next verdict is news
            return None
        if key == self._verdict_seen:
            return None
        self._verdict_seen = key
        with self._history_lock:
            record = self._record if update.generation == self._record_gen else None
        return VerdictReached(update.snapshot, update.generation,
                              record.launch_id if record is not None else None, self._batch_log_path)

    # ---- the history (one writer, whatever the front end) ------------------------------------

    def _finish(self, snap: Snapshot, generation: int) -> None:
        """Append the watched launch's outcome (``snap`` of engine ``generation``) to the launch history, once per launch."""
        sup = self.supervisor
        with self._history_lock:
            record = self._record
            if sup is None or record is None or generation != self._record_gen or record.launch_id == self._finished:
                return
            self._finished = record.launch_id
        out = outcome_of(snap)
        try:
            sup.finish(record, out.verdict, cause=out.cause, phases=out.phases, patch=self._patch_note)
        except (OSError, UserError) as exc:
            self.notify(f"could not write the launch history: {exc}", "warning")
            return
        self._load_estimate()

    def _load_estimate(self) -> None:
        """Read the launch history (a file: never on a UI loop) for the ETA."""
        if self.supervisor is not None:
            try:
                self.estimate = self.supervisor.estimate()
            except UserError as exc:
                self.notify(f"launch history unreadable: {exc}", "warning")

    def eta_for(self, snap: Snapshot) -> tuple[float | None, int]:
        """Seconds left predicted from earlier successful launches, and how many there were."""
        est = self.estimate
        if est is None or snap.state not in (State.STARTING, State.WAITING, State.STALLED):
            return None, 0
        in_phase = 0.0
        for span in reversed(snap.phases):
            if span.name == snap.phase and span.end is None:
                in_phase = max(0.0, snap.elapsed - span.start)
                break
        return est.remaining(snap.phase, in_phase, snap.elapsed), est.samples

    # ---- GPUs --------------------------------------------------------------------------------

    def _start_gpu(self) -> None:
        from symmtui.gpu.sampler import GpuSampler

        source = self.gpus if self.gpus is not None else self.nvml
        assert source is not None
        self.sampler = GpuSampler(source, interval=self.sample_interval, on_sample=self._on_gpu_sample)
        self.sampler.start()
        if self.nvml is None:
            return  # exporters publish no topology
        threading.Thread(target=self._read_topology, name="symmtui-topology", daemon=True).start()

    def _read_topology(self) -> None:
        from symmtui.gpu.topology import read_topology

        assert self.nvml is not None
        reason: str | None = None
        try:
            self.topology = read_topology(self.nvml)
        except Exception as exc:  # noqa: BLE001 - any NVML failure is shown in the panel, not a crash
            reason = str(exc) or type(exc).__name__
        if self.topology is not None and not self.topology.matrix:
            reason = self.nvml.unavailable_reason or "no GPUs"
        self.send(TopologyRead(self.topology, reason))

    def _on_gpu_sample(self, snapshot: GpuSnapshot) -> None:
        """GpuSampler's callback (its thread): add our pids and the capability, post the sample."""
        from symmtui.gpu.facts import capabilities_of, holders_in

        holders = holders_in(snapshot.samples).pids
        now = time.monotonic()
        if holders != self._ours_key or now - self._ours_at > OURS_REFRESH:
            # a walk of the process table: only when the GPU's process list changed, or now and then
            self._ours = frozenset(self.our_launch_pids())
            self._ours_key, self._ours_at = holders, now
        self.capability = capabilities_of(snapshot.infos).for_patch or self.capability
        self.send(GpuSample(snapshot, self._ours, self.capability))

    def our_launch_pids(self) -> Sequence[int]:
        """Pids of the launch we supervise (its whole process tree), for 'ours vs strangers'."""
        sup = self.supervisor
        if sup is None:
            return ()
        from symmtui.launch import proctree

        record = sup.current()
        if record is None:
            return ()
        procs = proctree.collect(record.pid, record.create_time, record.sid, record.pgid, record.launch_id)
        return sorted(p.pid for p in procs)

    # ---- stacks (symmtui.stacks): where every process of the server is -----------------------

    def server_procs(self) -> list[ProcInfo]:
        """The processes of the server watched: the launch's whole tree (a profile), else the followed pid's."""
        from symmtui.launch import proctree

        record = self._record or (self.supervisor.current() if self.supervisor is not None else None)
        if record is not None:
            return proctree.collect(record.pid, record.create_time, record.sid, record.pgid, record.launch_id)
        return proctree.tree(self._pid) if self._pid is not None else []

    def take_stacks(self, *, native: bool = False, auto: bool = False) -> StacksTaken:
        """Dump every process of the server now (blocking, ~1 s), save it next to the log; never raises."""
        from symmtui.stacks.report import save, take

        procs = self.server_procs()
        if not procs:
            why = ("no server process known: stacks need a launch (a profile) or --pid"
                   if self._record is None and self._pid is None else "the server's processes are gone")
            return StacksTaken(None, why, auto)
        log = Path(self.log_path) if self.log_path else None
        with self._stacks_lock:
            try:
                rep = take(procs, log=log, native=native, ruleset=self.settings.ruleset,
                           utilization=self._utilization())
            except UserError as exc:
                return StacksTaken(None, str(exc), auto)
            saved: str | None = None
            if log is not None:
                try:
                    saved = str(save(rep, log))
                except UserError as exc:
                    self.notify(str(exc), "warning")
        return StacksTaken(rep, None, auto, saved)

    def _utilization(self) -> list[int | None]:
        """Each GPU's utilization in the sampler's last round; without a sampler (the command line), one
        round of ``stall_nvml`` taken now; None where NVML could not say."""
        from symmtui.stacks.gpus import utilization_of

        snap = self.sampler.latest() if self.sampler is not None else None
        if snap is not None:
            return utilization_of(snap.samples)
        if self.stall_nvml is not None:
            return utilization_of(self.stall_nvml.sample_all())
        return []

    def request_stacks(self, *, auto: bool = False, native: bool = False) -> None:
        """Take a dump on a worker thread and post it (StacksTaken); a dump in progress is not doubled."""
        if self._stacks_lock.locked():
            return

        def work() -> None:
            self.send(self.take_stacks(native=native, auto=auto))

        threading.Thread(target=work, name="symmtui-stacks", daemon=True).start()

    def stacks_summary(self) -> list[str]:
        """The collapsed summary lines (for `wait` under its STALLED line), or the one line why not."""
        taken = self.take_stacks(auto=True)
        if taken.report is None:
            return [f"stacks: {taken.error}"]
        lines = [f"stacks: {ln}" if i == 0 else f"        {ln}" for i, ln in enumerate(taken.report.summary())]
        if taken.saved:
            lines.append(f"        (saved {taken.saved})")
        return lines

    # ---- intents (blocking: call them from a worker thread) ----------------------------------

    @property
    def can_relaunch(self) -> str | None:
        """None when (re)launching is possible, else why not (one line)."""
        if self.supervisor is None:
            return "relaunch needs a profile with server.command (symmtui --config FILE)"
        if self.supervisor.profile.argv is None:
            return self.supervisor.profile.attach_reason
        return None

    def launch(
        self,
        on_progress: Callable[[Progress], None] | None = None,
        *,
        preflight: bool = True,
        block_on_prediction: bool = False,
        capability: tuple[int, int] | None = None,
        watch_log: str | None = None,
    ) -> RelaunchResult:
        """Stop what this profile launched, check the patch, launch again; follow the new log and pid.

        ``watch_log``: follow this file instead of the launch's own log (a node whose log is elsewhere)."""
        sup = self.supervisor
        if sup is None:
            raise UserError(self.can_relaunch or "nothing to launch")
        cap = capability if capability is not None else self.capability
        if cap is None and self.nvml is not None:
            from symmtui.gpu.facts import capabilities

            cap = self.capability = capabilities(self.nvml).for_patch
        result = sup.relaunch(on_progress, preflight=preflight, capability=cap,
                              block_on_prediction=block_on_prediction)
        self._patch_note = patch_note(result.prediction, preflight_ran=preflight and cap is not None)
        self._start_watching(result.record, watch_log)
        return result

    relaunch = launch

    def launch_unchecked(self) -> LaunchRecord:
        """Launch without stopping or checking first (the demo's first launch) and follow it."""
        if self.supervisor is None:
            raise UserError(self.can_relaunch or "nothing to launch")
        record = self.supervisor.launch()
        self._patch_note = None
        self._start_watching(record)
        return record

    def _start_watching(self, record: LaunchRecord, watch_log: str | None = None) -> None:
        self._ours_key = _STALE  # new processes: walk the table at the next sample
        # a node's own log file (watch_log), else the profile's log command, else the launch's own log
        source: str | LogCommand = watch_log if watch_log is not None else self.log_command or record.log_path
        if self.engine is None:
            self.follow(source, pid=record.pid, record=record, new_only=watch_log is not None)
            return
        self.log_path = source if isinstance(source, str) else None
        with self._history_lock:
            self._record, self._record_gen = record, self.engine.generation + 1  # restart() starts that one
        self.engine.restart(log_path=source, pid=record.pid, new_only=True if watch_log is not None else None)

    def stop(self, on_progress: Callable[[Progress], None] | None = None) -> StopReport:
        """Stop what this profile launched (the whole tree), then wait for GPU memory and the port."""
        if self.supervisor is None:
            raise UserError("stop needs a profile (symmtui stop --config FILE)")
        return self.supervisor.stop(on_progress)

    def apply_patch(self, view: PatchView) -> PatchState:
        """Apply the SM120 patch the user saw; the new state (data, kept as ``patch_applied``)."""
        assert self.patcher is not None
        return self._patched(self.patcher.apply(view))

    def revert_patch(self) -> PatchState:
        """Revert the SM120 patch."""
        assert self.patcher is not None
        return self._patched(self.patcher.revert())

    def _patched(self, state: PatchState) -> PatchState:
        self.patch_applied = state.applied
        return state
