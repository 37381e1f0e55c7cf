"""Launch history (JSON lines in the state dir) and the ETA it gives: medians, never a made-up number."""

from __future__ import annotations

import fcntl
import json
import os
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from symmtui import boundary
from symmtui.errors import UserError
from symmtui.launch.facts import LaunchFacts
from symmtui.launch.state import launch_dir

MAX_READ_BYTES = 8 << 20  # the history's last 8 MiB is read (thousands of launches; older lines are not)
MAX_LINE_BYTES = 64 << 10  # a longer line is not one symmtui wrote: skipped and counted (facts are capped below it)
MAX_NAMED = 16  # flags and variables a diagnosis names, kept per launch
HINT = "remove it: symmtui writes a new one at the next verdict"
VERDICTS = ("ready", "crashed", "stalled", "timed_out", "stopped", "failed")
"""``ready`` is the only successful verdict: only those launches feed the ETA."""


def verdict_of(state: str) -> str:
    """The history verdict for a readiness state's value (``"timed out"`` -> ``"timed_out"``)."""
    verdict = str(state).replace(" ", "_")
    return verdict if verdict in VERDICTS else "stopped"


MAX_EPOCH = 32503680000.0  # a start or end after the year 3000 is not one symmtui wrote
MAX_PHASE = 365 * 86400.0  # a phase of more than a year likewise


def _seconds(value: Any, top: float) -> float:
    """A time read back from the history: a finite number in [0, top], else ValueError (the line is skipped)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"not a time: {type(value).__name__}")
    seconds = float(value)
    if not 0.0 <= seconds <= top:  # NaN fails this too
        raise ValueError(f"time out of range: {seconds!r}")
    return seconds


class HistoryEntry(Struct, frozen=True):
    """One launch, appended once it ended (or was stopped)."""

    launch_id: str
    command_hash: str
    start: float
    end: float | None
    verdict: str
    cause: str | None = None
    phases: Mapping[str, float] = field(default_factory=dict)
    """Seconds spent in each phase, in the order they happened."""
    patch: str | None = None
    """Patch state at launch ("patched", "unpatched", "not needed", ...), as the caller knew it."""
    profile_key: str = ""
    log_path: str = ""
    versions: Mapping[str, str] = field(default_factory=dict)
    """What it ran with (symmtui, sglang, vllm, torch, nccl, driver, ...: ``launch.versions``); empty: not read."""
    facts: LaunchFacts | None = None
    """The command parsed, the variables, the model's files, GPUs, host (``launch.facts``); None: not kept
    (a line of an older symmtui)."""
    named: tuple[str, ...] = ()
    """The flags and variables the diagnosis of its cause names (``launch.changes.hints_of``): what
    `history --diff` puts first, as the verdict did."""

    @property
    def ready_after(self) -> float | None:
        """Seconds from start to ready (None unless the verdict is ready)."""
        if self.verdict != "ready" or self.end is None:
            return None
        return max(0.0, self.end - self.start)

    def to_json(self) -> dict[str, Any]:
        return {
            "launch_id": self.launch_id,
            "command_hash": self.command_hash,
            "start": self.start,
            "end": self.end,
            "verdict": self.verdict,
            "cause": self.cause,
            "phases": dict(self.phases),
            "patch": self.patch,
            "profile_key": self.profile_key,
            "log_path": self.log_path,
            "versions": dict(self.versions),
            "facts": self.facts.to_json() if self.facts is not None else None,
            "named": list(self.named[:MAX_NAMED]),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> HistoryEntry:
        if not isinstance(d, Mapping):
            raise TypeError("a history line must be a JSON object")
        phases = d.get("phases") or {}
        if not isinstance(phases, dict):
            raise TypeError("phases must be an object")
        end = d.get("end")
        versions = d.get("versions") or {}
        if not isinstance(versions, dict):
            raise TypeError("versions must be an object")
        named = d.get("named") or []
        if not isinstance(named, list) or len(named) > MAX_NAMED or not all(isinstance(n, str) for n in named):
            raise TypeError("named must be a list of names")
        return cls(
            launch_id=str(d["launch_id"]),
            command_hash=str(d["command_hash"]),
            start=_seconds(d["start"], MAX_EPOCH),
            end=None if end is None else _seconds(end, MAX_EPOCH),
            verdict=str(d["verdict"]),
            cause=None if d.get("cause") is None else str(d["cause"]),
            phases={str(k): _seconds(v, MAX_PHASE) for k, v in phases.items()},
            patch=None if d.get("patch") is None else str(d["patch"]),
            profile_key=str(d.get("profile_key", "")),
            log_path=str(d.get("log_path", "")),
            versions={str(k): str(v) for k, v in versions.items()},
            facts=LaunchFacts.from_json(d["facts"]) if d.get("facts") is not None else None,
            named=tuple(named),
        )


class Estimate(Struct, frozen=True):
    """Medians over ``samples`` earlier successful launches of one command."""

    samples: int
    total: float
    phases: Mapping[str, float]

    def remaining(self, phase: str | None, in_phase: float, elapsed: float) -> float:
        """Seconds left: rest of the current phase plus the later phases (or total - elapsed)."""
        if phase is None or phase not in self.phases:
            return max(0.0, self.total - elapsed)
        names = list(self.phases)
        rest = max(0.0, self.phases[phase] - in_phase)
        return rest + sum(self.phases[n] for n in names[names.index(phase) + 1 :])


def history_path() -> Path:
    """``<state>/launch/history.jsonl``."""
    return launch_dir() / "history.jsonl"


class History:
    """The history file: append-only JSON lines; unreadable lines are skipped and counted, only the last
    :data:`MAX_READ_BYTES` are read."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else history_path()
        self.skipped = 0

    def check(self) -> None:
        """Refuse (InputError, exit 2) a history that is there but not a regular file, before a launch or
        a stop starts: its verdict could not be written. Stats only; never opens."""
        boundary.regular_file(self.path, what="the launch history", missing_ok=True, hint=HINT)

    def append(self, entry: HistoryEntry) -> None:
        """Append one line with a single O_APPEND write (concurrent writers do not interleave)."""
        if entry.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {entry.verdict!r}; one of {VERDICTS}")
        line = (json.dumps(entry.to_json()) + "\n").encode()  # phases keep their order
        fd = self._open(os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, line)
        except OSError as exc:
            raise UserError(f"cannot append launch history {self.path}: {exc.strerror or exc}") from exc
        finally:
            os.close(fd)

    def _open(self, flags: int) -> int:
        """The history file opened through the CLI boundary: never blocks (a FIFO is refused, exit 2)."""
        return boundary.open_regular(self.path, what="the launch history", flags=flags, hint=HINT)

    def append_once(self, entry: HistoryEntry) -> HistoryEntry:
        """Append ``entry`` unless its launch is already recorded; the recorded entry either way.

        Check and append happen under a lock on the history file, so two processes finishing the
        same launch (the `launch` that waited on it and the `stop` that ended it) write one line.
        """
        if entry.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {entry.verdict!r}; one of {VERDICTS}")
        fd = self._open(os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            old = self.entry(entry.launch_id)
            if old is not None:
                return old
            self.append(entry)
            return entry
        finally:
            os.close(fd)

    def entry(self, launch_id: str) -> HistoryEntry | None:
        """The recorded entry of ``launch_id`` (its last line), None when there is none; only the lines that
        hold the id are parsed (the verdict's write does not wait for the whole history to be read)."""
        if boundary.regular_file(self.path, what="the launch history", missing_ok=True, hint=HINT) is None:
            return None
        raw = boundary.read_bytes(self.path, what="the launch history", max_bytes=MAX_READ_BYTES, last=True, hint=HINT)
        needle = launch_id.encode("utf-8", "surrogateescape")
        for line in reversed(raw.splitlines()):
            if needle not in line or len(line) > MAX_LINE_BYTES:
                continue
            try:
                found = HistoryEntry.from_json(json.loads(line))
            except (ValueError, KeyError, TypeError, RecursionError):
                continue
            if found.launch_id == launch_id:
                return found
        return None

    def entries(self) -> list[HistoryEntry]:
        """All entries, oldest first; a launch recorded twice keeps its last line."""
        self.skipped = 0
        if boundary.regular_file(self.path, what="the launch history", missing_ok=True, hint=HINT) is None:
            return []
        raw = boundary.read_bytes(self.path, what="the launch history", max_bytes=MAX_READ_BYTES, last=True, hint=HINT)
        by_id: dict[str, HistoryEntry] = {}
        for line in raw.splitlines():
            if not line.strip():
                continue
            try:
                if len(line) > MAX_LINE_BYTES:
                    raise ValueError("line too long")
                e = HistoryEntry.from_json(json.loads(line))
            except (ValueError, KeyError, TypeError, RecursionError):
                self.skipped += 1
                continue
            by_id.pop(e.launch_id, None)
            by_id[e.launch_id] = e
        return list(by_id.values())

    def has(self, launch_id: str) -> bool:
        return self.entry(launch_id) is not None

    def estimate(self, command_hash: str, *, exclude: str | None = None) -> Estimate | None:
        """Median total and per-phase times of earlier ready launches of ``command_hash``; None if none."""
        ok = [
            e
            for e in self.entries()
            if e.command_hash == command_hash and e.verdict == "ready" and e.launch_id != exclude
        ]
        totals = [t for e in ok if (t := e.ready_after) is not None]
        if not totals:
            return None
        order: list[str] = []
        for e in reversed(ok):
            for name in e.phases:
                if name not in order:
                    order.append(name)
        phases = {
            name: statistics.median([e.phases[name] for e in ok if name in e.phases]) for name in order
        }
        return Estimate(samples=len(totals), total=statistics.median(totals), phases=phases)

    def eta(self, command_hash: str, phase: str | None = None) -> float | None:
        """Median seconds of ``phase`` (or of the whole load when None) over earlier ready launches."""
        est = self.estimate(command_hash)
        if est is None:
            return None
        if phase is None:
            return est.total
        return est.phases.get(phase)


def eta(command_hash: str, phase: str | None = None, *, path: Path | None = None) -> float | None:
    """Module-level shortcut for :meth:`History.eta` on the default history file."""
    return History(path).eta(command_hash, phase)
