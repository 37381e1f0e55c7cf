"""Post-mortem of a finished log in one streaming pass: phases with times, merged errors, warnings, verdict."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import threading
import time
from itertools import accumulate, repeat
from pathlib import Path
from typing import Any

from msgspec import Struct

from symmtui import boundary, clitext
from symmtui.errors import UserError
from symmtui.judge import litscan
from symmtui.judge.board import Board, Said, board_of
from symmtui.judge.diagnose import event_json
from symmtui.judge.events import TRACEBACK, Event, EventBuilder, split_prefix
from symmtui.judge.readiness import PhaseSpan, Readiness, ReadinessConfig, Snapshot, State
from symmtui.judge.rules import Kind, Rule, RuleSet
from symmtui.judge.verdict import NodeView, findings, ordered_events
from symmtui.logs.decode import LogLine, clean_raw, make_line

CHUNK = 256 << 10  # phase one reads this much at a time: several passes over it stay in L2 cache
SAMPLE = 1 << 20
MAX_LINE = 1 << 20  # longer lines are judged by their first MiB
PARALLEL_MIN = 48 << 20  # files this big are prefiltered by several processes (a fork costs a few ms)
PER_WORKER = 24 << 20  # at least this much of the file per process
RUN_HEAD = 4  # serving lines kept at the start of each run (see _ServingRuns)
SAMPLE_PIECES = 8  # the prefilter is tuned on this many pieces spread over the file (its bulk, not its start)


class ScanReport(Struct, frozen=True):
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
    snapshot: Snapshot | None = None
    """The readiness machine's last snapshot (what :func:`board` judges)."""

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


def _decode(no: int, raw: bytes | bytearray, offset: int = 0) -> LogLine:
    """The follower's decoding of one finished line (NULs, CR overwrites, cap, ANSI-free ``plain``)."""
    visible, truncated = clean_raw(bytes(raw), MAX_LINE)
    return make_line(no, offset, visible, False, truncated)


MAX_DECODED = 4096  # lines whose decoding phase two remembers (a flood repeats its lines)


class _Scan:
    def __init__(self, ruleset: RuleSet) -> None:
        # The live engine's builder: of a run of serving lines (nothing else judged between but repeats of lines
        # judged before) only the first is judged; a repeat is counted against its first occurrence.
        self.builder = EventBuilder(ruleset, thin_serving=True)
        self.readiness = Readiness(ReadinessConfig(timeout=None, stall=None), 0.0)
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self.t = 0.0
        self.decoded: dict[bytes, tuple[str, str]] = {}

    def line(self, no: int, raw: bytes, offset: int = 0) -> None:
        got = self.decoded.get(raw)
        if got is None:
            ln = _decode(no, raw, offset)
            got = (ln.text, ln.plain)
            if len(self.decoded) >= MAX_DECODED:
                self.decoded.clear()
            self.decoded[raw] = got
        events = self.builder.feed_deferred(no, got[1], got[0], offset)
        if events:
            for ev in events:
                self.event(ev)

    def event(self, ev: Event) -> None:
        if ev.ts is not None:  # the log's clock never goes back (a stamp earlier than the latest is the latest)
            if self.first_ts is None:
                self.first_ts = ev.ts
            self.last_ts = ev.ts if self.last_ts is None else max(self.last_ts, ev.ts)
            self.t = max(self.t, self.last_ts - self.first_ts)
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
                    chunk_size: int = CHUNK, *, fast: bool = True) -> tuple[list[tuple[int, int]], int]:
    """Phase one (in a worker process for big files): the lines of ``[start, end)`` some rule may
    match, as (file offset, line index in the range), and the number of lines in the range.

    The range is read into one buffer, reused for every chunk (``readinto``; the unfinished last line
    of a chunk is moved to its front). One multi-literal search per chunk finds the lines of the
    non-serving rules (``litscan``); the serving lines between two of them are thinned by
    ``_ServingRuns`` with a few ``find`` calls, so a decode-heavy log costs no Python per decode line.
    ``fast=False``: the pure-Python finder.
    """
    thin = _ServingRuns.make(tuple(r for r in rules if "serving" in r.roles), rules, sample, fast)
    finder = litscan.finder(RuleSet(r for r in rules if thin is None or "serving" not in r.roles), sample, fast=fast,
                            marked=thin.state if thin is not None else frozenset())
    out: list[tuple[int, int]] = []
    lines = 0
    buf = bytearray(max(chunk_size, 1) + MAX_LINE + 2)  # a carried partial line, a chunk, an added newline
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        fh.seek(start)
        pos = start  # file offset of buf[0]
        have = 0  # bytes in buf: a carried partial line, then what was read
        skipping = False  # inside an over-long line: drop bytes up to its newline
        while pos + have < end:
            if have > MAX_LINE:  # the carried line is longer than the cap: judge its head, skip the rest
                head = bytes(view[:MAX_LINE]) + b"\n"
                if finder.candidate_starts(head, MAX_LINE + 1) or (thin is not None and thin.holds(head)):
                    if thin is not None:
                        thin.other(out)
                    out.append((pos, lines))
                lines += 1
                pos += have
                have = 0
                skipping = True
                continue
            got = fh.readinto(view[have : have + min(chunk_size, end - pos - have)])
            if not got:
                break
            if skipping:  # (have is 0)
                nl = buf.find(b"\n", 0, got)
                if nl < 0:
                    pos += got
                    continue
                skipping = False
                pos += nl + 1
                got -= nl + 1
                view[:got] = view[nl + 1 : nl + 1 + got]
            have += got
            cut = buf.rfind(b"\n", 0, have) + 1
            if pos + have >= end and cut < have:
                buf[have] = 10  # the file's unterminated last line
                have += 1
                cut = have
            if cut == 0:
                continue
            total = buf.count(b"\n", 0, cut)
            if thin is not None:
                starts, state = finder.marked_starts(buf, cut)
                thin.chunk(out, buf, cut, pos, lines, starts, total, state)
            else:
                starts = finder.candidate_starts(buf, cut)
                if starts:
                    out.extend((pos + s, lines + i)
                               for s, i in zip(starts, _line_indexes(buf, starts, cut, total), strict=True))
            lines += total
            pos += cut
            have -= cut
            if have:
                view[:have] = view[cut : cut + have]
    if thin is not None:
        thin.other(out)
        out.sort()  # a run's last serving line is added when the run ends, after the repeats inside it
    return out, lines


def _line_indexes(buf: bytes | bytearray, offs: list[int], cut: int, total: int) -> list[int]:
    """The line index (newlines before it) of each of the sorted offsets ``offs`` in ``buf[:cut]``: one count
    per gap, run by ``map`` (a flood's tens of thousands of candidates cost no Python loop)."""
    del cut, total  # (the newlines after the last offset are not needed)
    return list(accumulate(map(buf.count, repeat(b"\n"), [0, *offs], offs)))


class _ServingRuns:
    """Thins the lines only a "serving" rule may match (every decode line of a serving log) to the
    first RUN_HEAD and the last real one of each run of such lines with no other candidate between.

    Between two other candidates the event builder's state (dialect, started, the run) changes at most
    twice: an SGLang warm-up's own prefill and answer (judge.dialects), then READY; so the first RUN_HEAD
    serving lines there decide what every later one would, and a repeated READY changes no phase, error
    or warning; the last
    one is kept for its timestamp (the log's span, the readiness clock). Each worker thins its own
    range: a run cut by a range border keeps a few more lines, to the same outcome. The lines are
    found with ``find``/``rfind`` from the ends of each gap between other candidates, so the cost
    does not grow with the number of serving lines.
    """

    def __init__(self, rules: RuleSet, state: frozenset[str] = frozenset()) -> None:
        self.rules = rules
        self.state = state
        """The literals of the lines that may change what a serving line means (phases, ready lines, a launch's
        start, a traceback, a death): such a line is never a mere repeat, whatever it repeats."""
        self.lits = tuple(x.encode("utf-8") for x in rules.literals)
        self.seen: dict[bytes, bool] = {}
        self.repeats: set[bytes] = set()  # the candidate lines seen (a repeat of one ends no run)
        self.first = 0  # how many of the current run's first real serving lines are in the output
        self.last: tuple[int, int] | None = None  # the run's latest real serving line, emitted when it ends

    @classmethod
    def make(cls, rules: tuple[Rule, ...], every: tuple[Rule, ...] = (), sample: bytes = b"",
             fast: bool = True) -> _ServingRuns | None:
        """None when there is nothing to thin, or a serving rule has no literal to find its lines by."""
        if not rules:
            return None
        rs = RuleSet(rules)
        if rs.unanchored or not rs.literals:
            return None
        state = RuleSet(r for r in every if "serving" not in r.roles and (
            r.kind not in (Kind.CRASH, Kind.WARNING) or r.id == TRACEBACK or r.follow is not None
            or r.roles & {"announce", "new_run", "fatal"}))
        return cls(rs, frozenset(state.literals))

    def holds(self, buf: bytes) -> bool:
        """Whether ``buf`` holds a serving literal."""
        return any(lit in buf for lit in self.lits)

    def _real(self, raw: bytes | bytearray) -> bool:
        key = bytes(raw[:MAX_LINE])
        got = self.seen.get(key)  # a flood repeats its serving lines: judged once each
        if got is None:
            got = self.rules.match(_decode(1, key).plain) is not None
            if len(self.seen) >= MAX_DECODED:
                self.seen.clear()
            self.seen[key] = got
        return got

    def _first_real(self, buf: bytes | bytearray, a: int, b: int) -> tuple[int, int] | None:
        """(start, end + 1) of the first line in ``buf[a:b]`` (whole lines) a serving rule matches."""
        while a < b:
            at = -1
            for lit in self.lits:  # the nearest hit of any literal; each search stops at the best so far
                i = buf.find(lit, a, b if at < 0 else min(b, at + len(lit) - 1))
                if i >= 0:
                    at = i
            if at < 0:
                return None
            ls = buf.rfind(b"\n", a, at) + 1 or a
            le = buf.find(b"\n", at, b)
            if self._real(buf[ls:le]):
                return ls, le + 1
            a = le + 1
        return None

    def _last_real(self, buf: bytes | bytearray, a: int, b: int) -> int | None:
        """The start of the last line in ``buf[a:b]`` (whole lines) a serving rule matches."""
        while a < b:
            at = -1
            for lit in self.lits:
                i = buf.rfind(lit, a if at < 0 else max(a, at + 1), b)
                if i >= 0:
                    at = i
            if at < 0:
                return None
            ls = buf.rfind(b"\n", a, at) + 1 or a
            if self._real(buf[ls : buf.find(b"\n", at, b)]):
                return ls
            b = ls
        return None

    def chunk(self, out: list[tuple[int, int]], buf: bytes | bytearray, cut: int, pos: int, base: int, starts: list[int],
              total: int, state: set[int]) -> None:
        """Add to ``out`` the candidates ``starts`` of ``buf[:cut]`` (file offset ``pos``, line index
        ``base``, ``total`` lines) and the serving lines kept around them. A candidate that repeats an earlier
        candidate byte for byte (a flood's warning, eight ranks' same line) is kept but ends no run: its judgement is
        its first occurrence's (the event builder counts it against it), so it changes nothing a serving line means."""
        plan: list[tuple[int, int]] = []  # (offset; 0 first of a run, 1 last so far, 2 another candidate, 3 a repeat)
        strong: list[int] = []
        seen = self.repeats
        find, add, view = buf.find, plan.append, memoryview(buf)
        for s in starts:
            line = view[s : find(b"\n", s, cut)].tobytes()
            if line in seen and s not in state:
                add((s, 3))
                continue
            if len(seen) >= MAX_DECODED:
                seen.clear()
            seen.add(line)
            strong.append(s)
        first = self.first
        a = 0
        for s in (*strong, cut):
            if a < s:  # the gap [a, s) holds serving lines and plain ones only
                lo = a
                while first < RUN_HEAD:
                    f = self._first_real(buf, lo, s)
                    if f is None:
                        break
                    plan.append((f[0], 0))
                    first += 1
                    lo = f[1]
                if first:
                    last = self._last_real(buf, lo, s)
                    if last is not None:
                        plan.append((last, 1))
            if s == cut:
                break
            plan.append((s, 2))
            first = 0
            a = buf.find(b"\n", s, cut) + 1
        if not plan:
            return
        plan.sort()
        idxs = _line_indexes(buf, [o for o, _ in plan], cut, total)
        for (off, kind), idx in zip(plan, idxs, strict=True):
            at = (pos + off, base + idx)
            if kind == 3:  # first: a flood's repeats are most of them
                out.append(at)
            elif kind == 0:
                out.append(at)
                self.first += 1
            elif kind == 1:
                self.last = at
            else:
                self.other(out)
                out.append(at)

    def other(self, out: list[tuple[int, int]]) -> None:
        """Any other candidate (or the range's end) ends the run of serving lines."""
        if self.last is not None:
            out.append(self.last)
        self.first = 0
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
              workers: int | None = None, fast: bool = True) -> ScanReport:
    """Read ``path`` once and judge every line; memory does not grow with its size.

    Phase one finds the few lines any rule could match (literal prefilter, see ``litscan``; ``fast=False``
    uses the pure-Python one), split over ``workers`` forked processes for big files (one by one in a
    process that runs other threads); phase two reads just those lines (and every line of a traceback)
    in order and runs the rules, the traceback grouper and the readiness machine.
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
        results = _phase_one(str(p), ranges, rs.rules, _sample(fd, size), chunk_size, fast)
        scan = _Scan(rs)
        first_nl = head.find(b"\n")
        first_line = head[: first_nl if first_nl >= 0 else len(head)]
        if first_line:
            scan.first_ts = split_prefix(_decode(1, first_line[:4096]).plain).ts
        total = 0
        consumed = 0  # file offset up to which lines were fed
        window = _Window(fd)
        builder = scan.builder
        decoded, remembered = scan.decoded, builder.remembered
        for cands, lines in results:
            for off, idx in cands:
                if off < consumed:
                    continue
                wbuf, at = window.buf, off - window.start  # _feed_from, its first line inline: most are one line
                nl = wbuf.find(b"\n", at, at + MAX_LINE + 1) if 0 <= at < len(wbuf) else -1
                if nl >= 0:
                    raw, nxt = wbuf[at:nl], window.start + nl + 1
                else:
                    raw, nxt = window.line(off)
                    if nxt == off:
                        consumed = off
                        continue
                got = decoded.get(raw)
                if got is not None and remembered(got[1], total + idx + 1, off):
                    consumed = nxt  # a repeat of a line judged before: counted (a flood costs this much a line)
                    continue
                scan.line(total + idx + 1, raw, off)
                consumed = _feed_from(window, nxt, total + idx + 2, scan) if builder.in_block else nxt
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
        snapshot=snap,
    )


def _phase_one(path: str, ranges: list[tuple[int, int]], rules: tuple[Rule, ...], sample: bytes,
               chunk_size: int, fast: bool = True) -> list[tuple[list[tuple[int, int]], int]]:
    # A plain fork starts a worker in ~1 ms and shares the parent's compiled rules; it is safe only
    # while this process runs one thread (the CLI): a threaded caller scans the ranges one by one.
    if len(ranges) > 1 and hasattr(os, "fork") and threading.active_count() == 1:
        return _forked(path, ranges, rules, sample, chunk_size, fast)
    return [find_candidates(path, a, b, rules, sample, chunk_size, fast=fast) for a, b in ranges]


def _forked(path: str, ranges: list[tuple[int, int]], rules: tuple[Rule, ...], sample: bytes, chunk_size: int,
            fast: bool) -> list[tuple[list[tuple[int, int]], int]]:
    """Ranges after the first in forked children (each answers on a pipe), the first one here."""
    import pickle  # here, before the forks: a small log is scanned by one process, which needs none

    kids: list[tuple[int, int]] = []
    try:
        for a, b in ranges[1:]:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: never returns into the caller's code
                code = 0
                try:
                    os.close(r)
                    reply = pickle.dumps((True, find_candidates(path, a, b, rules, sample, chunk_size, fast=fast)))
                except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
                    reply = pickle.dumps((False, f"{type(exc).__name__}: {exc}"))
                    code = 1
                try:
                    with os.fdopen(w, "wb") as fh:
                        fh.write(reply)
                finally:
                    os._exit(code)
            os.close(w)
            kids.append((pid, r))
        results = [find_candidates(path, ranges[0][0], ranges[0][1], rules, sample, chunk_size, fast=fast)]
        while kids:
            pid, r = kids[0]
            with os.fdopen(r, "rb") as fh:
                reply = fh.read()
            kids.pop(0)
            os.waitpid(pid, 0)
            if not reply:
                raise UserError(f"cannot scan {path}: a worker process died without an answer")
            ok, value = pickle.loads(reply)
            if not ok:
                raise RuntimeError(f"scan worker failed: {value}")
            results.append(value)
        return results
    finally:
        for pid, r in kids:  # only after an error here: end the others
            with contextlib.suppress(OSError):
                os.close(r)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


class _Window:
    """Phase two's reads: the file in blocks of CHUNK bytes around the lines it asks for (a dense run of
    candidates, a flood's every line, costs one read a block, not one a line)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = b""
        self.start = 0  # file offset of buf[0]

    def line(self, off: int) -> tuple[bytes, int]:
        """(the line at ``off`` without its newline, its head only when longer than MAX_LINE; the next line's
        offset), (b"", off) at the end of the file."""
        buf, at = self.buf, off - self.start
        nl = buf.find(b"\n", at) if 0 <= at < len(buf) else -1
        if nl < 0:
            buf = self.buf = os.pread(self.fd, max(CHUNK, MAX_LINE + 1), off)
            self.start, at = off, 0
            if not buf:
                return b"", off
            nl = buf.find(b"\n")
            if nl < 0:  # an over-long line (or the unterminated last one): its head; skip to its end
                head = buf[:MAX_LINE]
                nxt = off + len(buf)
                while buf:  # (an unterminated last line ends the file: the read comes back empty)
                    buf = os.pread(self.fd, CHUNK, nxt)
                    cut = buf.find(b"\n")
                    if cut >= 0:
                        nxt += cut + 1
                        break
                    nxt += len(buf)
                self.buf = b""
                return head, nxt
        return buf[at : min(nl, at + MAX_LINE)], self.start + nl + 1


def _feed_from(window: _Window, off: int, no: int, scan: _Scan) -> int:
    """Feed the line at ``off`` (number ``no``), and the following ones while a traceback (a death's report, a
    request's content) is open; the offset after the last line fed."""
    while True:
        raw, nxt = window.line(off)
        if nxt == off:
            return off
        scan.line(no, raw, off)
        no += 1
        off = nxt
        if not scan.builder.in_block:
            return off


def _last_line(fd: int, size: int) -> bytes:
    tail = os.pread(fd, 4096, max(0, size - 4096)).rstrip(b"\n")
    return tail[tail.rfind(b"\n") + 1 :]


# ---------------------------------------------------------------------- presentation
def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


fmt_duration = clitext.duration  # ``7.0 s``, ``7m10s``, ``1h02m`` (the READY words say durations the same way)


def _event_json(ev: Event) -> dict[str, Any]:
    return event_json(ev, time=_iso(ev.ts))


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


def board(rep: ScanReport) -> Board:
    """The Board of a scanned log (the shipped catalogue's diagnoses), as every other reader gets one."""
    snap = rep.snapshot
    if snap is None:
        raise ValueError("a ScanReport without its snapshot has no Board")
    return board_of([NodeView("log", snap, None, findings(ordered_events(snap)))])


def _said(rep: ScanReport, shown: Board) -> tuple[list[Said], list[Said]]:
    """The Board's words for each error (the log's order, the cause in its place) and each warning."""
    view = shown.about
    others = iter(view.errors)
    cause = view.cause
    errors = [cause if cause is not None and e.key == cause.event.key else next(others) for e in rep.errors]
    return errors, list(view.warnings)


def report_text(rep: ScanReport) -> list[str]:
    """The human report, one string per line: the scan's figures, and its Board's words for each error, warning
    and the verdict (``judge.board``: worded there once, for every reader)."""
    shown = board(rep)
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
    errors, warnings = _said(rep, shown)
    for title, events, words in (("errors", rep.errors, errors), ("warnings", rep.warnings, warnings)):
        if events:
            out.append(f"{title}:")
        for e, said in zip(events, words, strict=True):
            out.append(f"  line {e.line_no:<7} {e.summary}  {_ranks_text(e)}")
            if not said.diagnosed:
                continue
            if title == "errors":
                out += [clitext.detail("cause", said.cause or "", _DETAIL_INDENT),
                        clitext.detail("next", said.command or "", _DETAIL_INDENT)]
            else:
                out.append(f"               {said.cause}; {said.command}")
    if rep.verdict == "ready":
        # on the scan's clock: from the file's first line, whose stamp only the scan read (the Board's span
        # starts at the first stamped event)
        ready = rep.phases[-1] if rep.phases else None
        took = ""
        if ready is not None and ready.log_start is not None and rep.first_ts is not None:
            took = f" {fmt_duration(max(0.0, ready.log_start - rep.first_ts))} after the first line"
        out.append(f"verdict: READY{took}")
    elif rep.verdict == "crashed":
        out.append(f"verdict: CRASHED: {shown.cause.headline if shown.cause is not None else 'crashed'}")
    else:
        prog = f" ({rep.progress[0]}/{rep.progress[1]})" if rep.progress else ""
        where = f"ends in phase {rep.last_phase!r}{prog}" if rep.last_phase else "shows no bring-up phase"
        out.append(f"verdict: NONE: the log {where} without ready or crash "
                   "(still running, killed without a trace, or cut short)")
    return out
