"""Launch, stop and relaunch one profile's server; remembers what it launched in a state file."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec.structs import replace

from symmtui.errors import UserError
from symmtui.launch import history as history_mod
from symmtui.launch import state
from symmtui.launch.facts import LaunchFacts, of_command
from symmtui.launch.profile import Profile
from symmtui.launch.report import GpuPids, OnProgress, Progress, RelaunchResult, Step, StopReport, Stranger
from symmtui.launch.state import LaunchRecord
from symmtui.launch.stopper import StopRun, stranger, wait_gone
from symmtui.launch.versions import KEEP, VersionProbe
from symmtui.proc import ports, proctree
from symmtui.proc.pidwatch import waitid_code
from symmtui.proc.proctree import ProcInfo

if TYPE_CHECKING:
    from symmtui.patch.preflight import Prediction

Cap = tuple[int, int] | int  # a compute capability: (major, minor) from symmtui.gpu.facts, or a major
REAP_DELAY = 1.0
"""Seconds our exited child stays a zombie, so other watchers can read its exit status."""


class LaunchBlocked(UserError):
    """A relaunch could not start: something still holds what the new server needs."""

    def __init__(self, message: str, report: StopReport) -> None:
        super().__init__(message, exit_code=4)
        self.report = report


class PreflightBlocked(UserError):
    """A relaunch refused because the patch check predicts a crash (only when asked to block)."""

    def __init__(self, message: str, prediction: Prediction) -> None:
        super().__init__(message, exit_code=3)
        self.prediction = prediction


class Supervisor:
    """Launches and stops the server of one profile. Thread-safe: stop() may run on a worker thread.

    ``gpu_pids`` (optional) answers which pids hold GPU memory; the CLI and dashboard pass the
    NVML one. ``grace`` overrides the profile's SIGTERM grace period.
    """

    def __init__(
        self,
        profile: Profile,
        *,
        gpu_pids: GpuPids | None = None,
        grace: float | None = None,
        gpu_timeout: float = 60.0,
        port_timeout: float = 30.0,
        kill_timeout: float = 10.0,
        poll: float = 0.05,
    ) -> None:
        history_mod.History().check()  # a FIFO there would hold the verdict: refused before any front end starts
        self.profile = profile
        self.gpu_pids = gpu_pids
        self.grace = profile.grace if grace is None else grace
        self.gpu_timeout = gpu_timeout
        self.port_timeout = port_timeout
        self.kill_timeout = kill_timeout
        self.poll = poll
        self._lock = threading.RLock()
        self._depth = 0
        self._lockfd: int | None = None
        self._popen_id: str | None = None
        self._last: LaunchRecord | None = None
        self.notes: tuple[str, ...] = ()
        """Warnings of the last launch() that did not stop it (e.g. latest.log could not be updated)."""
        self._exit: dict[str, int] = {}
        self._exit_cond = threading.Condition()

        self.versions = VersionProbe()
        """Reads each launch's versions in the background; the history keeps them (set ``versions.nvml``
        for the driver's)."""
        self._facts: dict[str, LaunchFacts] = {}  # launch_id -> what it was started with (the last KEEP)

    # ---- state -------------------------------------------------------------------------------

    def current(self) -> LaunchRecord | None:
        """The launch recorded for this profile (by this or an earlier symmtui), or None."""
        return state.load(self.profile.key)

    def is_alive(self, record: LaunchRecord | None = None) -> bool:
        """True while the launch's leader, or any process of it, is still running."""
        rec = record if record is not None else self.current()
        if rec is None:
            return False
        if proctree.is_same(rec.pid, rec.create_time):
            return True
        return bool(proctree.collect(rec.pid, rec.create_time, rec.sid, rec.pgid, rec.launch_id))

    def stop_reason(self, record: LaunchRecord) -> str | None:
        """Why ``record`` ended, when it was stopped on purpose (a symmtui stop noted it); None otherwise."""
        req = state.stop_requested(record.profile_key, record.launch_id)
        if req is None:
            return None
        who = "this symmtui" if req.by_pid == os.getpid() else f"symmtui stop (pid {req.by_pid})"
        return f"stopped by {who}"

    def launched_here(self, record: LaunchRecord) -> bool:
        """True if this Supervisor object started ``record`` (so it holds the exit status)."""
        return self._popen_id == record.launch_id

    def returncode(self, record: LaunchRecord | None = None) -> int | None:
        """Exit status of a leader this Supervisor launched (negative: killed by that signal).

        Defaults to the last launch of this Supervisor; None while running or if not ours.
        """
        rec = record if record is not None else (self._last or self.current())
        if rec is None:
            return None
        with self._exit_cond:
            return self._exit.get(rec.launch_id)

    def wait_exit(self, timeout: float | None = None, record: LaunchRecord | None = None) -> int | None:
        """Block until a leader this Supervisor launched has exited; its status, or None on timeout."""
        rec = record if record is not None else (self._last or self.current())
        if rec is None:
            return None
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._exit_cond:
            while rec.launch_id not in self._exit:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._exit_cond.wait(left)
            return self._exit[rec.launch_id]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One launch/stop at a time per profile, across threads and symmtui processes (flock)."""
        with self._lock:
            if self._depth == 0:
                path = state.launch_dir() / f"{self.profile.key}.lock"
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError as exc:
                    os.close(fd)
                    raise UserError(
                        "another symmtui is launching or stopping this profile right now; wait for it",
                        exit_code=4,
                    ) from exc
                self._lockfd = fd
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._lockfd is not None:
                    os.close(self._lockfd)
                    self._lockfd = None

    # ---- launch ------------------------------------------------------------------------------

    def launch(self) -> LaunchRecord:
        """Start the profile's command in a new session, output to a new log file; record it.

        Refuses (UserError) when the profile is attach only, the program does not exist, the
        working directory or log directory is unusable, or this profile's last launch still runs.
        Nothing is left half-written: on failure no state is recorded and latest.log is untouched.
        """
        p = self.profile
        if p.argv is None:
            raise UserError(f"cannot launch: {p.attach_reason}")
        with self._locked():
            prev = self.current()
            if prev is not None:
                left = proctree.collect(prev.pid, prev.create_time, prev.sid, prev.pgid, prev.launch_id)
                if left:
                    pids = ", ".join(str(p.pid) for p in left[:8]) + (" ..." if len(left) > 8 else "")
                    raise UserError(
                        f"the server launched earlier is still running (pid {pids}); "
                        "stop it first (symmtui stop) or relaunch",
                        exit_code=4,
                    )
            argv, cwd, env = self.check()
            state.clear_stop_request(p.key)  # a stop noted for an earlier launch says nothing of this one
            launch_id = uuid.uuid4().hex
            env[proctree.MARKER_ENV] = launch_id
            log_path, log_fd = self._open_log()
            started_at = time.time()
            try:
                try:
                    proc = subprocess.Popen(
                        argv,
                        cwd=cwd,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=log_fd,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                        close_fds=True,
                        shell=False,
                    )
                except OSError as exc:
                    _unlink_quietly(log_path)
                    raise UserError(
                        f"cannot start {argv[0]!r}: {exc.strerror or exc}; check server.command in {p.path}"
                    ) from exc
            finally:
                os.close(log_fd)
            record = self._record(proc, launch_id, argv, log_path, cwd, started_at)
            self._facts[launch_id] = of_command(argv, env, cwd)  # a few stats: the model folder's files
            while len(self._facts) > KEEP:
                self._facts.pop(next(iter(self._facts)))
            try:
                state.save(record)
            except UserError:
                self._kill_new(proc)
                _unlink_quietly(log_path)
                raise
            self._watch(proc, launch_id)
            self._last = record
            self.versions.start(launch_id, p, alive=lambda: self.is_alive(record))
            self.notes = self._point_latest(log_path)
            return record

    def check(self) -> tuple[list[str], str, dict[str, str]]:
        """Check that launch() can start the command (program, cwd, log dir) without starting it.

        Returns (argv with the program resolved, cwd, environment); raises UserError otherwise.
        relaunch() calls this before stopping the running server, so a typo does not cost it.
        """
        p = self.profile
        if p.argv is None:
            raise UserError(f"cannot launch: {p.attach_reason}")
        history_mod.History().check()  # made a FIFO since the start: refused before anything is stopped or started
        argv = list(p.argv)
        cwd = self._check_cwd()
        env = dict(os.environ)
        env.update(p.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        if not p.shell:
            argv[0] = self._resolve_program(argv[0], cwd, env)
        self._check_log_dir()
        return argv, cwd, env

    def _check_log_dir(self) -> None:
        log_dir = self.profile.log_dir
        assert log_dir is not None
        hint = f"fix server.log_dir in {self.profile.path}"
        probe = log_dir
        while not probe.exists() and not probe.is_symlink() and probe.parent != probe:
            probe = probe.parent
        if not probe.is_dir():
            if probe == log_dir:
                raise UserError(f"log directory {log_dir} is not a directory; {hint}")
            raise UserError(f"log directory {log_dir} cannot be created (a file is in the way); {hint}")
        if not os.access(probe, os.W_OK | os.X_OK):
            raise UserError(f"log directory {log_dir} is not writable ({probe}); {hint}")
        latest = log_dir / "latest.log"
        if latest.exists() and not latest.is_symlink():
            raise UserError(f"{latest} is not symmtui's link (a file or directory is there); move it away")

    def _check_cwd(self) -> str:
        cwd = self.profile.cwd
        if cwd is None:
            return os.getcwd()
        if not cwd.is_dir():
            raise UserError(f"server.cwd {cwd} is not a directory; fix it in {self.profile.path}")
        return str(cwd)

    def _resolve_program(self, prog: str, cwd: str, env: dict[str, str]) -> str:
        where = self.profile.path
        if "/" in prog:
            full = Path(prog) if os.path.isabs(prog) else Path(cwd) / prog
            if not full.exists():
                raise UserError(f"server.command: program {prog!r} does not exist; fix server.command in {where}")
            if full.is_dir() or not os.access(full, os.X_OK):
                raise UserError(f"server.command: {prog!r} is not an executable file; fix server.command in {where}")
            return prog
        found = shutil.which(prog, path=env.get("PATH", os.defpath))
        if found is None:
            raise UserError(
                f"server.command: program {prog!r} not found on PATH; install it or give its full path in {where}"
            )
        return found

    def _open_log(self) -> tuple[Path, int]:
        log_dir = self.profile.log_dir
        assert log_dir is not None
        hint = f"fix server.log_dir in {self.profile.path}"
        try:
            log_dir.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:
            raise UserError(f"log directory {log_dir} cannot be created (a file is in the way); {hint}") from exc
        except OSError as exc:
            raise UserError(f"log directory {log_dir} cannot be created: {exc.strerror or exc}; {hint}") from exc
        if not log_dir.is_dir():
            raise UserError(f"log directory {log_dir} is not a directory; {hint}")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for n in range(1000):
            path = log_dir / (f"{stamp}.log" if n == 0 else f"{stamp}-{n}.log")
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o644)
            except FileExistsError:
                continue
            except OSError as exc:
                raise UserError(f"log directory {log_dir} is not writable: {exc.strerror or exc}; {hint}") from exc
            return path, fd
        raise UserError(f"log directory {log_dir}: too many logs named {stamp}*.log")

    def _point_latest(self, log_path: Path) -> tuple[str, ...]:
        """Point latest.log at the new log (atomic rename of a fresh symlink).

        The server already runs and is recorded by then, so a filesystem without symlinks costs only
        the link: returned as a note instead of failing the launch.
        """
        latest = log_path.parent / "latest.log"
        tmp = log_path.parent / f".latest.log.{os.getpid()}.{threading.get_ident()}"
        try:
            _unlink_quietly(tmp)
            os.symlink(log_path.name, tmp)
            os.replace(tmp, latest)
        except OSError as exc:
            _unlink_quietly(tmp)
            return (f"could not point {latest} at {log_path.name} ({exc.strerror or exc}); follow {log_path}",)
        return ()

    def _record(
        self, proc: subprocess.Popen[bytes], launch_id: str, argv: list[str], log_path: Path, cwd: str, started: float
    ) -> LaunchRecord:
        ct = proctree.create_time(proc.pid)
        if ct is None:
            # It already exited (and may be a zombie): its start time is still our best identity.
            ct = started
        try:
            pgid = os.getpgid(proc.pid)
            sid = os.getsid(proc.pid)
        except ProcessLookupError:
            pgid = sid = proc.pid
        return LaunchRecord(
            launch_id=launch_id,
            profile_key=self.profile.key,
            profile_path=str(self.profile.path or ""),
            pid=proc.pid,
            pgid=pgid,
            sid=sid,
            create_time=ct,
            started_at=started,
            argv=tuple(argv),
            command_hash=self.profile.command_hash,
            log_path=str(log_path),
            cwd=cwd,
            url=self.profile.url,
        )

    def _kill_new(self, proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def _watch(self, proc: subprocess.Popen[bytes], launch_id: str) -> None:
        """Keep our child's exit status and reap it (no zombie left).

        The status is read with WNOWAIT first and the zombie reaped ``REAP_DELAY`` later, so that
        another watcher of the pid (the readiness engine's pidfd watch) can read the status too.
        """

        def reap() -> None:
            rc: int | None
            try:
                info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
                rc = None if info is None else waitid_code(info)
            except ChildProcessError:
                rc = None
            if rc is not None:
                with self._exit_cond:
                    self._exit[launch_id] = rc
                    self._exit_cond.notify_all()
                time.sleep(REAP_DELAY)
            final = proc.wait()
            if rc is None:
                with self._exit_cond:
                    self._exit[launch_id] = final
                    self._exit_cond.notify_all()

        self._popen_id = launch_id
        threading.Thread(target=reap, name=f"symmtui-reap-{proc.pid}", daemon=True).start()

    # ---- stop --------------------------------------------------------------------------------

    def stop(self, on_progress: OnProgress | None = None, *, grace: float | None = None) -> StopReport:
        """Stop everything this profile launched; wait for GPU memory and the port; report strangers.

        Blocking (seconds to ``grace`` + timeouts): call it from a worker thread in a UI.
        ``on_progress`` receives :class:`Progress` values on the calling thread.
        """
        with self._locked():
            return StopRun(self, on_progress, self.grace if grace is None else grace).run()

    def strangers(self, ours: set[int] | None = None) -> list[Stranger]:
        """Processes not of this launch that hold the profile's port or GPU memory now."""
        ours = ours or set()
        out: dict[int | None, Stranger] = {}
        hp = ports.url_port(self.profile.url)
        if hp is not None:
            for pid in ports.listeners(hp[1]):
                if pid is not None and pid in ours:
                    continue
                out[pid] = stranger(pid, f"port {hp[1]}", out.get(pid))
        gpu = self._gpu_holders()
        for pid in sorted(gpu or ()):
            if pid in ours:
                continue
            out[pid] = stranger(pid, "GPU memory", out.get(pid))
        return list(out.values())

    def _gpu_holders(self) -> set[int] | None:
        if self.gpu_pids is None:
            return None
        return self.gpu_pids()

    def kill_stranger(self, pid: int, confirmed_pid: int, *, grace: float | None = None) -> bool:
        """Signal a stranger that holds our port or GPU memory, only with the user's confirmation of that pid.

        SIGTERM, then SIGKILL after ``grace``. Refuses (UserError) unless ``confirmed_pid == pid``,
        and unless ``pid`` holds the port or GPU memory right now. Returns True once it is gone.
        """
        if confirmed_pid != pid:
            raise UserError(f"pid {pid} was not confirmed (confirmation named {confirmed_pid}); nothing signalled")
        if pid in proctree.protected_pids():
            raise UserError(f"pid {pid} is symmtui itself or its parent; refusing to signal it")
        rec = self.current()
        ours: set[int] = set()
        if rec is not None:
            ours = {p.pid for p in proctree.collect(rec.pid, rec.create_time, rec.sid, rec.pgid, rec.launch_id)}
        if not any(s.pid == pid for s in self.strangers(ours)):
            raise UserError(
                f"pid {pid} does not hold this profile's port or GPU memory; symmtui only signals such processes"
            )
        ct = proctree.create_time(pid)
        if ct is None:
            return True
        target = ProcInfo(pid, ct, proctree.cmdline(pid), "stranger")
        if not proctree.send(target, signal.SIGTERM):
            return not proctree.alive([target])
        wait = self.grace if grace is None else grace
        if wait_gone([target], wait, self.poll):
            return True
        proctree.send(target, signal.SIGKILL)
        return wait_gone([target], self.kill_timeout, self.poll)

    # ---- relaunch ----------------------------------------------------------------------------

    def preflight(self, capability: Cap | None) -> tuple[Prediction | None, str | None]:
        """Ask the patch check whether this command will crash (KeyError: 12): (prediction, note).

        The patch package is imported only here; if it is missing or cannot decide, the launch
        goes ahead with a note (a preflight never blocks on a guess).
        """
        if self.profile.argv is None:
            return None, None
        if capability is None:
            return None, "preflight skipped: GPU compute capability unknown (no NVML)"
        try:
            # guarded: a patch package that cannot load notes the preflight as skipped
            from symmtui.patch import preflight as check
        except ImportError as exc:
            return None, f"preflight skipped: patch check unavailable ({exc})"
        env = dict(os.environ)
        env.update(self.profile.env)  # the profile's PATH / PYTHONPATH decide which install runs
        try:
            return check(list(self.profile.argv), capability, env=env, cwd=self.profile.cwd), None
        except UserError as exc:
            return None, f"preflight skipped: {exc}"

    def relaunch(
        self,
        on_progress: OnProgress | None = None,
        *,
        preflight: bool = True,
        capability: Cap | None = None,
        block_on_prediction: bool = False,
        grace: float | None = None,
    ) -> RelaunchResult:
        """preflight (warns; blocks only if asked) + stop() + launch(). The caller restarts readiness.

        The command and the preflight are checked before anything is stopped: a typo in the profile
        or a refused preflight does not cost the running server.
        """
        if self.profile.argv is None:
            raise UserError(f"relaunch unavailable: {self.profile.attach_reason}")
        emit = on_progress or (lambda _p: None)
        t0 = time.monotonic()
        with self._locked():
            self.check()
            warnings: list[str] = []
            prediction: Prediction | None = None
            if preflight:
                emit(Progress(Step.PREFLIGHT, "checking the SM120 patch state", elapsed=time.monotonic() - t0))
                prediction, note = self.preflight(capability)
                if note:
                    warnings.append(note)
                if prediction is not None:
                    said = prediction_text(prediction)
                    warnings.append(f"preflight: {said}")
                    emit(Progress(Step.PREFLIGHT, f"warning: {said}", elapsed=time.monotonic() - t0))
                    if block_on_prediction:
                        raise PreflightBlocked(f"not launching: {said}", prediction)
                else:  # replaces the "checking" line: say what the check found
                    emit(Progress(Step.PREFLIGHT, note or "no KeyError crash predicted for this launch",
                                  elapsed=time.monotonic() - t0))
            report = self.stop(on_progress, grace=grace)
            if report.survivors:
                raise LaunchBlocked(
                    "not launching: "
                    + ", ".join(f"pid {p.pid}" for p in report.survivors)
                    + " survived SIGKILL (uninterruptible); check the GPU driver",
                    report,
                )
            if report.port_free is False:
                holders = [s for s in report.strangers if any("port" in h for h in s.holds)]
                who = "; ".join(s.describe() for s in holders) or "unknown holder"
                pids = [s.pid for s in holders if s.pid is not None]
                hint = f"; to end it: symmtui stop --kill-pid {pids[0]}" if pids else ""
                raise LaunchBlocked(f"not launching: the port is still held ({who}){hint}", report)
            if report.gpu_free is False:
                warnings.append("GPU memory of the previous server was not released in time")
            record = self.launch()
            warnings.extend(self.notes)
            emit(
                Progress(
                    Step.LAUNCH,
                    f"launched pid {record.pid}; log {record.log_path}",
                    remaining=(record.pid,),
                    elapsed=time.monotonic() - t0,
                )
            )
            return RelaunchResult(stop=report, record=record, prediction=prediction, warnings=tuple(warnings))

    # ---- history -----------------------------------------------------------------------------

    def facts(self, record: LaunchRecord) -> LaunchFacts:
        """What ``record`` was started with: as this Supervisor launched it, else read from the record and
        the profile's environment now (a launch another symmtui made); the GPUs once the probe read them."""
        found = self._facts.get(record.launch_id)
        if found is None:
            env = dict(os.environ)
            env.update(self.profile.env)
            found = of_command(record.argv, env, record.cwd)
        gpus = self.versions.gpus(record.launch_id)
        return replace(found, gpus=gpus) if gpus else found

    def entry(
        self,
        record: LaunchRecord,
        verdict: str,
        *,
        cause: str | None = None,
        phases: dict[str, float] | None = None,
        patch: str | None = None,
        end: float | None = None,
        named: tuple[str, ...] = (),
    ) -> history_mod.HistoryEntry:
        """The history entry of ``record`` as it stands (what :meth:`finish` writes)."""
        return history_mod.HistoryEntry(
            launch_id=record.launch_id,
            command_hash=record.command_hash,
            start=record.started_at,
            end=time.time() if end is None else end,
            verdict=verdict,
            cause=cause,
            phases=dict(phases or {}),
            patch=patch,
            profile_key=record.profile_key,
            log_path=record.log_path,
            versions=self.versions.get(record.launch_id),  # symmtui's at least; the rest once read
            facts=self.facts(record),
            named=named,
        )

    def finish(
        self,
        record: LaunchRecord,
        verdict: str,
        *,
        cause: str | None = None,
        phases: dict[str, float] | None = None,
        patch: str | None = None,
        end: float | None = None,
        named: tuple[str, ...] = (),
        history: history_mod.History | None = None,
    ) -> history_mod.HistoryEntry:
        """Append the launch's outcome to the history, once per launch (a second call returns the first entry)."""
        entry = self.entry(record, verdict, cause=cause, phases=phases, patch=patch, end=end, named=named)
        return (history or history_mod.History()).append_once(entry)

    def estimate(self) -> history_mod.Estimate | None:
        """ETA of this profile's command from earlier successful launches (None: no history)."""
        return history_mod.History().estimate(self.profile.command_hash)


def prediction_text(prediction: Prediction) -> str:
    """One line from a patch Prediction: its message, and its fix when it has one."""
    return f"{prediction.message} ({prediction.fix})" if prediction.fix else prediction.message


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
