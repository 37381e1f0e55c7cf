"""One stacks dump of a server's tree: take it, read the log beside it, render it, save it next to the log."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from symmtui import boundary, fsatomic
from symmtui.errors import UserError
from symmtui.judge.ranks import RankBoard
from symmtui.judge.rules import RuleSet, strip_ansi
from symmtui.logs.lineparts import split_records
from symmtui.proc import access
from symmtui.proc.proctree import ProcInfo
from symmtui.stacks.collapse import collapse, group_line
from symmtui.stacks.gpus import gpu_evidence
from symmtui.stacks.model import Group, ProcDump
from symmtui.stacks.pyspy import DEFAULT_LIMIT, dump_many
from symmtui.stacks.ranks import rank_of

LOG_TAIL_BYTES = 4 << 20  # the log's last 4 MiB say which rank is where
SCHEMA = "symmtui.stacks/2"


class PtraceDenied(UserError):
    """No process of the tree could be read: ptrace was refused (one line says why and what to do)."""

    exit_code = 3


class LogFacts(Struct, frozen=True):
    """What the log's tail says: the last phase named, each rank's progress, pids the log printed."""

    phase: str | None
    board: RankBoard
    now: float


def read_log(path: Path | None, ruleset: RuleSet | None = None) -> LogFacts:
    """The last LOG_TAIL_BYTES of ``path``, record by record: the last phase, and per rank its last phase and line time.

    A line's time is its own timestamp where it has one (SGLang's, local time), else the file's
    last modification.
    """
    board = RankBoard()
    if path is None:
        return LogFacts(None, board, time.time())
    rs = ruleset or RuleSet()
    try:
        data = boundary.read_bytes(path, what="the log", max_bytes=LOG_TAIL_BYTES, last=True)
        mtime = Path(path).stat().st_mtime
    except (OSError, UserError):  # a FIFO or a device is never opened: no facts from it
        return LogFacts(None, board, time.time())
    phase: str | None = None
    for raw in data.decode("utf-8", errors="replace").splitlines():
        for plain in split_records(strip_ansi(raw.split("\r")[-1])):  # two ranks' records on one line: both
            m = rs.match(plain)
            line_phase = m.rule.phase if m is not None and m.rule.phase else None
            phase = line_phase or phase
            board.feed(plain, _line_time(plain, mtime), line_phase, m.rule.ends if m is not None else None)
    return LogFacts(phase, board, time.time())


_STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)")


def _line_time(plain: str, default: float) -> float:
    m = _STAMP.match(plain)
    if m is None:
        return default
    try:
        return time.mktime(time.strptime(f"{m.group(1)} {m.group(2)}", "%Y-%m-%d %H:%M:%S"))
    except (ValueError, OverflowError):
        return default


class StacksReport(Struct, frozen=True):
    """Every process's stacks, the groups, what could not be read, and the log's view."""

    taken_at: float
    seconds: float
    native: bool
    dumps: tuple[ProcDump, ...]
    groups: tuple[Group, ...]
    log_phase: str | None
    log_path: str | None
    ranks_text: str | None
    gpus: str | None = None
    """What the GPUs' utilization adds (stacks.gpus), when the caller sampled them."""

    @property
    def unread(self) -> tuple[ProcDump, ...]:
        return tuple(d for d in self.dumps if d.status in ("denied", "timeout", "error"))

    @property
    def skipped(self) -> tuple[ProcDump, ...]:
        return tuple(d for d in self.dumps if d.status in ("not-python", "gone"))

    def summary(self) -> list[str]:
        """The collapsed view: one line a group (its hint under it), then what could not be read."""
        out = [group_line(g) for g in self.groups]
        if self.gpus:
            out.append(self.gpus)
        out += [f"  try: {h}" for h in self.hints()]
        for d in self.unread:
            out.append(f"{d.label()} (pid {d.pid}) not read: {d.detail}")
        return out

    def hints(self) -> list[str]:
        """The catalogue's hang hints of every group's phase, each once, in group order."""
        out: list[str] = []
        for g in self.groups:
            out += [h.text for h in g.hints if h.text not in out]
        return out

    def lines(self) -> list[str]:
        """The whole text: summary, then each group's call path."""
        n_ok = sum(1 for d in self.dumps if d.status == "ok")
        head = (f"stacks of {n_ok} Python process(es) in {self.seconds:.2f} s"
                + (f" ({len(self.skipped)} other process(es) skipped: not Python or gone)" if self.skipped else "")
                + (" [native]" if self.native else ""))
        out = [head]
        if self.log_phase:
            out.append(f"log phase: {self.log_phase}")
        if self.ranks_text:
            out.append(f"ranks: {self.ranks_text}")
        out += self.summary()
        for i, g in enumerate(self.groups, 1):
            pids = ", ".join(str(p.pid) for p in g.procs)
            out.append("")
            out.append(f"group {i}: {g.labels} (pid {pids})")
            out += [f"  {step}" for step in g.path]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "taken_at": self.taken_at, "seconds": round(self.seconds, 3), "native": self.native,
            "log": self.log_path, "log_phase": self.log_phase, "ranks": self.ranks_text, "gpus": self.gpus,
            "groups": [g.to_json() for g in self.groups], "processes": [d.to_json() for d in self.dumps],
        }


def take(procs: Sequence[ProcInfo], *, log: Path | None = None, native: bool = False,
         limit: float = DEFAULT_LIMIT, ruleset: RuleSet | None = None,
         utilization: Sequence[int | None] = ()) -> StacksReport:
    """Dump every process of ``procs`` in parallel and collapse; PtraceDenied when none could be read."""
    t0 = time.monotonic()
    facts = read_log(log, ruleset)
    dumps = dump_many([(p.pid, p.cmdline) for p in procs], native=native, limit=limit)
    pids = facts.board.pids()
    ranked = tuple(_with_rank(d, pids) for d in dumps)
    denied = [d for d in ranked if d.status == "denied"]
    if denied and not any(d.status == "ok" for d in ranked):
        raise PtraceDenied(f"cannot read the stacks: {access.explain(denied[0].pid)}")
    groups = tuple(collapse(ranked, facts.phase, ruleset))
    summary = facts.board.summary(facts.now)
    return StacksReport(time.time(), time.monotonic() - t0, native, ranked, groups, facts.phase,
                        str(log) if log is not None else None, summary.text if summary and summary.text else None,
                        gpu_evidence(utilization))


def _with_rank(d: ProcDump, log_pids: dict[int, str]) -> ProcDump:
    return replace(d, rank=rank_of(d.pid, d.cmdline, log_pids))


def save(report: StacksReport, log: Path, folder: Path | None = None) -> Path:
    """Write the dump next to ``log`` (or in ``folder``) as ``<log name>.stacks-<UTC time>.json`` (and ``.txt``),
    atomically."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(report.taken_at))
    base = (folder if folder is not None else log.parent) / f"{log.name}.stacks-{stamp}"
    text = "\n".join(report.lines()) + "\n"
    try:
        fsatomic.write_atomic(base.with_name(base.name + ".txt"), text.encode("utf-8"), mode=0o600)
        path = base.with_name(base.name + ".json")
        fsatomic.write_atomic(path, (json.dumps(report.to_json(), indent=1) + "\n").encode("utf-8"), mode=0o600)
    except OSError as exc:
        where = folder if folder is not None else log.parent
        raise UserError(f"cannot save the stacks in {where} ({exc.strerror or exc}); "
                        "check that directory is writable") from exc
    return path
