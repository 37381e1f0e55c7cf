"""A log read from a command's output (`docker logs -f`, `ssh host tail -F`, `kubectl logs -f`): restarted with backoff."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import shlex
import shutil
import signal
import subprocess
import threading
import time
import uuid
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from msgspec import Struct

from symmtui.errors import UserError
from symmtui.logs.decode import DEFAULT_MAX_LINE_BYTES, LogLine
from symmtui.logs.follow import BATCH_BYTES, READ_BYTES, FileNotice, LineSplitter, LogItem, Numbering
from symmtui.proc import identity

__all__ = [
    "Backoff",
    "CommandFollower",
    "LogCommand",
    "LogCommandError",
    "ReplayFilter",
    "spool_path",
]

# READ_BYTES (one os.read of the pipe at most) and BATCH_BYTES (one batch handed to ``on_batch``) are
# the file follower's: a command's output comes in the same bounded pieces as a file's.
PIPE_BYTES = 1 << 20
"""The pipe's buffer is raised to this (F_SETPIPE_SZ; Linux's default unprivileged maximum)."""
STOP_GRACE = 1.0
"""After SIGTERM to the command's process group, wait this long before SIGKILL."""
MARKER_ENV = "SYMMTUI_LOGCMD_ID"
"""Set in the log command's environment; its descendants inherit it, even after setsid and reparenting."""
SHOWN_CHARS = 160
"""Characters of the command's last line quoted in an "exited" notice."""
SPOOL_PREFIX = "logcmd-"


class LogCommandError(UserError):
    """A log command that cannot be used (empty, bad quoting, program not found or not executable)."""


class LogCommand(Struct, frozen=True):
    """A command whose stdout and stderr are the server's log.

    ``argv`` is exactly what is executed (no shell unless ``shell``: then it is ``/bin/sh -c text``);
    ``text`` is how the user wrote it (shown in notices).
    """

    argv: tuple[str, ...]
    text: str
    shell: bool = False

    @classmethod
    def parse(cls, text: str, *, shell: bool = False) -> LogCommand:
        """A command-line string: split like a shell would (shlex, no shell runs), or run by /bin/sh
        when ``shell``. Bad quoting or an empty command is a LogCommandError."""
        if not text.strip():
            raise LogCommandError("the log command is empty; give one, e.g. --log-cmd 'docker logs -f sglang'")
        if "\0" in text:
            raise LogCommandError("the log command holds a NUL byte")
        if shell:
            return cls(("/bin/sh", "-c", text), text, True)
        try:
            argv = shlex.split(text)
        except ValueError as exc:
            raise LogCommandError(f"cannot split the log command {text!r} into arguments ({exc}); "
                                  "check the quoting") from None
        if not argv:
            raise LogCommandError("the log command is empty; give one, e.g. --log-cmd 'docker logs -f sglang'")
        return cls(tuple(argv), text, False)

    @classmethod
    def from_argv(cls, argv: Sequence[str]) -> LogCommand:
        """An argv list (a profile's ``log_cmd = [...]``): executed as it is."""
        if not argv or not argv[0].strip():
            raise LogCommandError("the log command is empty (its first item names the program)")
        return cls(tuple(argv), shlex.join(argv), False)

    @property
    def program(self) -> str:
        return self.argv[0]

    def check(self) -> None:
        """Raise LogCommandError when the program cannot be started (not found, not executable)."""
        problem = self.start_problem()
        if problem is not None:
            raise LogCommandError(problem)

    def start_problem(self) -> str | None:
        """Why the program cannot be started, in one line; None when it can (as far as we can tell)."""
        prog = self.program
        if "/" in prog:
            if not os.path.exists(prog):
                return f"log command `{self.text}`: {prog} does not exist; check the path"
            if os.path.isdir(prog) or not os.access(prog, os.X_OK):
                return f"log command `{self.text}`: {prog} is not an executable file; check the path (chmod +x)"
            return None
        if shutil.which(prog) is None:
            return (f"log command `{self.text}`: {prog!r} not found on PATH; install it or give its full path")
        return None


class Backoff(Struct, frozen=True):
    """When to restart a command that exited: ``first`` seconds, doubling up to ``cap``; a run that
    lasted ``reset_after`` seconds or more starts the doubling over."""

    first: float = 0.5
    cap: float = 10.0
    reset_after: float = 10.0

    def delay(self, previous: float | None, ran_for: float) -> float:
        """The wait before the next start, given the last wait (None: none yet) and how long the run lasted."""
        if previous is None or ran_for >= self.reset_after:
            return self.first
        return min(self.cap, previous * 2)


class ReplayFilter:
    """Skips the lines a restarted command prints again: `docker logs -f` replays the whole log,
    `tail -F` its last 10 lines, `kubectl logs -f` the container's log.

    It remembers a hash of each line delivered (the last ``keep``). After a restart, if the first line
    of the new run (arriving within ``window`` seconds of the start) was delivered before, the run is
    taken for a replay: its lines are skipped while they repeat what came after that earlier line,
    in order; the first line that differs, or that comes after the end of what was remembered, is
    delivered, and everything after it. A first line never seen before means no replay.
    """

    MAX_CANDIDATES = 64

    def __init__(self, keep: int = 1_000_000, window: float = 5.0) -> None:
        self.keep = keep
        self.window = window
        self._hist: array[int] = array("q")
        self._matching = False
        self._cands: list[int] | None = None  # positions in _hist expected next; None: first line not seen yet
        self._started_at = 0.0
        self.skipped = 0
        """Lines skipped since the last ``restart``."""

    def restart(self, now: float) -> None:
        """A new run of the command starts now."""
        self._matching = bool(self._hist)
        self._cands = None
        self._started_at = now
        self.skipped = 0

    @property
    def matching(self) -> bool:
        """Still deciding whether the lines of this run repeat earlier ones."""
        return self._matching

    def filter(self, items: list[LogItem], now: float) -> list[LogItem]:
        """The items to deliver (the same list when nothing is skipped); remembers the delivered lines."""
        if self._matching:
            items = self._skip(items, now)
        hist = self._hist
        hist.extend(hash(it.text) for it in items if type(it) is LogLine and not it.progress)
        if len(hist) > 2 * self.keep:
            del hist[: len(hist) - self.keep]
        return items

    def _skip(self, items: list[LogItem], now: float) -> list[LogItem]:
        hist = self._hist
        for i, it in enumerate(items):
            if type(it) is not LogLine:
                continue  # notices pass through
            if it.progress:
                continue  # an unfinished line: judged when it is finished
            h = hash(it.text)
            if self._cands is None:
                if now - self._started_at > self.window:
                    self._matching = False
                else:
                    self._cands = self._find(h)
                    self._matching = bool(self._cands)
            else:
                nxt = [p for p in self._cands if p < len(hist) and hist[p] == h]
                self._matching = bool(nxt)
                self._cands = nxt
            if not self._matching:
                kept: list[LogItem] = [x for x in items[:i] if type(x) is not LogLine]
                kept.extend(items[i:])
                return kept
            self.skipped += 1
            cands = self._cands = [p + 1 for p in self._cands or ()]
            if any(p >= len(hist) for p in cands):  # caught up with what was remembered
                self._matching = False
                kept = [x for x in items[: i + 1] if type(x) is not LogLine]
                kept.extend(items[i + 1 :])
                return kept
        return [x for x in items if type(x) is not LogLine]

    def _find(self, h: int) -> list[int]:
        """Positions after each earlier line whose hash is ``h`` (earliest and latest ones kept)."""
        hist = self._hist
        raw = hist.tobytes()
        needle = array("q", [h]).tobytes()
        found: list[int] = []
        pos = raw.find(needle)
        while pos >= 0:
            if pos % 8 == 0:
                found.append(pos // 8)
            pos = raw.find(needle, pos + 1)
        half = self.MAX_CANDIDATES // 2
        if len(found) > self.MAX_CANDIDATES:
            found = found[:half] + found[-half:]
        return found  # positions of the matching line; _skip moves them past it


class CommandFollower:
    """Run a log command and cut its output (stdout and stderr, one pipe) into ``LogLine``s.

    The same interface as ``LogFollower`` where the engine uses it: ``watch(stop, on_batch)`` blocks
    (one thread), ``numbering()``, ``backfill()`` (nothing: a command has no part skipped), ``close()``.
    Lines are cut exactly as a file's (``logs.decode``: CR progress, ANSI, bad UTF-8, NUL, 64 KiB cap);
    ``offset`` counts the bytes of the command's output over all its runs and ``no`` counts lines over
    all runs, so a restart never renumbers. When the command exits it is started again after
    ``backoff``; the lines a restart replays are skipped (``ReplayFilter``). Its process group is
    killed when ``watch`` returns or ``close`` is called. Notices (``FileNotice``, ``path`` = the
    program): "started", "exited" (with the code, the last line and the wait before the restart),
    "replayed" (how many lines of a restart were already shown), "error" (cannot start).

    ``spool``: a file that gets every byte read, in order, so a line's ``offset`` is its place there (the
    dashboard's log pane reads lines that left its memory back from it, as from a log file). Created
    (empty) by the first read, removed by ``close``.
    """

    def __init__(
        self,
        command: LogCommand,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        backoff: Backoff | None = None,
        replay: ReplayFilter | None = None,
        clock: Callable[[], float] = time.monotonic,
        debounce: float = 0.005,
        env: dict[str, str] | None = None,
        spool: str | os.PathLike[str] | None = None,
    ) -> None:
        self.command = command
        self.spool = Path(spool) if spool is not None else None
        self._spool_fd: int | None = None
        self._spool_broken = False
        self.backoff = backoff if backoff is not None else Backoff()
        self.replay = replay if replay is not None else ReplayFilter()
        self.path = Path(command.program)
        self.runs = 0
        """How many times the command was started."""
        self.pid: int | None = None
        """The running command's pid (its process group's id too), None between runs."""
        self._clock = clock
        self._debounce = debounce
        # Every process the command starts inherits the marker, also one that setsid()s or double-forks
        # out of its process group: at stop they are found by it and killed (see _kill_marked).
        self._marker = f"{MARKER_ENV}={uuid.uuid4().hex}"
        self._env = {**(env if env is not None else os.environ), MARKER_ENV: self._marker.partition("=")[2]}
        self._split = LineSplitter(max_line_bytes, live=True)
        self._split.reset(0, 1)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._closed = False
        self._watching = threading.Lock()  # held while watch() runs
        self._last_line = ""
        self._last_error = ""

    # -- the engine's interface ----------------------------------------------------------------

    def watch(self, stop: threading.Event, on_batch: Callable[[list[LogItem]], None]) -> None:
        """Run the command until ``stop`` is set, restarting it when it exits; ``on_batch`` gets the lines."""
        delay: float | None = None
        self._watching.acquire()
        try:
            while not stop.is_set() and not self._closed:
                t0 = self._clock()
                code = self._run(stop, on_batch)
                if stop.is_set() or self._closed:
                    return
                ran = self._clock() - t0
                delay = self.backoff.delay(delay, ran)
                if code is not None:
                    on_batch([self._exited(code, ran, delay)])
                stop.wait(delay)
        finally:
            self._kill()
            self._watching.release()

    def numbering(self) -> Numbering:
        """Line numbers are the command's own count: ``line N``."""
        return Numbering()

    def backfill(self) -> Iterator[list[LogLine]]:
        """Nothing: a command's output is read from its start."""
        return iter(())

    def close(self) -> None:
        """Stop: ``watch`` returns within ~50 ms and kills the command's process group on its way out
        (SIGTERM, then SIGKILL after STOP_GRACE); without a ``watch`` running, it is killed here."""
        self._closed = True
        with self._lock:
            proc = self._proc
            if proc is not None and proc.returncode is None:
                self._killpg(proc.pid, signal.SIGTERM)  # its output ends: the reading thread wakes
        if self._watching.acquire(blocking=False):  # no watch() runs: nobody else will clean up
            try:
                self._kill()
            finally:
                self._watching.release()
        self._close_spool()

    def _close_spool(self) -> None:
        with self._lock:
            fd, self._spool_fd = self._spool_fd, None
            if fd is not None:
                os.close(fd)
            if self.spool is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.spool)

    def _to_spool(self, data: bytes) -> None:
        """Append what was read to the spool (a full disk stops the copy, not the reading)."""
        if self.spool is None or self._spool_broken:
            return
        try:
            if self._spool_fd is None:
                self._spool_fd = os.open(self.spool, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(self._spool_fd, view):]
        except OSError:
            self._spool_broken = True  # lines past this point are not read back from it: said by the pane

    # -- one run -------------------------------------------------------------------------------

    def _start(self) -> subprocess.Popen[bytes] | str:
        try:
            proc = subprocess.Popen(
                self.command.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True, bufsize=0, env=self._env,
            )
        except OSError as exc:
            problem = self.command.start_problem()
            return problem or f"cannot start log command `{self.command.text}`: {exc.strerror or exc}"
        return proc

    def _run(self, stop: threading.Event, on_batch: Callable[[list[LogItem]], None]) -> int | None:
        """One run: start, read to EOF (or ``stop``), reap. Returns the exit code (None: did not start)."""
        started = self._start()
        if isinstance(started, str):
            if started != self._last_error:
                self._last_error = started
                on_batch([FileNotice("error", self.path, started)])
            return None
        with self._lock:
            self._proc = started
            if self._closed:
                self._kill_locked()
                return None
            self.pid = started.pid
        self._last_error = ""
        self.runs += 1
        proc = started
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, 1031, PIPE_BYTES)  # F_SETPIPE_SZ: fewer wake-ups, room for a burst
        os.set_blocking(fd, False)
        now = self._clock()
        self.replay.restart(now)
        first: list[LogItem] = [FileNotice("started", self.path, self._started_text(proc.pid))]
        self._last_line = ""
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        pending = first
        eof = False
        while not stop.is_set() and not self._closed:
            if not pending and not poller.poll(50):
                continue
            if not pending and self._debounce:
                stop.wait(self._debounce)  # let a burst gather: fewer, bigger batches
            items = pending
            pending = []
            eof = self._read(fd, items)
            items = self._filter(items, eof)
            if items:
                on_batch(items)
            if eof:
                break
        if not eof:
            return None  # stopped: watch() kills it
        return self._reap(proc)

    def _read(self, fd: int, out: list[LogItem]) -> bool:
        """Read what the pipe holds now (at most BATCH_BYTES) into ``out``; True at EOF."""
        split = self._split
        got = 0
        while got < BATCH_BYTES:
            try:
                data = os.read(fd, READ_BYTES)
            except BlockingIOError:
                return False
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                split.flush(out)
                return True
            if not data:
                split.flush(out)
                self._note_last(out)
                return True
            self._to_spool(data)
            split.feed(data, out)
            got += len(data)
        self._note_last(out)
        return False

    def _note_last(self, out: list[LogItem]) -> None:
        for it in reversed(out):
            if type(it) is LogLine and not it.progress:
                self._last_line = it.plain
                return

    def _filter(self, items: list[LogItem], eof: bool) -> list[LogItem]:
        """Drop what a restart replays (renumbering what follows, so numbers stay consecutive)."""
        replay = self.replay
        was = replay.matching
        before = replay.skipped
        kept = replay.filter(items, self._clock())
        skipped = replay.skipped - before
        if skipped:
            self._split.no -= skipped
            kept = [it._replace(no=it.no - skipped) if type(it) is LogLine else it for it in kept]
        if was and (eof or not replay.matching) and replay.skipped:
            kept.insert(0, FileNotice("replayed", self.path, f"the restarted log command printed {replay.skipped} "
                                      "lines already shown; they are skipped"))
        return kept

    def _reap(self, proc: subprocess.Popen[bytes]) -> int:
        """The exit code of a run whose output ended (waits for the leader; then clears its group)."""
        try:
            code = proc.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            code = -1
            self._kill()  # closed its output but lingers: treat it as gone
            code = proc.returncode if proc.returncode is not None else code
        else:
            self._killpg(proc.pid, signal.SIGKILL)  # what it left behind in its group
            _kill_marked(self._marker)  # and outside it (setsid, double fork)
            self._drop(proc)
        return code

    def _exited(self, code: int, ran: float, delay: float) -> FileNotice:
        how = f"was killed by signal {-code}" if code < 0 else f"exited (code {code})"
        last = self._last_line.strip()
        said = f"; its last line: {last[:SHOWN_CHARS]!r}" if last else "; it printed nothing"
        return FileNotice("exited", self.path, f"log command {how} after {ran:.1f} s{said}; "
                          f"restarting in {delay:g} s (run {self.runs + 1}; lines it prints again are skipped)")

    def _started_text(self, pid: int) -> str:
        again = f" again (run {self.runs})" if self.runs > 1 else ""
        return f"running log command `{self.command.text}`{again} (pid {pid})"

    # -- stopping --------------------------------------------------------------------------------

    def _kill(self) -> None:
        with self._lock:
            self._kill_locked()

    def _kill_locked(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is None:
            self._killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                pass
        self._killpg(proc.pid, signal.SIGKILL)  # the leader, if it ignored SIGTERM, and what it left
        _kill_marked(self._marker)  # what left the group (a `setsid` helper, a double-forked daemon)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=STOP_GRACE)
        _wait_gone(proc.pid, STOP_GRACE)  # a killed `tail` may take a moment to finish exiting
        self._drop(proc)

    def _drop(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.stdout is not None:
            proc.stdout.close()
        if self._proc is proc:
            self._proc = None
            self.pid = None

    @staticmethod
    def _killpg(pgid: int, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)


def _kill_marked(marker: str) -> None:
    """SIGKILL every process whose environment holds ``marker`` (NAME=value): one pass over /proc. A
    process that replaced its whole environment (``env -i``) is not found."""
    want = marker.encode()
    me = os.getpid()

    def holds(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                return want in fh.read().split(b"\0")
        except OSError:  # gone, or another user's
            return False

    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != me and holds(int(entry.name)):
            # checked again through a pidfd (proc.identity): a pid reused since the scan is not signalled
            identity.send(identity.Listed(int(entry.name), None), signal.SIGKILL, still=holds)


def _wait_gone(pgid: int, timeout: float) -> None:
    """Wait until no process of group ``pgid`` is still running (at most ``timeout`` s). Zombies count as
    gone: under an init that does not reap them they stay, holding nothing but a pid."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        if not _running_in_group(pgid):
            return
        time.sleep(0.005)


def _running_in_group(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is not a zombie (one pass over /proc)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def spool_path(directory: Path) -> Path:
    """A new spool file's path in ``directory`` for this process; spools of processes that are gone
    (a dashboard that was killed) are removed first."""
    for old in directory.glob(f"{SPOOL_PREFIX}*.log"):
        pid = old.name[len(SPOOL_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not os.path.exists(f"/proc/{pid}"):
            with contextlib.suppress(OSError):
                old.unlink()
    n = 0
    while (directory / f"{SPOOL_PREFIX}{os.getpid()}-{n}.log").exists():
        n += 1
    return directory / f"{SPOOL_PREFIX}{os.getpid()}-{n}.log"
