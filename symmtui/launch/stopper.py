"""Stopping one launch: the whole tree known before the first signal, escalation, GPU memory and port."""

from __future__ import annotations

import math
import os
import signal
import time
from typing import Protocol

from symmtui.launch import history as history_mod
from symmtui.launch import state
from symmtui.launch.profile import Profile
from symmtui.launch.report import GpuPids, OnProgress, Progress, Step, StopReport, Stranger
from symmtui.launch.state import LaunchRecord
from symmtui.proc import ports, proctree
from symmtui.proc.proctree import ProcInfo


class StopTarget(Protocol):
    """What a stop needs from the Supervisor that runs it (named here, so this module does not import it)."""

    profile: Profile
    gpu_pids: GpuPids | None
    gpu_timeout: float
    port_timeout: float
    kill_timeout: float
    poll: float

    def current(self) -> LaunchRecord | None: ...

    def strangers(self, ours: set[int] | None = None) -> list[Stranger]: ...

    def launched_here(self, record: LaunchRecord) -> bool: ...

    def wait_exit(self, timeout: float | None = None, record: LaunchRecord | None = None) -> int | None: ...

    def returncode(self, record: LaunchRecord | None = None) -> int | None: ...

    def finish(
        self, record: LaunchRecord, verdict: str, *, cause: str | None = None,
        history: history_mod.History | None = None,
    ) -> history_mod.HistoryEntry: ...


class StopRun:
    """One run of Supervisor.stop(): find, signal, escalate, wait for GPU memory and the port, report."""

    def __init__(self, sup: StopTarget, on_progress: OnProgress | None, grace: float) -> None:
        self.sup = sup
        self.emit = on_progress or (lambda _p: None)
        self.grace = grace
        self.t0 = time.monotonic()
        self.notes: list[str] = []

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def progress(
        self, step: Step, message: str, remaining: tuple[int, ...] = (), time_left: float | None = None,
        strangers: tuple[Stranger, ...] = (),
    ) -> None:
        self.emit(Progress(step, message, remaining, self.elapsed(), time_left, strangers))

    def _collect(self, rec: LaunchRecord, known: list[ProcInfo]) -> list[ProcInfo]:
        return proctree.collect(rec.pid, rec.create_time, rec.sid, rec.pgid, rec.launch_id, known)

    def run(self) -> StopReport:
        sup = self.sup
        rec = sup.current()
        history_mod.History().check()  # refused before the first signal, not after the stop
        found: list[ProcInfo] = []
        killed: list[int] = []
        survivors: list[ProcInfo] = []
        self.progress(Step.SCAN, "finding the processes this profile launched")
        if rec is not None:
            found = self._collect(rec, [])
            self.progress(
                Step.SCAN,
                f"found {len(found)} process(es) of the launch of pid {rec.pid}" if found
                else f"nothing of the launch of pid {rec.pid} is running",
                tuple(p.pid for p in found),
            )
            if found:
                self._announce(rec)
                survivors, killed = self._signal(rec, found)
                # A process forked during the grace period is ours too: one more pass.
                extra = [p for p in self._collect(rec, found) if p.pid not in {f.pid for f in found}]
                if extra:
                    found.extend(extra)
                    more_survivors, more_killed = self._signal(rec, extra, grace=min(self.grace, 1.0))
                    survivors += more_survivors
                    killed += more_killed
            self._reap_own(rec)
        else:
            self.progress(Step.SCAN, "nothing launched by symmtui for this profile")
        ours = {p.pid for p in found}
        gpu_free = self._wait_gpu(ours)
        self.progress(Step.GPU, {True: "GPU memory released", False: "GPU memory NOT released in time",
                                 None: "GPU memory not checked (no NVML)"}[gpu_free])
        port_free = self._wait_port(ours)
        hp = ports.url_port(sup.profile.url)
        self.progress(Step.PORT, "no URL in the profile: port not checked" if hp is None
                      else f"port {hp[1]} is free" if port_free else f"port {hp[1]} is still held")
        strangers = tuple(sup.strangers(ours))
        if rec is not None and not survivors:
            state.clear(rec.profile_key, rec.launch_id)
            self._history(rec)
        report = StopReport(
            record=rec,
            found=tuple(found),
            terminated=tuple(p.pid for p in found if p.pid not in killed and p not in survivors),
            killed=tuple(killed),
            survivors=tuple(survivors),
            gpu_free=gpu_free,
            port_free=port_free,
            strangers=strangers,
            elapsed=self.elapsed(),
            notes=tuple(self.notes),
        )
        self.progress(Step.DONE, report.summary(), strangers=strangers)
        return report

    def _signal(
        self, rec: LaunchRecord, procs: list[ProcInfo], grace: float | None = None
    ) -> tuple[list[ProcInfo], list[int]]:
        grace = self.grace if grace is None else grace
        proctree.signal_group(rec.pgid, procs, signal.SIGTERM)
        for p in procs:
            proctree.send(p, signal.SIGTERM)
        deadline = time.monotonic() + grace
        left = proctree.alive(procs)
        last_msg = ""
        while left and time.monotonic() < deadline:
            msg = f"SIGTERM sent to {len(procs)} process(es); {len(left)} still running"
            tl = max(0.0, deadline - time.monotonic())
            if msg != last_msg or int(tl) != int(tl + self.sup.poll):
                self.progress(Step.TERM, f"{msg}; SIGKILL in {math.ceil(tl)} s", tuple(p.pid for p in left), tl)
                last_msg = msg
            time.sleep(self.sup.poll)
            left = proctree.alive(left)
        if not left:
            self.progress(Step.TERM, f"all {len(procs)} process(es) exited after SIGTERM")
            return [], []
        killed = [p.pid for p in left]
        self.progress(Step.KILL, f"SIGKILL to {len(left)} process(es) that ignored SIGTERM", tuple(killed))
        proctree.signal_group(rec.pgid, left, signal.SIGKILL)
        for p in left:
            proctree.send(p, signal.SIGKILL)
        if wait_gone(left, self.sup.kill_timeout, self.sup.poll):
            return [], killed
        survivors = proctree.alive(left)
        self.notes.append(
            "still alive after SIGKILL (probably stuck in the kernel/driver): "
            + ", ".join(f"pid {p.pid}" for p in survivors)
        )
        return survivors, killed

    def _announce(self, rec: LaunchRecord) -> None:
        """Before the first signal: note that this launch is stopped on purpose, so that whoever
        watches it (a `symmtui launch` waiting on it) ends as STOPPED, not CRASHED."""
        try:
            state.request_stop(rec, os.getpid(), time.time())
        except OSError as exc:
            self.notes.append(f"could not note the stop for the launch's watcher ({exc.strerror or exc})")

    def _reap_own(self, rec: LaunchRecord) -> None:
        if self.sup.launched_here(rec):
            self.sup.wait_exit(timeout=self.sup.kill_timeout, record=rec)

    def _wait_gpu(self, ours: set[int]) -> bool | None:
        sup = self.sup
        if sup.gpu_pids is None:
            return None
        holders = sup.gpu_pids()
        if holders is None:
            self.notes.append("GPU memory not checked: NVML unavailable")
            return None
        deadline = time.monotonic() + sup.gpu_timeout
        while True:
            held = holders & ours
            if not held:
                return True
            tl = deadline - time.monotonic()
            if tl <= 0:
                return False
            self.progress(
                Step.GPU,
                f"waiting for GPU memory of {len(held)} process(es) to be released; giving up in {math.ceil(tl)} s",
                tuple(sorted(held)),
                tl,
            )
            time.sleep(max(sup.poll, 0.1))
            next_holders = sup.gpu_pids()
            if next_holders is None:
                self.notes.append("GPU memory not checked to the end: NVML stopped answering")
                return None
            holders = next_holders

    def _wait_port(self, ours: set[int]) -> bool | None:
        sup = self.sup
        hp = ports.url_port(sup.profile.url)
        if hp is None:
            return None
        host, port = hp
        deadline = time.monotonic() + sup.port_timeout
        while not ports.is_free(host, port):
            holders = ports.listeners(port)
            visible = [p for p in holders if p is not None]
            strangers = [p for p in visible if p not in ours and proctree.create_time(p) is not None]
            if strangers and len(strangers) == len(holders):
                return False  # held by someone else: it will not go away by waiting
            tl = deadline - time.monotonic()
            if tl <= 0:
                return False
            self.progress(Step.PORT, f"waiting for port {port} to be free; giving up in {math.ceil(tl)} s", time_left=tl)
            time.sleep(max(sup.poll, 0.1))
        return True

    def _history(self, rec: LaunchRecord) -> None:
        hist = history_mod.History()
        if hist.has(rec.launch_id):
            return
        rc = self.sup.returncode(rec)
        cause = "stopped by symmtui before an outcome was recorded"
        if rc is not None:
            cause += f" (exit status {rc})"
        self.sup.finish(rec, "stopped", cause=cause, history=hist)


def stranger(pid: int | None, what: str, prev: Stranger | None) -> Stranger:
    if prev is not None:
        return Stranger(prev.pid, prev.create_time, prev.cmdline, (*prev.holds, what))
    if pid is None:
        return Stranger(None, None, "", (what,))
    return Stranger(pid, proctree.create_time(pid), proctree.cmdline(pid), (what,))


def wait_gone(procs: list[ProcInfo], timeout: float, poll: float) -> bool:
    deadline = time.monotonic() + timeout
    left = proctree.alive(procs)
    while left and time.monotonic() < deadline:
        time.sleep(poll)
        left = proctree.alive(left)
    return not left
