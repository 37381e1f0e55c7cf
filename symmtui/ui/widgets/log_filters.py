"""The log pane's filters and match counts: errors only, regexes in and out (lnav's ``:filter-in`` /
``:filter-out``), and the rows a search matches, computed in slices so a 5-million-row log keeps the keys live.

A row is shown when (errors only is off, or it is a crash/warning/traceback row) and (no filter-in is given,
or one of them matches) and no filter-out matches. A pattern in lower case matches any case, as the search does.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from symmtui.patterns import PatternError, UserPattern, compile_user
from symmtui.ui.widgets.log_index import ERRORISH, LineIndex

__all__ = ["MAX_MATCHES", "SLICE", "STEP_ROWS", "FilterRule", "ViewFilter", "build", "count_matches", "matches"]

STEP_ROWS = 512  # rows judged between two looks at the clock
SLICE = 0.008  # seconds of judging between two turns of the event loop (keys stay live)
MAX_MATCHES = 1_000_000  # search matches counted at most ("1,000,000+")


@dataclass(frozen=True)
class FilterRule:
    """One regex filter: ``include`` (filter-in) or not (filter-out)."""

    include: bool
    pattern: str
    rx: UserPattern

    @classmethod
    def parse(cls, include: bool, pattern: str) -> FilterRule:
        """A rule from what the user typed, run by RE2 (``patterns.compile_user``: time linear in the line, so no
        filter can freeze the screen); ValueError with a one-line reason for a pattern RE2 cannot run."""
        if not pattern:
            raise ValueError("an empty pattern filters nothing")
        try:
            rx = compile_user(pattern, what="regex", ignore_case=pattern == pattern.lower())
        except PatternError as exc:
            raise ValueError(str(exc)) from None
        return cls(include, pattern, rx)

    @property
    def chip(self) -> str:
        """``in /TP3/`` or ``out /GET \\/health/``."""
        return f"{'in' if self.include else 'out'} /{self.pattern}/"


class ViewFilter:
    """The pane's filter (a ``LineIndex`` ``Keep``): errors only and regex rules."""

    def __init__(self, index: LineIndex, errors_only: bool = False, rules: tuple[FilterRule, ...] = ()) -> None:
        self.index = index
        self.errors_only = errors_only
        self.rules = rules
        self._ins = tuple(r.rx for r in rules if r.include)
        self._outs = tuple(r.rx for r in rules if not r.include)

    @property
    def active(self) -> bool:
        """Whether it hides anything at all."""
        return self.errors_only or bool(self.rules)

    def passes(self, text: str) -> bool:
        """Whether a line's text passes the regex rules."""
        if self._ins and not any(rx.search(text) for rx in self._ins):
            return False
        return not any(rx.search(text) for rx in self._outs)

    def __call__(self, row: int, flags: int) -> bool:
        if self.errors_only and not flags & ERRORISH:
            return False
        return not self.rules or self.passes(self.index.text(row))


def _slices(index: LineIndex) -> Iterator[tuple[int, int] | None]:
    """Row ranges [lo, hi) to the index's end (rows appended meanwhile too), and None each time SLICE is spent."""
    pos = index.base
    deadline = time.monotonic() + SLICE
    while pos < index.end:
        hi = min(index.end, max(pos, index.base) + STEP_ROWS)
        yield pos, hi
        pos = hi
        if pos < index.end and time.monotonic() > deadline:
            yield None
            deadline = time.monotonic() + SLICE


def build(keep: ViewFilter) -> Iterator[array[int] | None]:
    """The rows ``keep`` shows, in slices: None after every SLICE of judging, then the array (the last item).

    Rows appended meanwhile are judged too (it runs to the index's end); rows pruned meanwhile are skipped."""
    index = keep.index
    rows: array[int] = array("Q")
    for span in _slices(index):
        if span is None:
            yield None
            continue
        for row, text in index.texts(*span):
            if row >= index.base and (not keep.errors_only or index.flags(row) & ERRORISH) and keep.passes(text):
                rows.append(row)
    yield rows


def matches(needle: str, text: str) -> bool:
    """The search's rule: smart case (a needle without capitals matches any case)."""
    return needle in (text.lower() if needle == needle.lower() else text)


def count_matches(index: LineIndex, needle: str) -> Iterator[array[int] | None]:
    """Every row the view shows that contains ``needle``, in slices (None between them, the array last)."""
    found: array[int] = array("Q")
    fold = needle == needle.lower()
    probe = needle.lower() if fold else needle
    for span in _slices(index):
        if span is None:
            yield None
            continue
        for row, text in index.texts(*span):
            if probe in (text.lower() if fold else text) and index.is_shown(row):
                found.append(row)
        if len(found) >= MAX_MATCHES:
            break
    yield found
