"""The process view's rows (nvitop's process table): every process holding GPU memory, one row per pid, with
its GPUs, its GPU memory, its GPUs' utilisation, its host CPU and memory, its owner, and whether it is our
launch's; sorted by a column; and whether a row may be signalled at all (the signal itself is the Session's
intent, ``session.intents.SignalProcess``: the identity is checked in ``proc.identity`` at that moment).

Pure but for ``host_facts``, which reads /proc (psutil): call it off the UI loop.
The GPU side comes from a sampling round (``GpuSnapshot``: NVML's per-process memory); NVML's per-process
SM utilisation is not sampled, so the utilisation column is that of the process's GPUs (the busiest).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable

import psutil  # type: ignore[import-untyped,unused-ignore]
from msgspec import Struct

from symmtui.gpu.results import GpuProcess, is_na
from symmtui.gpu.sampler import GpuSnapshot
from symmtui.proc import identity
from symmtui.proc.identity import Listed

__all__ = ["COLUMNS", "HostFacts", "ProcRow", "host_facts", "listed", "refusal", "rows", "sort_rows"]

COLUMNS: tuple[tuple[str, str], ...] = (
    ("pid", "pid"), ("user", "user"), ("gpus", "GPU"), ("gpu_memory", "GPU mem"), ("gpu_util", "GPU util"),
    ("cpu", "CPU %"), ("rss", "host mem"), ("command", "command"),
)
"""(sort key, header) of each column, in order; ``s`` cycles the sort through them."""
_DESCENDING = {"gpu_memory", "gpu_util", "cpu", "rss"}  # the biggest first; the rest ascending


class HostFacts(Struct, frozen=True):
    """What /proc says of a pid: owner, CPU, resident memory, start time (to know it is still the same)."""

    uid: int | None
    user: str | None
    cpu: float | None
    rss: int | None
    started: float | None
    command: str | None = None


class ProcRow(Struct, frozen=True):
    """One process on the GPUs."""

    pid: int
    gpus: tuple[int, ...]
    gpu_memory: int | None
    gpu_util: float | None
    ours: bool
    command: str
    host: HostFacts | None = None

    @property
    def mine(self) -> bool | None:
        """Owned by this user (None: the owner could not be read)."""
        if self.host is None or self.host.uid is None:
            return None
        return self.host.uid == os.getuid()


def _command(proc: GpuProcess) -> str:
    if not is_na(proc.cmdline) and proc.cmdline:
        return " ".join(proc.cmdline)  # type: ignore[arg-type]
    return "?" if is_na(proc.name) else str(proc.name)


def rows(snapshot: GpuSnapshot, our_pids: Collection[int], host: dict[int, HostFacts] | None = None) -> list[ProcRow]:
    """One row per pid over every GPU of the round (memory summed, the busiest GPU's utilisation)."""
    mem: dict[int, int | None] = {}
    gpus: dict[int, list[int]] = {}
    util: dict[int, float | None] = {}
    cmd: dict[int, str] = {}
    for info, sample in zip(snapshot.infos, snapshot.samples, strict=False):
        procs = sample.processes
        if not isinstance(procs, tuple):
            continue
        busy = None if is_na(sample.utilization_gpu) else float(sample.utilization_gpu)  # type: ignore[arg-type]
        for proc in procs:
            used = proc.used_memory
            if isinstance(used, int):
                mem[proc.pid] = (mem.get(proc.pid) or 0) + used
            else:
                mem.setdefault(proc.pid, None)
            gpus.setdefault(proc.pid, []).append(info.index)
            seen = [u for u in (util.get(proc.pid), busy) if u is not None]
            util[proc.pid] = max(seen) if seen else None
            cmd.setdefault(proc.pid, _command(proc))
    host = host or {}
    ours = frozenset(our_pids)
    out = []
    for pid in mem:
        facts = host.get(pid)
        command = facts.command if facts is not None and facts.command else cmd[pid]
        out.append(ProcRow(pid, tuple(gpus[pid]), mem[pid], util.get(pid), pid in ours, command, facts))
    return out


def _key(row: ProcRow, column: str) -> tuple[bool, object]:
    """A sort key that puts unknown values last."""
    host = row.host
    value: object = {
        "pid": row.pid, "gpus": row.gpus, "gpu_memory": row.gpu_memory, "gpu_util": row.gpu_util,
        "command": row.command, "user": host.user if host else None, "cpu": host.cpu if host else None,
        "rss": host.rss if host else None,
    }[column]
    return (value is None, value if value is not None else 0)


def sort_rows(items: Iterable[ProcRow], column: str, reverse: bool = False) -> list[ProcRow]:
    """Sorted by ``column`` (the biggest first for sizes and rates), ``reverse`` flips it; unknowns last."""
    descending = (column in _DESCENDING) != reverse
    known = [r for r in items if not _key(r, column)[0]]
    unknown = [r for r in items if _key(r, column)[0]]
    known.sort(key=lambda r: _key(r, column)[1], reverse=descending)  # type: ignore[arg-type, return-value]
    return known + sorted(unknown, key=lambda r: r.pid)


def host_facts(pids: Iterable[int], cache: dict[int, object] | None = None) -> dict[int, HostFacts]:
    """What /proc says of each pid (blocking reads: a worker thread). ``cache`` keeps psutil's Process objects
    between rounds so CPU % is measured over the time since the last round (the first round says 0)."""
    cache = cache if cache is not None else {}
    out: dict[int, HostFacts] = {}
    for pid in pids:
        proc = cache.get(pid)
        try:
            if not isinstance(proc, psutil.Process) or not proc.is_running():
                proc = psutil.Process(pid)
                cache[pid] = proc
            with proc.oneshot():
                uid = proc.uids().real
                try:
                    user = proc.username()
                except (KeyError, psutil.Error):
                    user = str(uid)
                cmdline = " ".join(proc.cmdline()) or None
                out[pid] = HostFacts(uid, user, proc.cpu_percent(None), proc.memory_info().rss, proc.create_time(),
                                     cmdline)
        except psutil.NoSuchProcess:
            cache.pop(pid, None)
        except psutil.Error:  # AccessDenied, a zombie: what could be read
            out[pid] = HostFacts(None, None, None, None, None)
    for gone in [p for p in cache if p not in out]:
        cache.pop(gone, None)
    return out


def listed(row: ProcRow) -> Listed:
    """The identity the row shows (pid, start time, owner): what ``proc.identity`` checks at the signal."""
    host = row.host
    return Listed(row.pid, host.started if host is not None else None, host.uid if host is not None else None)


def refusal(row: ProcRow) -> str | None:
    """Why ``row`` may not be signalled at all (pid 1, symmtui itself, an owner that cannot be read, another
    user's: ``proc.identity.refusal``), None when it may be (if it is still the process shown)."""
    host = row.host
    why = identity.refusal(listed(row))
    if why is not None and host is not None and host.uid is not None and host.user and f"uid {host.uid}," in why:
        why = why.replace(f"uid {host.uid},", f"{host.user} (uid {host.uid}),")  # the user's name, as the table shows it
    return why
