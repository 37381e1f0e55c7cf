"""One identity check for every signal symmtui sends to a process it did not just start, made at the moment it signals.

A process is (pid, start time, owner). The check opens a pidfd on the pid first, then reads ``/proc/PID/stat``
(state, start time) and ``/proc/PID/status`` (owner), then makes sure the pidfd's process is still running, and
signals through the pidfd (``signal.pidfd_send_signal``): the pid cannot be handed to another process between
the check and the signal. What was listed and what is there must agree, or nothing is sent, and the sentence
says why: "has already exited" (gone, or a zombie), "is now another process" (a new start time: the pid was
reused), "changed owner (uid A -> B): not signalled". pid 1 and symmtui itself (and its parents) are never
signalled; a process outside the server's tree only when the user asked for it by its pid.

Where the kernel has no pidfd (Linux < 5.3), the same checks run and the signal goes by pid: a reuse in that
instant cannot be excluded there.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
from collections.abc import Callable
from enum import StrEnum

from msgspec import Struct

from symmtui.proc.pidwatch import stat_fields

START_TOLERANCE = 0.05
"""Seconds two start times may differ and be one process's: /proc counts clock ticks (10 ms), psutil's
``create_time`` adds the boot time (a float) to them. The one tolerance for "the same process" (proctree too)."""
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class Outcome(StrEnum):
    """What a checked signal did."""

    SENT = "sent"
    GONE = "gone"  # exited (a zombie too): nothing to signal
    REPLACED = "replaced"  # the pid is another process's now
    OWNER = "owner"  # the owner changed since it was listed
    REFUSED = "refused"  # pid 1, symmtui itself, or outside the server's tree and not asked for by pid
    DENIED = "denied"  # the kernel said no


class Listed(Struct, frozen=True):
    """A process as it was shown (or recorded): its pid, start time (psutil's ``create_time``; None: unread) and
    real uid (None: not to be checked, a launch's own process that may drop its privileges)."""

    pid: int
    started: float | None
    uid: int | None = None


class Signalled(Struct, frozen=True):
    """What happened, and the sentence that says it."""

    outcome: Outcome
    text: str

    @property
    def sent(self) -> bool:
        return self.outcome is Outcome.SENT


class Now(Struct, frozen=True):
    """What /proc says of a pid at this moment (None: no such process)."""

    state: str
    started: float
    uid: int | None


def _boot_time() -> float:
    # psutil (~15 ms) for the boot time only (as create_time counts it): the rest reads /proc itself
    import psutil  # type: ignore[import-untyped,unused-ignore]

    return float(psutil.boot_time())


_BOOT: list[float] = []


def read_now(pid: int) -> Now | None:
    """The state letter, start time (as psutil's ``create_time``) and real uid of ``pid`` now."""
    fields = stat_fields(pid)
    if fields is None or len(fields) < 20:
        return None
    try:
        ticks = int(fields[19])
    except ValueError:
        return None
    if not _BOOT:
        _BOOT.append(_boot_time())
    uid: int | None = None
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Uid:"):
                    uid = int(line.split()[1])
                    break
    except (OSError, ValueError, IndexError):
        uid = None
    return Now(fields[0].decode("ascii", "replace"), _BOOT[0] + ticks / _CLK_TCK, uid)


def same_start(a: float, b: float) -> bool:
    """Whether two start times are one process's (START_TOLERANCE)."""
    return abs(a - b) < START_TOLERANCE


def protected(pid: int) -> str | None:
    """Why ``pid`` is never signalled (pid 1, symmtui itself or one of its parents), or None."""
    if pid <= 1:
        return f"pid {pid} is the init process: symmtui never signals it"
    if pid == os.getpid():
        return f"pid {pid} is symmtui itself: not signalled"
    with contextlib.suppress(OSError, ValueError):
        parent = os.getppid()
        seen = 0
        while parent > 1 and seen < 64:
            if parent == pid:
                return f"pid {pid} is a parent of symmtui (its shell or terminal): not signalled"
            fields = stat_fields(parent)
            parent = int(fields[1]) if fields is not None and len(fields) > 1 else 0
            seen += 1
    return None


def _exited(fd: int) -> bool:
    ready, _, _ = select.select([fd], [], [], 0)
    return bool(ready)


def check(listed: Listed, now: Now | None) -> Signalled | None:
    """Why ``now`` is not ``listed`` (gone, a zombie, another process, another owner), or None: the same."""
    pid = listed.pid
    if now is None or now.state in ("Z", "X"):
        return Signalled(Outcome.GONE, f"pid {pid} has already exited: nothing sent")
    if listed.started is not None and not same_start(now.started, listed.started):
        return Signalled(Outcome.REPLACED, f"pid {pid} is now another process (it started again): nothing sent")
    if listed.uid is not None and now.uid != listed.uid:
        return Signalled(Outcome.OWNER, f"pid {pid} changed owner (uid {listed.uid} -> "
                                        f"{'?' if now.uid is None else now.uid}): not signalled")
    return None


def send(listed: Listed, sig: signal.Signals, *, still: Callable[[int], bool] | None = None) -> Signalled:
    """Signal ``listed``'s process if it is still that process (see the module's docstring); ``still``: one more
    test of the pid made after the pidfd is open (a marker in its environment). pid 1 and symmtui itself:
    refused."""
    pid = listed.pid
    why = protected(pid)
    if why is not None:
        return Signalled(Outcome.REFUSED, why)
    fd: int | None = None
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return Signalled(Outcome.GONE, f"pid {pid} has already exited: nothing sent")
    except (OSError, AttributeError):  # no pidfd here: check, then signal by pid
        fd = None
    try:
        wrong = check(listed, read_now(pid))
        if wrong is None and still is not None and not still(pid):
            wrong = Signalled(Outcome.REPLACED, f"pid {pid} is now another process: nothing sent")
        if wrong is None and fd is not None and _exited(fd):  # what /proc said may be of a successor's
            wrong = Signalled(Outcome.GONE, f"pid {pid} has already exited: nothing sent")
        if wrong is not None:
            return wrong
        if fd is not None:
            signal.pidfd_send_signal(fd, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        return Signalled(Outcome.GONE, f"pid {pid} has already exited: nothing sent")
    except PermissionError:
        return Signalled(Outcome.DENIED, f"pid {pid}: permission denied: nothing sent")
    finally:
        if fd is not None:
            os.close(fd)
    return Signalled(Outcome.SENT, f"{sig.name} sent to pid {pid}")


def refusal(listed: Listed) -> str | None:
    """Why a listed process may not be signalled at all, whatever it is now (None: it may be, if it is still
    what was listed): pid 1, symmtui itself or a parent, an owner that cannot be read, another user's (root's
    processes are root's). The process view asks before its question; :func:`send_listed` again at the signal."""
    pid = listed.pid
    why = protected(pid)
    if why is not None:
        return why
    if listed.uid is None or listed.started is None:
        return f"pid {pid}: its owner cannot be read (gone, or not visible here): nothing sent"
    if listed.uid != os.getuid():
        return f"pid {pid} belongs to uid {listed.uid}, not to you: symmtui signals only your own processes"
    return None


def send_listed(listed: Listed, sig: signal.Signals, *, in_tree: bool, by_pid: bool = False) -> Signalled:
    """A process the user picked from a list (the process view): the server's, or asked for by its pid; only the
    user's own; then :func:`send` (the identity as listed, owner included, checked through a pidfd)."""
    why = refusal(listed)
    if why is not None:
        return Signalled(Outcome.REFUSED, why)
    wrong = check(listed, read_now(listed.pid))  # gone, a zombie, another process, another owner: say that first
    if wrong is not None:
        return wrong
    if not in_tree and not by_pid:
        return Signalled(Outcome.REFUSED, f"pid {listed.pid} is not one of the server's processes: symmtui signals "
                                          "it only when asked for by its pid")
    return send(listed, sig)
