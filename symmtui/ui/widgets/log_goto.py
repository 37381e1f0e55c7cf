"""Where the log pane's "go to" lands: a line number, a time of the log's own clock, a time since its first
line, or a phase ("capturing CUDA graphs", "cuda", "weights"), found over the whole file.

    12345            line 12345 (the file's numbering: its first line is 1)
    09:47:20         the first line stamped at or after 09:47:20 (the date of the log's first stamp)
    2026-11-29 09:47 the same with a date
    +8m01s, +90s     that long after the log's first stamped line
    capturing CUDA graphs, cuda graphs, ready
                     the first line of that phase (of the log's last launch)
"""

from __future__ import annotations

import calendar
import difflib
import re
import time

from msgspec import Struct

from symmtui.judge.rules import PHASE_ORDER
from symmtui.logs.lineparts import split_prefix
from symmtui.ui.widgets.log_index import LineIndex

__all__ = ["HELP", "Landing", "first_stamp", "go_to", "stamp_of"]

HELP = "go to: a line (1234), a log time (09:47:20), +8m01s after the first line, or a phase (cuda graphs)"
_SCAN = 64  # rows looked at for a stamp around a probe
_LINE = re.compile(r"(?:line\s*|:)?(\d+)")
_CLOCK = re.compile(r"(?:(\d{4})-(\d\d)-(\d\d)[ T])?(\d{1,2}):(\d\d)(?::(\d\d))?")
_SINCE = re.compile(r"\+\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+(?:\.\d+)?)s?)?")


class Landing(Struct, frozen=True):
    """Where a go-to lands (``row`` None: nowhere) and what the status line says about it."""

    row: int | None
    note: str


def stamp_of(text: str) -> float | None:
    """The log's own time on a line (epoch seconds, naive stamps read as UTC), None without one."""
    return split_prefix(text).ts


def _stamp_near(index: LineIndex, row: int) -> tuple[int, float] | None:
    """The first stamped row at or after ``row`` (within _SCAN rows)."""
    for r in range(max(row, 0), min(index.rows, row + _SCAN)):
        ts = stamp_of(index.text(r))
        if ts is not None:
            return r, ts
    return None


def first_stamp(index: LineIndex) -> float | None:
    """The log's first stamp (within its first rows)."""
    found = _stamp_near(index, 0)
    return found[1] if found is not None else None


def _first_at_or_after(index: LineIndex, when: float) -> int | None:
    """The first stamped row whose stamp is >= ``when`` (a binary search by row, each probe read from the file;
    stamps rise through a log)."""
    lo, hi = 0, index.rows
    best: int | None = None
    while lo < hi:
        mid = (lo + hi) // 2
        near = _stamp_near(index, mid)
        if near is None or near[1] >= when:
            if near is not None:
                best = near[0]
            hi = mid
        else:
            lo = near[0] + 1
    return best


def _phase(index: LineIndex, words: str) -> Landing | None:
    """The first line of the phase ``words`` names, in the last launch; None if ``words`` names none."""
    names = list(dict.fromkeys([*PHASE_ORDER, *(name for name, _ in index.phases)]))
    want = words.lower()
    picked = next((n for n in names if n.lower() == want), None)
    picked = picked or next((n for n in names if want in n.lower()), None)
    if picked is None:
        close = difflib.get_close_matches(want, [n.lower() for n in names], n=1, cutoff=0.6)
        picked = next((n for n in names if close and n.lower() == close[0]), None)
    if picked is None:
        return None
    seen = index.phases
    starts = [row for name, row in seen if name == PHASE_ORDER[0]]
    launch = max(starts, default=0)  # the last launch's first line (a log with launches appended)
    rows = [row for name, row in seen if name == picked and row >= launch] or \
        [row for name, row in seen if name == picked]
    if not rows:
        return Landing(None, f"{picked}: not in this log (yet)")
    row = min(rows)
    return Landing(row, f"{picked} at line {index.no_for_row(row):,}")


def go_to(index: LineIndex, text: str) -> Landing:
    """Resolve what the user typed (see the module docstring)."""
    text = text.strip()
    if not text:
        return Landing(None, HELP)
    if m := _LINE.fullmatch(text):
        no = int(m.group(1))
        row = index.row_for_no(no)
        if row is None:
            return Landing(None, f"line {no:,}: the log has {index.rows:,} line{'s' if index.rows != 1 else ''}"
                           if index.rows else "the log is empty")
        return Landing(row, f"line {no:,}")
    if (m := _SINCE.fullmatch(text)) and any(m.groups()):
        start = first_stamp(index)
        if start is None:
            return Landing(None, "this log's lines carry no time stamps")
        h, mi, s = (float(g) if g else 0.0 for g in m.groups())
        return _at(index, start + h * 3600 + mi * 60 + s, text)
    if m := _CLOCK.fullmatch(text):
        start = first_stamp(index)
        if start is None:
            return Landing(None, "this log's lines carry no time stamps")
        year, month, day, hh, mm, ss = m.groups()
        if year is None:
            year, month, day = time.strftime("%Y %m %d", time.gmtime(start)).split()
        when = calendar.timegm((int(year), int(month), int(day), int(hh), int(mm), int(ss or 0), 0, 0, 0))
        if m.group(1) is None and when < start - 1:
            when += 86400  # a time of day before the first line's: the next day's
        return _at(index, when, text)
    found = _phase(index, text)
    if found is not None:
        return found
    return Landing(None, f"nothing to go to for {text!r}: {HELP}")


def _at(index: LineIndex, when: float, asked: str) -> Landing:
    row = _first_at_or_after(index, when)
    if row is None:
        return Landing(None, f"no line at or after {asked}")
    shown = time.strftime("%H:%M:%S", time.gmtime(stamp_of(index.text(row)) or when))
    return Landing(row, f"{shown} at line {index.no_for_row(row):,}")
