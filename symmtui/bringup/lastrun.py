"""Find where the last launch in a long log starts, searching backwards from its end in the mapped file."""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Callable

from msgspec import Struct

from symmtui.judge.events import EventBuilder
from symmtui.judge.readiness import Readiness, ReadinessConfig
from symmtui.judge.rules import RuleSet, required_literal
from symmtui.logs.decode import DEFAULT_MAX_LINE_BYTES, clean_raw, make_line
from symmtui.patterns import LinesPattern, compile_user

BLOCK = 1 << 20
"""The backward search's step (and one read of the lines around two launch markers)."""
WINDOW = 64 << 20
"""How far back from the end a launch start is looked for (then: judge the last WINDOW bytes)."""
FALLBACK = 512 << 10
"""No launch start within WINDOW: judge this much of the end (a server up for long: its recent past)."""
SMALL = 8 << 20
"""Files up to this size are judged whole (reading them costs less than deciding where to start)."""
PAIR_LIMIT = 1 << 20
"""Two launch markers further apart than this belong to two launches (the first one got going)."""
MAX_LINE = DEFAULT_MAX_LINE_BYTES


class LaunchStart(Struct, frozen=True):
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
        # here: Hyperscan (~11 ms to import) only for a log big enough to be searched, not for every `wait`
        from symmtui.judge.litscan import LastLiteral

        self._finder = LastLiteral(self.needles)

    def last(self, mm: mmap.mmap, lo: int, hi: int) -> tuple[int, str] | None:
        """The last line starting in [lo, hi) that starts a launch, as ``(offset, text)``: the file's bytes
        are searched from ``hi`` backwards in place (``mmap.rfind``: no copy, GB/s), and each candidate line
        is judged by the full rule set with a launch-start rule, exactly as the engine would."""
        reach = max((len(n) for n in self.needles), default=1) - 1
        while hi > lo:
            at, top = -1, hi
            while at < 0 and top > lo:  # a block at a time: a marker near the end ends the search there
                bottom = max(lo, top - BLOCK)
                at = self._finder.last(mm, bottom, min(hi, top + reach))
                for rx in self.regexes:  # rules without a literal: a regex over the block (none ships)
                    if isinstance(rx, LinesPattern):  # a user's rule, RE2: over a copy of the block
                        for hit in rx.finditer(mm[bottom:top]):
                            at = max(at, bottom + hit.start())
                    else:
                        for found in rx.finditer(mm, bottom, top):
                            at = max(at, found.start())
                top = bottom
            if at < 0:
                return None
            start = mm.rfind(b"\n", 0, at) + 1
            end = mm.find(b"\n", start, start + MAX_LINE)
            visible, _ = clean_raw(mm[start : end if end >= 0 else min(len(mm), start + MAX_LINE)], MAX_LINE)
            line = make_line(0, start, visible)
            m = self.ruleset.match(line.plain)
            if m is not None and "new_run" in m.rule.roles and start >= lo:
                return start, line.plain
            hi = min(start, at)  # a quoted marker, or a line that starts before the window: look further back
        return None


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

    Searches backwards from the end for a launch's first line (SGLang ``server_args=ServerArgs(``, vLLM
    ``vLLM API server version``: the rules the readiness machine starts a new run on), at most ``window``
    bytes, in place (the file mapped, not read: a window with no launch start costs one pass at memory
    speed). When two such lines belong to one launch (the readiness machine says the earlier run had not
    got going), the earlier one is the start. No start within the window: ``found`` is False and ``offset``
    is the first line start in the last FALLBACK bytes (a server up for long: judge its recent past).
    ``block`` is kept for callers that name it; the search needs no blocks.
    """
    del block
    rs = ruleset if ruleset is not None else RuleSet()
    window = WINDOW if window is None else window
    if size <= (SMALL if small is None else small):
        return LaunchStart(0, False, 0, size, window)
    markers = _Markers(rs)
    floor = max(0, size - window)
    best: tuple[int, str] | None = None
    with mmap.mmap(fd, size, prot=mmap.PROT_READ) as mm:
        hi = size
        while True:  # the last start; then an earlier first line of the same launch, at most PAIR_LIMIT back
            found = markers.last(mm, floor if best is None else max(floor, best[0] - PAIR_LIMIT), hi)
            if found is None:
                break
            if best is not None and _starts_new_run(fd, found[0], best[0], rs):
                return LaunchStart(best[0], True, size - found[0], size, window, best[1])
            best = found  # the last start, or the same launch's earlier first line
            hi = found[0]
            if hi <= floor:
                break
        if best is not None:
            return LaunchStart(best[0], True, size - best[0], size, window, best[1])
        if floor == 0:
            return LaunchStart(0, False, size, size, window)
        cut = max(0, size - FALLBACK)
        nl = mm.find(b"\n", cut, cut + MAX_LINE)
    start = nl + 1 if nl >= 0 and cut > 0 else cut
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
