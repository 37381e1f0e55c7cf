"""The data of one stacks dump: frames, threads, one process's dump, a group of identical stacks."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import Struct, field

Status = Literal["ok", "denied", "gone", "not-python", "timeout", "error"]


class Frame(Struct, frozen=True):
    """One frame as py-spy reports it (innermost first in a stack)."""

    name: str
    filename: str
    short: str
    line: int
    native: bool = False

    def where(self) -> str:
        return f"{self.short}:{self.line}" if self.line else self.short

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "filename": self.filename, "line": self.line, "native": self.native}


class ThreadStack(Struct, frozen=True):
    """One thread of one process."""

    tid: int
    name: str
    active: bool
    frames: tuple[Frame, ...]

    def to_json(self) -> dict[str, Any]:
        return {"tid": self.tid, "name": self.name, "active": self.active,
                "frames": [f.to_json() for f in self.frames]}


class ProcDump(Struct, frozen=True):
    """py-spy's answer for one process: its threads, or why there are none."""

    pid: int
    cmdline: str
    status: Status
    detail: str = ""
    threads: tuple[ThreadStack, ...] = ()
    seconds: float = 0.0
    rank: str | None = None
    """The rank label ("TP3", "DP1 TP3") from the process title, its environment or the log."""

    def main_thread(self) -> ThreadStack | None:
        """The thread that tells where the process is: the main thread (its tid is the pid)."""
        for t in self.threads:
            if t.tid == self.pid:
                return t
        for t in self.threads:
            if t.name == "MainThread":
                return t
        return self.threads[0] if self.threads else None

    def label(self) -> str:
        return self.rank or f"pid {self.pid}"

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "rank": self.rank, "cmdline": self.cmdline, "status": self.status,
                "detail": self.detail, "seconds": round(self.seconds, 3),
                "threads": [t.to_json() for t in self.threads]}


class Hint(Struct, frozen=True):
    """What to try for a hang in a phase: one catalogue entry of kind "hang"."""

    id: str
    text: str
    source: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "source": list(self.source)}


class Group(Struct, frozen=True):
    """Processes whose main threads stand in the same stack."""

    procs: tuple[ProcDump, ...]
    stack: tuple[Frame, ...]
    headline: str
    """The frames that matter, innermost first: "ncclCommInitRank ← init_process_group ← …"."""
    path: tuple[str, ...]
    """The call path for display, innermost first, library runs folded into one line."""
    phase: str | None
    hints: tuple[Hint, ...] = ()
    """The catalogue's hang entries for ``phase`` (symmtui/catalogue/50-hangs.toml and the user's)."""
    labels: str = field(default="")

    def to_json(self) -> dict[str, Any]:
        return {"count": len(self.procs), "ranks": [p.rank for p in self.procs],
                "pids": [p.pid for p in self.procs], "labels": self.labels, "headline": self.headline,
                "phase": self.phase, "hints": [h.to_json() for h in self.hints], "path": list(self.path),
                "stack": [f.to_json() for f in self.stack]}
