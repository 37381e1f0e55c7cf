"""Post-mortem of a finished log in one streaming pass: phases with times, merged errors, warnings, verdict."""

from __future__ import annotations

import multiprocessing
import os
import stat
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from symmtui import boundary, clitext
from symmtui.core.decode import LogLine, clean_raw, make_line, newlines
from symmtui.core.diagnose import diagnose
from symmtui.core.events import Event, EventBuilder, split_prefix
from symmtui.core.readiness import PhaseSpan, Readiness, ReadinessConfig, State
from symmtui.core.rules import ByteScanner, Rule, RuleSet
from symmtui.errors import UserError

CHUNK = 256 << 10  # phase one reads this much at a time: several passes over it stay in L2 cache
SAMPLE = 1 << 20
MAX_LINE = 1 << 20  # longer lines are judged by their first MiB
PARALLEL_MIN = 48 << 20  # files this big are prefiltered by several processes (a fork costs a few ms)
PER_WORKER = 24 << 20  # at least this much of the file per process
SAMPLE_PIECES = 8  # the prefilter is tuned on this many pieces spread over the file (its bulk, not its start)


@dataclass(frozen=True)
class ScanReport:
    """What a finished log says. ``verdict`` is ready, crashed or none (the log ends without one)."""

    path: str
    size: int
    lines: int
    verdict: str
    cause: Event | None
    phases: tuple[PhaseSpan, ...]
    errors: tuple[Event, ...]
    warnings: tuple[Event, ...]
    first_ts: float | None
    last_ts: float | None
    last_phase: str | None
    progress: tuple[int, int] | None
    seconds: float
    runs: int = 1

    @property
    def duration(self) -> float | None:
        """From the first to the last timestamp in the log."""
        if self.first_ts is None or self.last_ts is None:
            return None
        return max(0.0, self.last_ts - self.first_ts)

    @property
    def exit_code(self) -> int:
        """0 ready, 1 crashed, 3 no verdict."""
        return {"ready": 0, "crashed": 1}.get(self.verdict, 3)


def _decode(no: int, raw: bytes) -> LogLine:
    """The follower's decoding of one finished line (NULs, CR overwrites, cap, ANSI-free ``plain``)."""
    visible, truncated = clean_raw(raw, MAX_LINE)
    return make_line(no, 0, visible, False, truncated)


class _Scan:
    def __init__(self, ruleset: RuleSet) -> None:
        self.builder = EventBuilder(ruleset)
        self.readiness = Readiness(ReadinessConfig(timeout=None, stall=None), 0.0)
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self.t = 0.0

    def line(self, no: int, raw: bytes) -> None:
        for ev in self.builder.feed(_decode(no, raw)):
            self.event(ev)

    def event(self, ev: Event) -> None:
        if ev.ts is not None:
            if self.first_ts is None:
                self.first_ts = ev.ts
            self.last_ts = ev.ts if self.last_ts is None else max(self.last_ts, ev.ts)
            self.t = max(self.t, ev.ts - self.first_ts)
        self.readiness.feed(ev, self.t)


def _split_ranges(fd: int, size: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` byte ranges covering the file, each starting at a line start."""
    bounds = [0]
    for k in range(1, parts):
        guess = size * k // parts
        head = os.pread(fd, 1 << 16, guess)
        nl = head.find(b"\n")
        cut = guess + nl + 1 if nl >= 0 else size
        if bounds[-1] < cut < size:
            bounds.append(cut)
    bounds.append(size)
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


def find_candidates(path: str, start: int, end: int, rules: tuple[Rule, ...], sample: bytes,
                    chunk_size: int = CHUNK) -> tuple[list[tuple[int, int]], int]:
    """Phase one (in a worker process for big files): the lines of ``[start, end)`` some rule may
    match, as (file offset, line index in the range), and the number of lines in the range."""
    serving = tuple(r for r in rules if "serving" in r.roles)
    scanner = ByteScanner(RuleSet(r for r in rules if "serving" not in r.roles) if serving else RuleSet(rules), sample)
    collapse = _ServingRuns(ByteScanner(RuleSet(serving), sample)) if serving else None
    out: list[tuple[int, int]] = []
    lines = 0
    with open(path, "rb", buffering=0) as fh:
        fh.seek(start)
        pos = start  # file offset of buf[0]
        carry = b""
        skipping = False
        while pos + len(carry) < end:
            want = min(chunk_size, end - pos - len(carry))
            data = fh.read(want)
            if not data:
                break
            if skipping:
                nl = data.find(b"\n")
                if nl < 0:
                    pos += len(data)
                    continue
                skipping = False
                pos += nl + 1
                data = data[nl + 1 :]
            buf = carry + data if carry else data
            last = pos + len(buf) >= end
            cut = buf.rfind(b"\n") + 1
            if last and cut < len(buf):
                buf += b"\n"  # the file's unterminated last line
                cut = len(buf)
            if cut == 0:
                if len(buf) > MAX_LINE:
                    head = buf[:MAX_LINE] + b"\n"
                    if scanner.candidate_starts(head, MAX_LINE + 1) or (
                            collapse is not None and collapse.scanner.candidate_starts(head, MAX_LINE + 1)):
                        if collapse is not None:
                            collapse.other(out)
                        out.append((pos, lines))
                    lines += 1
                    pos += len(buf)
                    carry = b""
                    skipping = True
                else:
                    carry = buf
                continue
            starts = scanner.candidate_starts(buf, cut)
            served = collapse.scanner.candidate_starts(buf, cut) if collapse is not None else []
            if served:
                assert collapse is not None
                plain = set(starts)
                count = buf.count
                prev = 0
                for s in sorted(plain.union(served)):
                    lines += count(b"\n", prev, s)
                    prev = s
                    if s in plain:
                        collapse.other(out)
                        out.append((pos + s, lines))
                    else:
                        collapse.serving(out, pos + s, lines, buf, s)
                lines += count(b"\n", prev, cut)
            elif starts:
                if collapse is not None:
                    collapse.other(out)
                count = buf.count
                prev = 0
                for s in starts:
                    lines += count(b"\n", prev, s)
                    prev = s
                    out.append((pos + s, lines))
                lines += count(b"\n", prev, cut)
            else:  # most chunks: no candidate, only the newlines to count
                lines += newlines(buf if cut == len(buf) else buf[:cut])
            pos += cut
            carry = buf[cut:]
    if collapse is not None:
        collapse.other(out)
    return out, lines


class _ServingRuns:
    """Thins the lines only a "serving" rule may match (every decode line of a serving log) to the
    first and the last real one of each run of such candidates with no other candidate between.

    Between two other candidates the event builder's state (dialect, started, the run) does not
    change, so the first serving line there decides what every later one would (READY, or dropped
    as SGLang's warm-up request), and a repeated READY changes no phase, error or warning; the last
    one is kept for its timestamp (the log's span, the readiness clock). Chunks thin their own runs:
    a run cut by a chunk border keeps a few more lines, to the same outcome.
    """

    def __init__(self, scanner: ByteScanner) -> None:
        self.scanner = scanner
        self.rules = RuleSet(scanner.ruleset.rules)
        self.first = False  # the current run has its first real serving line in ``out``
        self.last: tuple[int, int, bytes] | None = None  # the run's latest candidate, checked when the run ends

    def _real(self, raw: bytes) -> bool:
        return self.rules.match(_decode(1, raw[:MAX_LINE]).plain) is not None

    def serving(self, out: list[tuple[int, int]], off: int, idx: int, buf: bytes, s: int) -> None:
        """A candidate only serving rules may match, at ``buf[s:]`` (file offset ``off``, line ``idx``)."""
        nl = buf.find(b"\n", s)
        raw = buf[s : nl if nl >= 0 else len(buf)]
        if self.first:
            self.last = (off, idx, raw)
        elif self._real(raw):  # a literal without its line makes no event either way
            self.first = True
            out.append((off, idx))

    def other(self, out: list[tuple[int, int]]) -> None:
        """Any other candidate ends the run of serving lines."""
        if self.last is not None and self._real(self.last[2]):
            out.append(self.last[:2])
        self.first = False
        self.last = None


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _workers(size: int) -> int:
    """One process for small files; for big ones, every idle core (at least 2 where there are 2).

    A busy host (load average near the core count) still gets two: the scan is short, and the OS
    shares the cores; an idle one gets all of them, one per PER_WORKER of file at most.
    """
    if size < PARALLEL_MIN:
        return 1
    cpus = _cpus()
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    idle = max(min(2, cpus), round(cpus - load))
    return max(1, min(cpus, idle, size // PER_WORKER))


def _sample(fd: int, size: int) -> bytes:
    """Pieces spread over the file: the prefilter picks its anchors on what most of the file looks like."""
    if size <= SAMPLE:
        return os.pread(fd, SAMPLE, 0)
    piece = SAMPLE // SAMPLE_PIECES
    return b"".join(os.pread(fd, piece, (size - piece) * k // (SAMPLE_PIECES - 1)) for k in range(SAMPLE_PIECES))


_DETAIL_INDENT = " " * 15  # under the event's text, after "  line NNNNNNN "
_SCAN_HINT = "give the log file (scan reads a finished file: save a pipe's output to a file first)"


def _nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY)


def scan_file(path: str | os.PathLike[str], ruleset: RuleSet | None = None, *, chunk_size: int = CHUNK,
              workers: int | None = None) -> ScanReport:
    """Read ``path`` once and judge every line; memory does not grow with its size.

    Phase one finds the few lines any rule could match (literal prefilter, see ByteScanner), split
    over ``workers`` processes for big files; phase two reads just those lines (and every line of
    a traceback) in order and runs the rules, the traceback grouper and the readiness machine.
    """
    t0 = time.perf_counter()
    p = Path(path)
    rs = ruleset if ruleset is not None else RuleSet()
    # Stat before open: a FIFO with no writer would block open(), a device (/dev/zero) never ends.
    boundary.regular_file(p, what="cannot scan the log", hint=_SCAN_HINT)
    try:
        fh = open(p, "rb", opener=_nonblocking)
    except FileNotFoundError:
        raise UserError(f"cannot scan {p}: no such file") from None
    except OSError as exc:
        raise UserError(f"cannot scan {p}: {exc.strerror or exc}") from None
    with fh:
        fd = fh.fileno()
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped after the stat above
            raise UserError(f"cannot scan {p}: not a regular file; {_SCAN_HINT}")
        size = st.st_size
        head = os.pread(fd, 4096, 0)
        n = workers if workers is not None else _workers(size)
        ranges = _split_ranges(fd, size, max(1, n))
        results = _phase_one(str(p), ranges, rs.rules, _sample(fd, size), chunk_size)
        scan = _Scan(rs)
        first_nl = head.find(b"\n")
        first_line = head[: first_nl if first_nl >= 0 else len(head)]
        if first_line:
            scan.first_ts = split_prefix(_decode(1, first_line[:4096]).plain).ts
        total = 0
        consumed = 0  # file offset up to which lines were fed
        for cands, lines in results:
            for off, idx in cands:
                if off < consumed:
                    continue
                consumed = _feed_from(fh, off, total + idx + 1, scan)
            total += lines
        last_line = _last_line(fd, size)
    for ev in scan.builder.flush():
        scan.event(ev)
    if last_line:
        ts = split_prefix(_decode(0, last_line).plain).ts
        if ts is not None:
            scan.last_ts = ts if scan.last_ts is None else max(scan.last_ts, ts)
    snap = scan.readiness.snapshot(scan.t)
    verdict = {State.READY: "ready", State.CRASHED: "crashed"}.get(snap.state, "none")
    return ScanReport(
        path=str(p), size=size, lines=total, verdict=verdict, cause=snap.cause, phases=snap.phases,
        errors=snap.errors, warnings=snap.warnings, first_ts=scan.first_ts, last_ts=scan.last_ts,
        last_phase=snap.phase, progress=snap.progress_counts, seconds=time.perf_counter() - t0, runs=snap.run,
    )


def _phase_one(path: str, ranges: list[tuple[int, int]], rules: tuple[Rule, ...], sample: bytes,
               chunk_size: int) -> list[tuple[list[tuple[int, int]], int]]:
    if len(ranges) == 1:
        return [find_candidates(path, ranges[0][0], ranges[0][1], rules, sample, chunk_size)]
    methods = multiprocessing.get_all_start_methods()
    # fork starts a worker in a few ms (forkserver/spawn: 0.1-0.3 s, a import of symmtui each); it is
    # safe only while this process runs one thread (the CLI), so a threaded caller gets forkserver.
    if "fork" in methods and threading.active_count() == 1:
        method = "fork"
    else:
        method = "forkserver" if "forkserver" in methods else "spawn"
    ctx = multiprocessing.get_context(method)
    with ProcessPoolExecutor(max_workers=len(ranges) - 1, mp_context=ctx) as pool:
        futures = [pool.submit(find_candidates, path, a, b, rules, sample, chunk_size) for a, b in ranges[1:]]
        first = find_candidates(path, ranges[0][0], ranges[0][1], rules, sample, chunk_size)
        return [first, *(f.result() for f in futures)]


def _feed_from(fh: BinaryIO, off: int, no: int, scan: _Scan) -> int:
    """Feed the line at ``off`` (number ``no``), and the following ones while a traceback is open."""
    fh.seek(off)
    while True:
        raw = fh.readline(MAX_LINE)
        if not raw:
            return fh.tell()
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        else:
            rest = raw  # an over-long line: judge its head, skip the rest
            while rest and not rest.endswith(b"\n"):
                rest = fh.readline(MAX_LINE)
        scan.line(no, raw)
        no += 1
        if not scan.builder.in_block:
            return fh.tell()


def _last_line(fd: int, size: int) -> bytes:
    tail = os.pread(fd, 4096, max(0, size - 4096)).rstrip(b"\n")
    return tail[tail.rfind(b"\n") + 1 :]


# ---------------------------------------------------------------------- presentation
def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def fmt_duration(seconds: float | None) -> str:
    """``7.0 s``, ``7m10s``, ``1h02m``."""
    if seconds is None:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"


def _event_json(ev: Event) -> dict[str, Any]:
    d = diagnose(ev)
    return {
        "summary": ev.summary,
        "headline": ev.headline(),
        "rule": ev.rule_id,
        "line": ev.line_no,
        "time": _iso(ev.ts),
        "count": ev.count,
        "ranks": sorted(ev.ranks),
        "block": list(ev.block) if ev.block else [ev.text],
        "diagnosis": None if d is None else {
            "id": d.id,
            "cause": d.cause,
            "action": d.action,
            "intent": d.intent,
            "fix": d.fix.as_json() if d.fix is not None else None,
            "source": list(d.source),
        },
    }


def report_json(rep: ScanReport) -> dict[str, Any]:
    """The documented JSON shape of ``symmtui scan --json``."""
    return {
        "path": rep.path,
        "bytes": rep.size,
        "lines": rep.lines,
        "first_time": _iso(rep.first_ts),
        "last_time": _iso(rep.last_ts),
        "duration_s": rep.duration,
        "runs": rep.runs,
        "verdict": rep.verdict,
        "cause": None if rep.cause is None else _event_json(rep.cause),
        "phases": [
            {
                "name": s.name,
                "start_time": _iso(s.log_start),
                "end_time": _iso(s.log_end),
                "duration_s": s.duration() if s.log_start is not None else None,
            }
            for s in rep.phases
        ],
        "last_phase": rep.last_phase,
        "progress": list(rep.progress) if rep.progress else None,
        "errors": [_event_json(e) for e in rep.errors],
        "warnings": [_event_json(e) for e in rep.warnings],
        "scan_seconds": round(rep.seconds, 4),
    }


def _ranks_text(ev: Event) -> str:
    if not ev.ranks:
        return f"x{ev.count}"
    ranks = sorted(ev.ranks)
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        spread = f"ranks {ranks[0]}-{ranks[-1]}"
    else:
        spread = ("rank " if len(ranks) == 1 else "ranks ") + ",".join(map(str, ranks))
    return f"x{ev.count} ({spread})"


def report_text(rep: ScanReport) -> list[str]:
    """The human report, one string per line."""
    out: list[str] = []
    span = ""
    if rep.first_ts is not None and rep.last_ts is not None:
        span = f", {_iso(rep.first_ts)} to {_iso(rep.last_ts)} ({fmt_duration(rep.duration)})"
    out.append(f"{rep.path}: {rep.lines} lines, {rep.size / 1e6:.1f} MB{span}")
    if rep.runs > 1:
        out.append(f"the log holds {rep.runs} launches appended to each other; this report is about the last one")
    if rep.phases:
        out.append("phases:")
        for s in rep.phases:
            when = time.strftime("%H:%M:%S", time.gmtime(s.log_start)) if s.log_start is not None else "--:--:--"
            dur = fmt_duration(s.duration()) if s.log_start is not None and s.log_end is not None else ""
            out.append(f"  {when}  {s.name:<38} {dur}".rstrip())
    else:
        out.append("phases: none recognised")
    for title, events in (("errors", rep.errors), ("warnings", rep.warnings)):
        if events:
            out.append(f"{title}:")
        for e in events:
            out.append(f"  line {e.line_no:<7} {e.summary}  {_ranks_text(e)}")
            d = diagnose(e)
            if d is None:
                continue
            if title == "errors":
                out += [clitext.detail("cause", d.cause, _DETAIL_INDENT), clitext.detail("next", d.action, _DETAIL_INDENT)]
            else:
                out.append(f"               {d.cause}; {d.action}")
    if rep.verdict == "ready":
        ready = rep.phases[-1] if rep.phases else None
        took = ""
        if ready is not None and ready.log_start is not None and rep.first_ts is not None:
            took = f" {fmt_duration(ready.log_start - rep.first_ts)} after the first line"
        out.append(f"verdict: READY{took}")
    elif rep.verdict == "crashed":
        head = rep.cause.headline() if rep.cause is not None else "crashed"
        out.append(f"verdict: CRASHED: {head}")
    else:
        prog = f" ({rep.progress[0]}/{rep.progress[1]})" if rep.progress else ""
        where = f"ends in phase {rep.last_phase!r}{prog}" if rep.last_phase else "shows no bring-up phase"
        out.append(f"verdict: NONE: the log {where} without ready or crash "
                   "(still running, killed without a trace, or cut short)")
    return out
