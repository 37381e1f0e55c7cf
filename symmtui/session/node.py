"""One node of a Session: its engine (log source, readiness, rank board), its supervisor, its launch's history.

The Session's own part: it builds the nodes from its spec, and nothing else reads or writes them.
Where the engine follows is kept once (``source``); the file its batches read back from is derived.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from symmtui.bringup.engine import Bringup, EngineUpdate, is_log_command
from symmtui.errors import UserError
from symmtui.judge.readiness import Snapshot, State
from symmtui.paths import state_dir
from symmtui.session.outcome import outcome_of
from symmtui.session.settings import BringupSettings
from symmtui.session.spec import NodePlan

if TYPE_CHECKING:  # a watch-only `wait` loads neither the launcher, psutil nor a log command's follower
    from symmtui.launch.history import Estimate
    from symmtui.launch.state import LaunchRecord
    from symmtui.launch.supervisor import Supervisor
    from symmtui.logs.logcmd import LogCommand
    from symmtui.proc.proctree import ProcInfo

OnUpdate = Callable[["Node", EngineUpdate], None]


def eta_of(est: Estimate | None, snap: Snapshot) -> tuple[float | None, int]:
    """Seconds left predicted from earlier successful launches, and how many there were."""
    if est is None or snap.state not in (State.STARTING, State.WAITING, State.STALLED):
        return None, 0
    in_phase = 0.0
    for span in reversed(snap.phases):
        if span.name == snap.phase and span.end is None:
            in_phase = max(0.0, snap.elapsed - span.start)
            break
    return est.remaining(snap.phase, in_phase, snap.elapsed), est.samples


class Node:
    """A node's engine and launch: ``follow``, ``watch`` a new launch, ``finish`` it in the history."""

    def __init__(self, plan: NodePlan, settings: BringupSettings, supervisor: Supervisor | None, *,
                 spool: bool, probe_timeout: float, on_update: OnUpdate,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.plan = plan
        self.clock = clock  # the Session's: the engine's timeouts, stalls and heartbeats read it
        self.name = plan.name
        self.settings = settings
        self.supervisor = supervisor
        self.engine: Bringup | None = None
        self.source: Path | LogCommand | None = plan.source
        self.spool: str | None = None
        self._spool_commands = spool
        self._probe_timeout = probe_timeout
        self._on_update = on_update
        self.pid: int | None = plan.pid
        self.generation = 0  # the engine generation posted last (a relaunch starts a new one)
        self.batch_log_path: str | None = None  # the file the generation posted last reads back from
        self.estimate: Estimate | None = None
        self.patch_note: str | None = None
        self._lock = threading.Lock()  # the launch being watched, for the history
        self._record: LaunchRecord | None = None
        # The engine generation that watches _record: a verdict of another generation (the server a
        # relaunch just stopped) is never written as this launch's outcome.
        self._record_gen = 0
        self._finished: str | None = None  # launch_id already written to the history

    @property
    def log_file(self) -> str | None:
        """The log file followed (None: a log command, or nothing)."""
        return None if self.source is None or is_log_command(self.source) else str(self.source)

    @property
    def log_path(self) -> str | None:
        """The file this node's lines can be read back from: its log file, or its log command's copy."""
        return self.log_file if self.log_file is not None else self.spool

    @property
    def source_text(self) -> str:
        """Where the log is read, in words: its file, or `its log command`."""
        return f"`{self.source.text}`" if is_log_command(self.source) else str(self.source)

    def launch_id(self, generation: int) -> str | None:
        """The launch engine ``generation`` judges (None: an attach, or the launch before a relaunch)."""
        record = self.record(generation)
        return record.launch_id if record is not None else None

    def record(self, generation: int) -> LaunchRecord | None:
        """The launch record engine ``generation`` judges (None: an attach, or the launch before a relaunch)."""
        with self._lock:
            record = self._record
            return record if record is not None and generation == self._record_gen else None

    # ---- the engine --------------------------------------------------------------------------

    def follow(self, *, pid: int | None = None, new_only: bool = False, tail_lines: int | None = None,
               record: LaunchRecord | None = None, recorded: bool = False) -> None:
        """Start judging this node's bring-up (its source, its URL, ``pid``); ``record``: the launch it is."""
        if is_log_command(self.source) and self._spool_commands:
            # subprocess, pipes: only a node read through a command
            from symmtui.logs.logcmd import spool_path

            self.spool = str(spool_path(state_dir("logcmd")))
        self.batch_log_path = self.log_path
        with self._lock:
            self._record, self._record_gen = record, 0
            if recorded and record is not None:
                self._finished = record.launch_id
        self.pid = pid
        self.engine = Bringup(
            self.source, ruleset=self.settings.ruleset, config=self.settings.readiness, url=self.plan.url, pid=pid,
            new_only=new_only, tail_lines=tail_lines, on_update=lambda up: self._on_update(self, up),
            probe_timeout=self._probe_timeout, exit_reason=self._exit_reason, log_spool=self.spool,
            clock=self.clock,
        )
        self.engine.start()  # now: its clock starts with the launch

    def watch(self, record: LaunchRecord) -> None:
        """Follow a launch just made: its own output, or this node's log from now on (it is written elsewhere)."""
        # a command replays what it printed (its filter skips that); a launch's own log is new; a node's
        # log file written elsewhere is read from now on
        elsewhere = not is_log_command(self.source) and not self.plan.follows_launch
        if not is_log_command(self.source) and self.plan.follows_launch:
            self.source = Path(record.log_path)
        if self.engine is None:
            self.follow(pid=record.pid, record=record, new_only=elsewhere)
            return
        with self._lock:
            self._record, self._record_gen = record, self.engine.generation + 1  # restart() starts that one
        self.pid = record.pid
        self.engine.restart(log_path=self.source, pid=record.pid, new_only=True if elsewhere else None)

    def _exit_reason(self, code: int | None) -> str | None:
        """The engine asks when the watched pid exits: a stop noted for this launch makes it STOPPED."""
        with self._lock:
            record = self._record
        if self.supervisor is None or record is None:
            return None
        return self.supervisor.stop_reason(record)

    def stop(self) -> None:
        if self.engine is not None:
            self.engine.stop()

    # ---- the history (one writer, whatever the front end) ------------------------------------

    def finish(self, snap: Snapshot, generation: int, named: tuple[str, ...] = ()) -> str | None:
        """Append the watched launch's outcome to the history, once per launch (``named``: the flags and
        variables its diagnosis names); a warning line when it failed."""
        sup = self.supervisor
        with self._lock:
            record = self._record
            if sup is None or record is None or generation != self._record_gen or record.launch_id == self._finished:
                return None
            self._finished = record.launch_id
        out = outcome_of(snap)
        try:
            sup.finish(record, out.verdict, cause=out.cause, phases=out.phases, patch=self.patch_note, named=named)
        except (OSError, UserError) as exc:
            return f"could not write the launch history: {exc}"
        return self.load_estimate()

    def load_estimate(self) -> str | None:
        """Read the launch history for the ETA (a file: never on a UI loop); a warning line when unreadable."""
        if self.supervisor is not None:
            try:
                self.estimate = self.supervisor.estimate()
            except UserError as exc:
                return f"launch history unreadable: {exc}"
        return None

    def eta(self, snap: Snapshot) -> tuple[float | None, int]:
        return eta_of(self.estimate, snap)

    # ---- processes ---------------------------------------------------------------------------

    def ours(self) -> LaunchRecord | None:
        """The launch this node watches, else its profile's running launch (the state file), else None."""
        with self._lock:
            record = self._record
        return record or (self.supervisor.current() if self.supervisor is not None else None)

    def launch_procs(self) -> list[ProcInfo]:
        """The processes of the launch this node's profile made (its whole tree), if one is recorded."""
        record = self.ours()
        if record is None:
            return []
        from symmtui.proc import proctree  # psutil: a session that looks at processes

        return proctree.collect(record.pid, record.create_time, record.sid, record.pgid, record.launch_id)

    def server_procs(self) -> list[ProcInfo]:
        """The server's processes: the launch's tree, else the followed pid's."""
        procs = self.launch_procs()
        if procs or self.pid is None:
            return procs
        from symmtui.proc import proctree  # psutil: only a node that looks at processes

        return proctree.tree(self.pid)

    def gone_text(self) -> str:
        """Why there is no process to dump, in one line."""
        with self._lock:
            record = self._record
        record = record or (self.supervisor.current() if self.supervisor is not None else None)
        if record is not None:
            return f"the launch of pid {record.pid} is no longer running: nothing to dump"
        if self.pid is not None:
            return f"no running process {self.pid}: give the pid of the server's main process"
        return "no server process known: stacks need a launch (a profile) or --pid"
