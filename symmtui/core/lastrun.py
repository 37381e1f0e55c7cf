"""Find where the last launch in a long log starts, reading backwards from its end in blocks."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from symmtui.core.decode import DEFAULT_MAX_LINE_BYTES, clean_raw, make_line
from symmtui.core.events import EventBuilder
from symmtui.core.readiness import Readiness, ReadinessConfig
from symmtui.core.rules import RuleSet, required_literal
from symmtui.patterns import LinesPattern, compile_user

BLOCK = 1 << 20
"""One backward read."""
WINDOW = 64 << 20
"""How far back from the end a launch start is looked for (then: judge the last WINDOW bytes)."""
FALLBACK = 4 << 20
"""No launch start within WINDOW: judge this much of the end (a server up for long: its recent past)."""
SMALL = 8 << 20
"""Files up to this size are judged whole (reading them costs less than deciding where to start)."""
PAIR_LIMIT = 1 << 20
"""Two launch markers further apart than this belong to two launches (the first one got going)."""
MAX_LINE = DEFAULT_MAX_LINE_BYTES


@dataclass(frozen=True)
class LaunchStart:
    """Where to start judging a long log.

    ``offset``: a line start (0 = the whole file). ``found``: a launch start marker is at ``offset``
    (else the search gave up after ``window`` bytes and ``offset`` is simply where it stopped, or
    the file is small and is read whole). ``searched``: bytes read backwards to decide.
    """

    offset: int
    found: bool
    searched: int
    size: int
    window: int
    marker: str = ""

    @property
    def skipped(self) -> int:
        """Bytes before ``offset`` that are not judged."""
        return self.offset


class _Markers:
    """The launch-start rules of a rule set (the ones the readiness machine starts a new run on)."""

    def __init__(self, ruleset: RuleSet) -> None:
        self.ruleset = ruleset
        needles: set[bytes] = set()
        self.regexes: list[re.Pattern[bytes] | LinesPattern] = []
        for rule in ruleset.rules:
            if "new_run" not in rule.roles:
                continue
            keys = rule.literals or tuple(k for k in (required_literal(rule.pattern),) if k)
            if keys:
                needles.update(k.encode() for k in keys)
            elif rule.user:  # RE2 (linear time), over the bytes
                self.regexes.append(compile_user(rule.pattern, limit=None).lines())
            else:
                self.regexes.append(re.compile(rule.pattern.encode(), re.MULTILINE))
        self.needles = tuple(sorted(needles))

    def _candidates(self, buf: bytes) -> list[int]:
        starts: set[int] = set()
        for needle in self.needles:  # bytes.find: a fast substring search, GB/s
            i = buf.find(needle)
            while i >= 0:
                starts.add(buf.rfind(b"\n", 0, i) + 1)
                i = buf.find(needle, i + len(needle))
        for rx in self.regexes:
            for m in rx.finditer(buf):
                starts.add(buf.rfind(b"\n", 0, m.start()) + 1)
        return sorted(starts, reverse=True)

    def starts_in(self, buf: bytes, base: int) -> list[tuple[int, str]]:
        """(file offset, text) of the lines in ``buf`` (whole lines; file offset ``base``) that start a
        launch, last first. A line counts when the full rule set names it with a launch-start rule,
        exactly as the engine would."""
        out: list[tuple[int, str]] = []
        for s in self._candidates(buf):
            e = buf.find(b"\n", s)
            visible, _ = clean_raw(buf[s : e if e >= 0 else len(buf)], MAX_LINE)
            line = make_line(0, base + s, visible)
            m = self.ruleset.match(line.plain)
            if m is not None and "new_run" in m.rule.roles:
                out.append((base + s, line.plain))
        return out


def _starts_new_run(fd: int, prev: int, cur: int, ruleset: RuleSet) -> bool:
    """Whether the marker at ``cur`` starts another launch after the one whose marker is at ``prev``:
    the readiness machine decides, on the lines between (vLLM prints more than one first line)."""
    if cur - prev > PAIR_LIMIT:
        return True
    end = cur
    while True:
        more = os.pread(fd, BLOCK, end)
        nl = more.find(b"\n")
        end += nl + 1 if nl >= 0 else len(more)
        if nl >= 0 or not more or end - cur > MAX_LINE:
            break
    data = os.pread(fd, end - prev, prev)
    builder = EventBuilder(ruleset)
    readiness = Readiness(ReadinessConfig(timeout=None, stall=None), 0.0)
    lines = [make_line(i + 1, 0, clean_raw(raw, MAX_LINE)[0]) for i, raw in enumerate(data.rstrip(b"\n").split(b"\n"))]
    for ev in builder.feed_many(lines):
        readiness.feed(ev, 0.0)
    return readiness.snapshot(0.0).run > 1


def find_last_launch(fd: int, size: int, ruleset: RuleSet | None = None, *, window: int | None = None,
                     small: int | None = None, block: int = BLOCK) -> LaunchStart:
    """Where the last launch in the first ``size`` bytes of ``fd`` starts.

    Reads backwards in ``block``-sized pieces for a launch's first line (SGLang ``server_args=ServerArgs(``,
    vLLM ``vLLM API server version``: the rules the readiness machine starts a new run on), at most
    ``window`` bytes. When two such lines belong to one launch (the readiness machine says the earlier
    run had not got going), the earlier one is the start. No start within the window: ``found`` is
    False and ``offset`` is the first line start in the last FALLBACK bytes (a server up for long:
    judge its recent past).
    """
    rs = ruleset if ruleset is not None else RuleSet()
    window = WINDOW if window is None else window
    if size <= (SMALL if small is None else small):
        return LaunchStart(0, False, 0, size, window)
    markers = _Markers(rs)
    floor = max(0, size - window)
    hi = size
    lo = size
    best: tuple[int, str] | None = None
    while hi > floor:
        lo = max(floor, lo - block)
        buf = os.pread(fd, hi - lo, lo)
        if lo > 0:
            nl = buf.find(b"\n")
            if nl < 0 or nl == len(buf) - 1:  # no line starts in here (that newline ends the line at hi)
                if lo == floor:
                    break
                if hi - lo > 4 * MAX_LINE:
                    hi = lo  # one over-long line: not a launch's first line
                continue  # read further back for this line's start
            cut = nl + 1
        else:
            cut = 0
        for off, text in markers.starts_in(buf[cut:], lo + cut):
            if best is None:
                best = (off, text)
            elif _starts_new_run(fd, off, best[0], rs):
                return LaunchStart(best[0], True, size - lo, size, window, best[1])
            else:
                best = (off, text)  # the same launch's earlier first line
        if lo == floor:
            break
        hi = lo + cut
        lo = hi
        if best is not None and best[0] - hi > PAIR_LIMIT:
            break  # an earlier first line this far back belongs to an earlier launch
    if best is not None:
        return LaunchStart(best[0], True, size - lo, size, window, best[1])
    if floor == 0:
        return LaunchStart(0, False, size, size, window)
    cut = max(0, size - FALLBACK)
    head = os.pread(fd, MAX_LINE, cut)
    nl = head.find(b"\n")
    start = cut + nl + 1 if nl >= 0 and cut > 0 else cut
    return LaunchStart(start, False, size - floor, size, window)


def _mb(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


def attach_message(start: LaunchStart) -> str:
    """What a reader attached at ``start`` should know about the part it skips ("" when none is skipped)."""
    if start.offset <= 0:
        return ""
    if start.found:
        return (f"judging the last launch, which starts {_mb(start.size - start.offset)} before the end of "
                f"this {_mb(start.size)} log; the {_mb(start.offset)} before it (earlier launches) are not "
                f"judged (`symmtui scan` reads them all)")
    return (f"no launch start in the last {_mb(start.window)} of this {_mb(start.size)} log: judging its "
            f"last {_mb(start.size - start.offset)} as a server already running (what it logged before is "
            f"not judged; `symmtui scan` reads it all)")


def last_launch_attach(ruleset: RuleSet | None = None) -> Callable[[int, int], tuple[int, str]]:
    """A ``LogFollower(attach_at=...)`` that starts at the last launch of an existing log."""

    def attach(fd: int, size: int) -> tuple[int, str]:
        start = find_last_launch(fd, size, ruleset)
        return start.offset, attach_message(start)

    return attach
