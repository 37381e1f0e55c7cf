"""A pid is a process: watch one by pid plus its start time (and a pidfd), so a reused pid never reads as it.

``ProcRef.open(pid)`` notes the process's start time (``/proc/PID/stat`` field 22, clock ticks since
boot) and opens a pidfd on it. Afterwards the pid is only believed while the start time matches: a
process that exited and whose pid was handed to another reads as gone, never as alive. A stopped
(SIGSTOP) or continued process is alive; only its exit ends the watch.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable

from msgspec import Struct


class ProcStat(Struct, frozen=True):
    """The two fields of ``/proc/PID/stat`` we use: the state letter and the start time."""

    state: str
    start: int
    exit_raw: int | None


def stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after "(comm)": state, ppid, pgrp, session, tty_nr, ... (None: unreadable)."""
    if pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except (OSError, ValueError):
        return None
    return data[data.rfind(b")") + 2 :].split()


def environ(pid: int) -> bytes | None:
    """``/proc/PID/environ`` (NAME=value entries, NUL-separated); None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read()
    except OSError:
        return None


def read_stat(pid: int) -> ProcStat | None:
    """``/proc/PID/stat`` (state, start time, raw exit status of a zombie), None when there is no such pid."""
    rest = stat_fields(pid)
    if rest is None or len(rest) < 20:
        return None
    try:
        start = int(rest[19])  # field 22 "starttime"
        raw = int(rest[49]) if len(rest) > 49 else None  # field 52 "exit_code" (Linux 3.5+)
    except ValueError:
        return None
    return ProcStat(rest[0].decode("ascii", "replace"), start, raw)


def waitid_code(info: os.waitid_result) -> int:
    """subprocess-style return code from a waitid result (-N: killed by signal N)."""
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def _code(raw: int | None) -> int | None:
    """subprocess-style return code from a raw wait status (-N: killed by signal N)."""
    if raw is None:
        return None
    if os.WIFSIGNALED(raw):
        return -os.WTERMSIG(raw)
    return os.WEXITSTATUS(raw)


class ProcRef:
    """One process, followed by identity; ``close()`` the pidfd when done."""

    def __init__(self, pid: int, start: int | None, pidfd: int | None) -> None:
        self.pid = pid
        self.start = start
        self.pidfd = pidfd
        self.code: int | None = None

    @classmethod
    def open(cls, pid: int) -> ProcRef:
        """The process that has ``pid`` now (``start`` None: there is none, or it is already a zombie)."""
        before = read_stat(pid)
        fd: int | None = None
        if before is not None and hasattr(os, "pidfd_open"):
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                fd = None
        after = read_stat(pid)
        if before is None or after is None or after.start != before.start:
            # gone (or replaced) while we looked: a pidfd opened then may name another process
            if fd is not None:
                os.close(fd)
            ref = cls(pid, None, None)
            if before is not None and before.state in ("Z", "X"):
                ref.code = _code(before.exit_raw)
            return ref
        ref = cls(pid, before.start, fd)
        if before.state in ("Z", "X"):
            ref.code = _code(before.exit_raw)
        return ref

    def _same(self) -> ProcStat | None:
        st = read_stat(self.pid)
        return st if st is not None and self.start is not None and st.start == self.start else None

    def exited(self) -> bool | None:
        """What the pidfd says: True once this process has exited, None without a pidfd."""
        if self.pidfd is None:
            return None
        ready, _, _ = select.select([self.pidfd], [], [], 0)
        return bool(ready)

    def status(self) -> tuple[bool, int | None]:
        """(alive, returncode or None) of this very process; a reused pid reads as gone, code unknown.

        With a pidfd the kernel answers (start times are in clock ticks: two processes can share
        one); without, the pid counts only while its start time is the one noted at open.
        """
        if self.start is None:
            return False, self.code
        exited = self.exited()
        st = self._same()
        if exited is False or (exited is None and st is not None and st.state not in ("Z", "X")):
            return True, None
        if st is not None and st.state in ("Z", "X") and self.code is None:  # still a zombie: its code
            child = self._child_code()
            self.code = child if child is not None else _code(st.exit_raw)
        return False, self.code

    def _child_code(self) -> int | None:
        """Our own child's code, read without reaping it (by pidfd when there is one)."""
        try:
            if self.pidfd is not None:
                info = os.waitid(os.P_PIDFD, self.pidfd, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            else:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except OSError:  # ChildProcessError: not our child (or already reaped)
            return None
        return None if info is None else waitid_code(info)

    def close(self) -> None:
        """Close the pidfd (idempotent)."""
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None

    def watch(self, stop: threading.Event, on_exit: Callable[[int | None], None], poll: float = 0.2) -> None:
        """Block until this process is gone (or ``stop``), then call ``on_exit(returncode or None)``.

        With a pidfd the kernel wakes us the moment it exits; else its start time is polled. A
        stopped or continued process keeps the watch going; a pid that now names another process
        does not.
        """
        while not stop.is_set():
            if self.pidfd is not None:
                ready, _, _ = select.select([self.pidfd], [], [], poll)
                if not ready:
                    continue
            else:
                stop.wait(poll)
            alive, code = self.status()
            if not alive:
                on_exit(code)
                return


def exists(pid: int) -> bool:
    """True while ``pid`` is in the process table (another user's process included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_exit_status(pid: int) -> tuple[bool, int | None]:
    """(alive, returncode) for ``pid`` by number, without reaping it: returncode like subprocess (-N = signal N).

    Our own child is read with waitid(WNOWAIT) (whoever owns the Popen still reaps it); another
    process's code is read from /proc while it is a zombie; otherwise the code is unknown (None).
    A one-off look: to follow one process over time, use :class:`ProcRef` (a reused pid is not it).
    """
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except OSError:  # ChildProcessError included: not our child
        info = None
    else:
        if info is None:
            return True, None
        return False, waitid_code(info)
    st = read_stat(pid)
    if st is None:
        return exists(pid), None
    if st.state not in ("Z", "X"):
        return True, None
    return False, _code(st.exit_raw)
