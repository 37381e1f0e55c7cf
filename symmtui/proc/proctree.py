"""Find every process a launch started (tree, session, group, env marker) and signal only those."""

# A process is identified by (pid, create_time): a pid whose start time differs from the one we
# recorded is someone else's process (pid reuse) and is never signalled.

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterable
from typing import NamedTuple

import psutil  # type: ignore[import-untyped,unused-ignore]
from msgspec import Struct

from symmtui.proc import identity
from symmtui.proc.pidwatch import environ, stat_fields

MARKER_ENV = "SYMMTUI_LAUNCH_ID"
"""Set in the environment of every launch; descendants inherit it, even after setsid + reparenting."""

_TOLERANCE = identity.START_TOLERANCE  # the one tolerance of "the same process"


class ProcInfo(Struct, frozen=True):
    """A process we know, by identity; ``why`` says how it was found (leader/tree/session/group/marker)."""

    pid: int
    create_time: float
    cmdline: str
    why: str


def create_time(pid: int) -> float | None:
    """Start time of ``pid`` (None if there is no such process or it is a zombie)."""
    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return None
        return float(p.create_time())
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.AccessDenied:
        return None


def is_same(pid: int, when: float) -> bool:
    """True while ``pid`` is the very process that started at ``when`` (and is not a zombie)."""
    ct = create_time(pid)
    return ct is not None and abs(ct - when) < _TOLERANCE


def cmdline(pid: int) -> str:
    """The command line of ``pid`` for display ("" if gone, "[name]" for kernel threads)."""
    try:
        p = psutil.Process(pid)
        parts = [str(a) for a in p.cmdline()]
        return " ".join(parts) if parts else f"[{p.name()}]"
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return ""
    except psutil.AccessDenied:
        return "(not visible: another user's process)"


def protected_pids() -> set[int]:
    """Pids symmtui must never signal: itself, its ancestors, init."""
    out = {0, 1, os.getpid()}
    with contextlib.suppress(psutil.Error):
        for p in psutil.Process().parents():
            out.add(int(p.pid))
    return out


def _info(p: psutil.Process, why: str) -> ProcInfo | None:
    try:
        with p.oneshot():
            if p.status() == psutil.STATUS_ZOMBIE:
                return None
            ct = float(p.create_time())
            parts = [str(a) for a in p.cmdline()]
            name = " ".join(parts) if parts else f"[{p.name()}]"
        return ProcInfo(int(p.pid), ct, name, why)
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return None


def collect(
    pid: int, when: float, sid: int, pgid: int, launch_id: str, known: Iterable[ProcInfo] = ()
) -> list[ProcInfo]:
    """Every live process of one launch, found before any signal is sent.

    Ours by structure: the leader (if it is still the process that started at ``when``), every
    process in its session ``sid`` or group ``pgid`` while the leader is verified (a reused session
    id never pulls in a stranger), and all their descendants; ``known`` processes (an earlier pass)
    while they keep their identity. Ours by inheritance: processes carrying
    ``SYMMTUI_LAUNCH_ID=launch_id`` (workers that called setsid and were reparented) and their
    descendants, except those with a controlling terminal or descended from one through the
    marker: a user's shell that inherited the server's environment (and that shell's jobs) was
    not started by the launch. Processes started before
    ``when`` are never ours. One pass over the process table (see :func:`_table`).
    """
    skip = protected_pids()
    table = {row.pid: row for row in _table()}
    why: dict[int, str] = {}
    lead = table.get(pid)
    leader_ok = lead is not None and abs(lead.start - when) < _TOLERANCE
    if leader_ok:
        why[pid] = "leader"
    for k in known:
        row = table.get(k.pid)
        if row is not None and abs(row.start - k.create_time) < _TOLERANCE:
            why.setdefault(k.pid, k.why)
    strong: set[int] = set()  # ours by structure; the rest only by the inherited marker
    if leader_ok:
        strong = {pid, *(r.pid for r in table.values() if r.sid == sid or r.pgid == pgid)}
    marker = f"{MARKER_ENV}={launch_id}".encode()
    memo: dict[int, bool] = {}

    def carries(p: int) -> bool:
        if not launch_id:
            return False
        if p not in memo:
            memo[p] = _has_marker(p, marker)
        return memo[p]

    for row in table.values():
        p = row.pid
        if row.start + _TOLERANCE < when or p in why or p in skip:
            continue
        if carries(p) and (p in strong or not _from_terminal(row, table, strong, carries)):
            why[p] = "marker"
        elif p in strong:
            why[p] = "session" if row.sid == sid else "group"
    children: dict[int, list[int]] = {}
    for row in table.values():
        children.setdefault(row.ppid, []).append(row.pid)
    stack = list(why)
    while stack:
        parent = stack.pop()
        for child in children.get(parent, ()):
            row = table[child]
            if child in why or row.start + _TOLERANCE < when:
                continue
            if parent in strong:
                strong.add(child)
            elif row.tty:
                continue  # reached only through the marker: a terminal session is not the launch's
            why[child] = "tree"
            stack.append(child)
    found: list[ProcInfo] = []
    for p, reason in why.items():
        if p in skip:
            continue
        with contextlib.suppress(psutil.Error):
            info = _info(psutil.Process(p), reason)
            if info is not None and abs(info.create_time - table[p].start) < _TOLERANCE:
                found.append(info)
    return sorted(found, key=lambda i: (i.why != "leader", i.create_time, i.pid))


def launch_id_of(pid: int) -> str | None:
    """The ``SYMMTUI_LAUNCH_ID`` a process carries (it was started by ``symmtui launch``), else None."""
    env = environ(pid)
    if env is None:
        return None
    for item in env.split(b"\0"):
        if item.startswith(MARKER_ENV.encode() + b"="):
            return item.split(b"=", 1)[1].decode(errors="replace") or None
    return None


def tree(pid: int) -> list[ProcInfo]:
    """``pid`` and every process it started: its descendants (setsid'd ones too: they keep their parent),
    its session or group when it leads them, and the workers that carry its launch marker."""
    when = create_time(pid)
    if when is None:
        return []
    try:
        sid, pgid = os.getsid(pid), os.getpgid(pid)
    except OSError:
        return []
    return collect(pid, when, sid if sid == pid else -1, pgid if pgid == pid else -1, launch_id_of(pid) or "")


def _from_terminal(row: _Row, table: dict[int, _Row], strong: set[int], carries: Callable[[int], bool]) -> bool:
    """True if ``row``, or an ancestor it inherited the marker from, has a controlling terminal.

    The launch runs in a new session with stdin from /dev/null: nothing it starts has a terminal
    unless it opens one. A process with one (or forked from one) carrying the marker is a user's
    shell started from the server's environment, or that shell's work: not ours.
    """
    seen: set[int] = set()
    cur: _Row | None = row
    while cur is not None and cur.pid not in seen:
        if cur.pid in strong:
            return False
        if cur.tty:
            return True
        seen.add(cur.pid)
        cur = table.get(cur.ppid)
        if cur is not None and not carries(cur.pid):
            return False  # reparented to init / a subreaper, or started by something without the marker
    return False


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_boot: float | None = None


class _Row(NamedTuple):
    """One line of the process table."""

    pid: int
    start: float
    ppid: int
    pgid: int
    sid: int
    tty: int
    """Controlling terminal device number (0: none)."""


def _table() -> list[_Row]:
    """Every live process: /proc/<pid>/stat read directly on Linux (one small read per process,
    ~10x cheaper than psutil objects), psutil elsewhere."""
    global _boot
    out: list[_Row] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        names = []
    if not names:
        for p in psutil.process_iter(["create_time", "ppid", "terminal"]):
            with contextlib.suppress(OSError, psutil.Error):
                ct, ppid = p.info.get("create_time"), p.info.get("ppid")
                if ct is not None and ppid is not None:
                    tty = 1 if p.info.get("terminal") else 0
                    out.append(_Row(int(p.pid), float(ct), int(ppid), os.getpgid(p.pid), os.getsid(p.pid), tty))
        return out
    if _boot is None:
        _boot = float(psutil.boot_time())
    for name in names:
        if not name.isdigit():
            continue
        # after "(comm)": state ppid pgrp session tty_nr ... starttime (the 20th)
        fields = stat_fields(int(name))
        if fields is None or len(fields) < 20 or fields[0] == b"Z":
            continue
        out.append(_Row(int(name), _boot + int(fields[19]) / _CLK_TCK, int(fields[1]), int(fields[2]),
                        int(fields[3]), int(fields[4])))
    return out


def _has_marker(pid: int, marker: bytes) -> bool:
    """True if ``pid``'s environment holds ``marker`` (NAME=value); False if unreadable."""
    env = environ(pid)
    if env is None:
        try:
            value = psutil.Process(pid).environ().get(MARKER_ENV)
            return isinstance(value, str) and value == marker.split(b"=", 1)[1].decode()
        except (psutil.Error, OSError):
            return False
    return env.startswith(marker + b"\0") or (b"\0" + marker + b"\0") in env or env.endswith(b"\0" + marker)


def alive(procs: Iterable[ProcInfo]) -> list[ProcInfo]:
    """Those of ``procs`` still running (same identity, not a zombie)."""
    return [p for p in procs if is_same(p.pid, p.create_time)]


def send(proc: ProcInfo, sig: signal.Signals) -> bool:
    """Send ``sig`` to ``proc`` only if the pid still names that very process; True if sent (the one identity
    check, ``proc.identity.send``: a pidfd opened first, identity checked second, so the pid cannot be reused
    by another process between the check and the signal)."""
    return identity.send(identity.Listed(proc.pid, proc.create_time), sig).sent


def signal_group(pgid: int, procs: Iterable[ProcInfo], sig: signal.Signals) -> bool:
    """killpg(pgid) only when a verified live member of ``procs`` is in that group (so it is ours)."""
    if pgid in protected_pids() or pgid == os.getpgid(0):
        return False
    for p in alive(procs):
        try:
            if os.getpgid(p.pid) == pgid:
                os.killpg(pgid, sig)
                return True
        except (ProcessLookupError, PermissionError):
            continue
    return False
