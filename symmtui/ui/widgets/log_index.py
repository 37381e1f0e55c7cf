"""The log pane's Textual-free view of a file: one flag byte a row, traceback blocks from the events, folds, the view.

The rows are the file's (``log_file.LogFile``: its offset index); this adds one flag byte per row (its kind,
block markers) and the view the widget scrolls over. ``sync()`` takes in the rows the file gained.

Rows are marked from the engine's events only (``add_events``), placed by their byte offsets (``Event.offset``,
and ``Event.offsets`` for every occurrence: its first and last line), never by line numbers: the engine may
number lines from where it attached to a big file, the pane numbers them from the file's first line. An
event re-emitted under the same key marks only what is new; an event for rows not indexed yet waits. A
traceback is one block under a summary row from its event; the other ranks' copies (occurrences of the same
event, spans of their own) fold under the first one's summary (``KeyError: 12 at torch_symm_mem.py:83 ×8
ranks``) while ``folding`` is on; unfolded, each copy is a block of its own. Copies interleaved with another
block stay marked rows (their span is not theirs alone).

The view: every row but the folded ones (or only the rows a filter keeps: ``set_filter``), with one summary
pseudo-row inserted above each block shown.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator, Sequence
from typing import Protocol

from msgspec import Struct, field

from symmtui.ui.widgets.log_file import LogFile

__all__ = [
    "BLOCK",
    "BLOCK_END",
    "CRASH",
    "ERRORISH",
    "INFO",
    "KIND_MASK",
    "KIND_NAMES",
    "PHASE",
    "PLAIN",
    "PROGRESS",
    "READY",
    "WARNING",
    "Block",
    "EventLike",
    "LineIndex",
    "spread",
]

# Flag byte layout: bits 0-2 the kind, then markers.
PLAIN, CRASH, WARNING, READY, PHASE, PROGRESS, INFO = range(7)
KIND_MASK = 0x07
BLOCK = 0x08  # the row is part of a traceback block
BLOCK_END = 0x10  # the block's last line (the exception line, "KeyError: 12", or its last detail line)
ERRORISH = 0x80  # shown by the errors-only filter: crash, warning or block rows

KIND_NAMES: dict[int, str] = {
    PLAIN: "plain", CRASH: "crash", WARNING: "warning", READY: "ready",
    PHASE: "phase", PROGRESS: "progress", INFO: "info",
}
_KIND_CODES: dict[str, int] = {name: code for code, name in KIND_NAMES.items()}
_MAX_PENDING = 10_000  # events for rows not indexed yet
_MORE_ROWS = 5_000  # rows looked at for more copies of a one-line event seen more often than its spans kept
_ERRORISH = re.compile(rb"[\x80-\xff]")  # the flag's top bit


class EventLike(Protocol):
    """What the index needs of a `symmtui.judge.events.Event`."""

    @property
    def kind(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def ranks(self) -> frozenset[int]: ...
    @property
    def count(self) -> int: ...
    @property
    def key(self) -> str: ...
    @property
    def phase(self) -> str | None: ...
    @property
    def offset(self) -> int: ...
    @property
    def offsets(self) -> tuple[tuple[int, int], ...]: ...


def spread(ranks: frozenset[int], count: int) -> str:
    """``×8 ranks``, ``×3 times`` or ``""``: how widely an event was seen."""
    if len(ranks) > 1:
        return f"×{len(ranks)} ranks"
    return f"×{count} times" if count > 1 else ""


class Block(Struct):
    """A traceback block: rows `start`..`end` (inclusive) under one summary row.

    ``copy``: another occurrence (another rank's) of the event whose first occurrence is at row ``first``;
    ``folded``: that copy is hidden under the first one's summary."""

    start: int
    end: int
    key: str = ""
    event_summary: str = ""
    first: int = 0
    ranks: frozenset[int] = field(default_factory=frozenset)
    count: int = 1
    copy: bool = False
    folded: bool = False
    copies_folded: int = 0
    fold_start: int = 0  # the first row its fold hides (the blank lines above it included)

    def summary(self) -> str:
        """The summary row's text, e.g. ``KeyError: 12 at torch_symm_mem.py:83 ×8 ranks``."""
        text = self.event_summary or "Traceback"
        if self.copy:
            return f"{text} (another copy; same as line {self.first + 1:,})"
        where = spread(self.ranks, self.count)
        text += f" {where}" if where else ""
        if self.copies_folded:
            text += f" ({self.copies_folded} cop{'ies' if self.copies_folded > 1 else 'y'} folded: z)"
        return text


class _Keyed(Struct):
    """What one event key (its latest version) marked: occurrence's first offset -> last row marked, its blocks."""

    applied: dict[int, int] = field(default_factory=dict)
    blocks: dict[int, Block] = field(default_factory=dict)  # occurrence's first offset -> its block
    scanned: int = -1  # the last row searched for more copies of a one-line event (past its spans)


def _occurrences(event: EventLike) -> tuple[tuple[int, int], ...]:
    """The (first line's, last line's) byte offsets of each occurrence; () when the event has none."""
    if event.offsets:
        return event.offsets
    return ((event.offset, event.offset),) if event.offset >= 0 else ()


class LineIndex:
    """The flags and view of one file's rows; see the module docstring. UI thread only."""

    def __init__(self, file: LogFile | None = None) -> None:
        self.folding = True  # copies of a traceback are folded under its first occurrence
        self.clear(file)

    # ------------------------------------------------------------------ state
    def clear(self, file: LogFile | None = None) -> None:
        """Forget every row, mark and filter: a new file (or generation) from its first row."""
        self.file = file
        self._flags = bytearray()
        self.blocks: list[Block] = []
        self._block_starts: list[int] = []
        self._marks: list[int] = []  # single marked crash/warning rows (n/N stops besides the blocks)
        self._targets: list[int] | None = []  # n/N stops; None: to be rebuilt
        # distinct engine events (offset of the first occurrence): a traceback from 8 ranks is ONE event
        self.crash_events: set[int] = set()
        self.warning_events: set[int] = set()
        self._target_summary: dict[int, str] = {}
        self._pending: dict[tuple[str, int], EventLike] = {}
        self._keyed: dict[str, _Keyed] = {}
        self.phases: list[tuple[str, int]] = []  # (phase, row) of each phase event, in order
        self._hidden: list[tuple[int, int]] = []  # folded rows: sorted disjoint (first, last) row ranges
        self._hid_pos: list[int] = []  # the shown position where each hidden range would start
        self._hid_before: list[int] = [0]  # rows hidden before each range (prefix sums)
        self.errors_only = False
        self.rx_rows: array[int] | None = None  # rows the regex filters keep (None: no regex filter)
        self._frows: array[int] | None = None  # rows the view shows when filtered
        self._hv: list[int] = []  # view position of each shown block's summary row
        self._vblocks: list[int] = []  # indices (into blocks) of the blocks shown, in view order
        self._hv_dirty = True

    @property
    def rows(self) -> int:
        """Rows the view knows (``sync`` takes in what the file gained)."""
        return len(self._flags)

    @property
    def last_no(self) -> int:
        """The number of the last row (the file's numbering: the first line is 1)."""
        return len(self._flags)

    @property
    def filtered(self) -> bool:
        """Whether a filter decides which rows the view shows."""
        return self._frows is not None

    @property
    def targets(self) -> list[int]:
        """n/N stops: the blocks shown (their start) and the marked crash/warning rows, in order."""
        if self._targets is None:
            starts = [b.start for b in self.blocks if not b.folded]
            self._targets = sorted(set(starts) | set(self._marks))
        return self._targets

    def memory_bytes(self) -> int:
        """An estimate of what the index holds: the file's offsets, the flags and the filter rows."""
        offsets = len(self.file.starts) * 8 if self.file is not None else 0
        frows = len(self._frows) * 8 if self._frows is not None else 0
        rx = len(self.rx_rows) * 8 if self.rx_rows is not None else 0
        return offsets + len(self._flags) + frows + rx

    def sync(self) -> tuple[int, list[int]]:
        """Take in the rows the file gained; (rows added, rows re-marked by events that were waiting)."""
        file = self.file
        if file is None:
            return 0, []
        added = file.rows - len(self._flags)
        if added > 0:
            self._flags.extend(bytes(added))
            self._hv_dirty = True
        changed: list[int] = []
        if self._pending:
            ready = list(self._pending.values())
            self._pending.clear()
            changed = self.add_events(ready)
        return max(added, 0), changed

    # ------------------------------------------------------------------ rows
    def text(self, row: int) -> str:
        """The text of ``row`` as the pane shows it (read from the file)."""
        return self.file.text(row) if self.file is not None else ""

    def cut(self, row: int) -> bool:
        """Whether ``row`` is longer than the pane shows."""
        return self.file is not None and self.file.cut(row)

    def flags(self, row: int) -> int:
        """The flag byte of `row`."""
        return self._flags[row]

    def row_for_no(self, no: int) -> int | None:
        """The row of line ``no`` (the file's numbering, from 1), None when there is none."""
        return no - 1 if 1 <= no <= len(self._flags) else None

    @staticmethod
    def no_for_row(row: int) -> int:
        """The line number of ``row`` (the file's: its first line is 1)."""
        return row + 1

    def row_at(self, offset: int) -> int | None:
        """The row holding byte ``offset``, None when it is not indexed yet."""
        if self.file is None:
            return None
        row = self.file.row_of(offset)
        return row if row is not None and row < len(self._flags) else None

    def block_at(self, row: int) -> Block | None:
        """The block containing `row`, if any."""
        k = bisect_right(self._block_starts, row) - 1
        if k >= 0:
            block = self.blocks[k]
            if block.start <= row <= block.end:
                return block
        return None

    def block_ranges(self) -> list[tuple[int, int]]:
        """(start, end) rows of every block (a filter keeps each whole)."""
        return [(b.start, b.end) for b in self.blocks]

    # ------------------------------------------------------------------ events
    def add_events(self, events: Sequence[EventLike], *, more: bool = True) -> list[int]:
        """Mark rows from engine events; returns the rows whose rendering changed.

        Each occurrence of an event (its offsets) is marked: a one-line occurrence as a crash/warning row, a
        longer one as a traceback block (a copy, after the first). An event re-emitted under the same key
        (more ranks, detail lines) marks only what is new. An event for rows not indexed yet waits. ``more``: a
        one-line event seen more often than its spans are kept has its later rows found by its text.
        """
        changed: list[int] = []
        latest: dict[tuple[str, int], EventLike] = {}
        for event in events:  # an event re-emitted in the same batch: only its last state matters
            if event.offset < 0 and not event.offsets:
                continue  # no line of the file (the process's exit)
            latest[(event.key or f"{event.kind}:{event.summary}", event.offset)] = event
        for (key, first), event in latest.items():
            kind = _KIND_CODES.get(str(event.kind), INFO)
            spans = _occurrences(event)
            last = max(b for _, b in spans)
            if self.row_at(last) is None:
                if len(self._pending) < _MAX_PENDING:
                    self._pending[(key, first)] = event  # applied (again, whole) once its rows are indexed
                ready = [(a, b) for a, b in spans if self.row_at(b) is not None]
                if not ready:
                    continue
                spans = tuple(ready)
            if kind in (PHASE, READY):  # where each phase began (every rank's line: the first one counts)
                row = self.row_at(first if first >= 0 else spans[0][0])
                name = "ready" if kind == READY else event.phase or event.summary
                if row is not None and (name, row) not in self.phases[-64:]:
                    self.phases.append((name, row))
            if kind in (PLAIN, INFO):
                continue
            if kind == CRASH:
                self.crash_events.add(first)
            elif kind == WARNING:
                self.warning_events.add(first)
            self._apply(key, event, spans, kind, changed, more)
        return changed

    def mark_rows(self, marks: Sequence[tuple[int, str, str]]) -> list[int]:
        """Mark the rows at these ``(offset, kind, summary)`` as crash/warning lines (more lines of one-line
        events than their spans name); returns the rows whose rendering changed."""
        changed: list[int] = []
        for offset, kind, summary in marks:
            row = self.row_at(offset)
            if row is not None:
                self._mark(row, _KIND_CODES.get(kind, INFO), summary, changed)
        return changed

    def _apply(self, key: str, event: EventLike, spans: tuple[tuple[int, int], ...], kind: int,
               changed: list[int], more: bool = True) -> None:
        state = self._keyed.setdefault(key, _Keyed())
        first_block: Block | None = None
        first_row = self.row_at(spans[0][0])
        for i, (a, b) in enumerate(spans):
            ra, rb = self.row_at(a), self.row_at(b)
            if ra is None or rb is None or rb < ra:
                continue
            if state.applied.get(a, ra - 1) >= rb:
                block = state.blocks.get(a)
                first_block = first_block or (block if i == 0 else None)
                continue
            done = state.applied.get(a)
            state.applied[a] = rb
            if rb == ra and a not in state.blocks:  # a one-line occurrence (a rank's warning line)
                self._mark(ra, kind, event.summary, changed, spread(event.ranks, event.count))
                continue
            block = state.blocks.get(a)
            if block is not None:  # the occurrence grew (detail lines): extend it
                lo = block.end + 1
                self._flags[block.end] &= ~BLOCK_END
                block.end = max(block.end, rb)
                self._mark_block_rows(lo, block.end, kind, changed)
            elif not self._overlaps(ra, rb):
                if done is not None and ra in self._marks:  # it was one line; detail lines made it a block
                    self._marks.remove(ra)
                block = Block(ra, rb, key, event.summary, first_row if first_row is not None else ra, copy=i > 0)
                k = bisect_left(self._block_starts, ra)
                self.blocks.insert(k, block)
                self._block_starts.insert(k, ra)
                state.blocks[a] = block
                self._mark_block_rows(ra, rb, kind, changed)
                if block.copy and self.folding:
                    self._fold(block, True)
            else:  # interleaved with another block: its rows are marked, it is no block of its own
                self._mark_block_rows(ra, rb, kind, changed, block=False)
            self._targets = None
            self._hv_dirty = True
            if i == 0:
                first_block = block
        if more and kind in (CRASH, WARNING) and event.count > len(spans) and all(a == b for a, b in spans):
            self._mark_more(state, event, kind, changed, self.row_at(spans[-1][1]))
        if first_block is not None:
            first_block.event_summary = event.summary
            first_block.ranks = event.ranks
            first_block.count = max(event.count, 1)
            first_block.copies_folded = sum(1 for c in state.blocks.values() if c.folded)
            changed.append(first_block.start)
        for block in state.blocks.values():
            if block.copy:
                block.event_summary = event.summary

    def _mark_more(self, state: _Keyed, event: EventLike, kind: int, changed: list[int], last: int | None) -> None:
        """A one-line event seen more often than the spans the engine keeps (MAX_SPANS): the rows after its last
        span that carry its text are marked too, each re-emission reading at most _MORE_ROWS rows on."""
        body = event.summary.rstrip("…")
        if not body or self.file is None:
            return
        lo = max(state.scanned + 1, (last if last is not None else -1) + 1)
        hi = min(len(self._flags), lo + _MORE_ROWS)
        where = spread(event.ranks, event.count)
        flags = self._flags
        for row, text in self.file.texts(lo, hi):
            if not flags[row] & KIND_MASK and body in text:
                self._mark(row, kind, event.summary, changed, where)
        state.scanned = max(state.scanned, hi - 1)

    def _overlaps(self, lo: int, hi: int) -> bool:
        k = bisect_right(self._block_starts, hi)
        return k > 0 and self.blocks[k - 1].end >= lo

    def _mark_block_rows(self, lo: int, hi: int, kind: int, changed: list[int], *, block: bool = True) -> None:
        kind = kind if kind in (CRASH, WARNING) else CRASH
        for row in range(lo, hi + 1):
            old = self._flags[row]
            new = (old & ~KIND_MASK) | kind | ERRORISH | (BLOCK if block else 0)
            if block and row == hi:
                new |= BLOCK_END
            if new != old:
                self._flags[row] = new
                changed.append(row)
                self._refilter(row, new)

    def _mark(self, row: int, kind: int, summary: str, changed: list[int], where: str = "") -> None:
        old = self._flags[row]
        new = (old & ~KIND_MASK) | kind
        if kind in (CRASH, WARNING):
            new |= ERRORISH
            k = bisect_left(self._marks, row)
            if k == len(self._marks) or self._marks[k] != row:
                self._marks.insert(k, row)
                self._targets = None
            self._target_summary[row] = f"{summary} {where}" if where else summary
        if new != old:
            self._flags[row] = new
            changed.append(row)
            self._refilter(row, new)

    def _refilter(self, row: int, flags: int) -> None:
        """A row's flags changed: the errors-only view may show it now."""
        frows = self._frows
        if frows is None or not self.errors_only or not flags & ERRORISH or self.hidden(row):
            return
        if self.rx_rows is not None and not _holds(self.rx_rows, row):
            return
        k = bisect_left(frows, row)
        if k == len(frows) or frows[k] != row:
            frows.insert(k, row)
            self._hv_dirty = True

    def block_summary(self, block: Block) -> str:
        """A block's summary row."""
        return block.summary()

    def target_summary(self, row: int) -> str:
        """What n/N shows for a stop: the block's or event's summary, else the line itself."""
        block = self.block_at(row)
        if block is not None and block.start == row:
            return self.block_summary(block)
        return self._target_summary.get(row) or self.text(row).strip()[:200]

    # ------------------------------------------------------------------ folding
    def set_folding(self, on: bool) -> None:
        """Fold every traceback's copies under its first occurrence, or show each copy as a block."""
        self.folding = on
        for block in self.blocks:
            if block.copy and block.folded != on:
                self._fold(block, on)
        for state in self._keyed.values():
            for first in (b for b in state.blocks.values() if not b.copy):
                first.copies_folded = sum(1 for c in state.blocks.values() if c.folded)
        self._targets = None
        self._hv_dirty = True

    def _fold(self, block: Block, on: bool) -> None:
        """Hide a copy (and the blank lines just above it, the gap between two copies), or show it again."""
        first = block.start
        if on:
            while (first > 0 and block.start - first < 3 and not self._flags[first - 1]
                   and not self.text(first - 1).strip() and not self.hidden(first - 1)):
                first -= 1
            block.fold_start = first
        else:
            first = block.fold_start
        block.folded = on
        ranges = [r for r in self._hidden if r[1] != block.end]
        if on:
            insort(ranges, (first, block.end))
        self._set_hidden(ranges)
        frows = self._frows
        if frows is not None:
            lo = bisect_left(frows, first)
            hi = bisect_right(frows, block.end)
            if on:
                del frows[lo:hi]
            else:
                frows[lo:lo] = array("Q", [r for r in range(first, block.end + 1) if self._passes(r)])
        self._hv_dirty = True

    def _set_hidden(self, ranges: list[tuple[int, int]]) -> None:
        self._hidden = ranges
        self._hid_pos = []
        self._hid_before = [0]
        for a, b in ranges:
            self._hid_pos.append(a - self._hid_before[-1])
            self._hid_before.append(self._hid_before[-1] + b - a + 1)
        self._hv_dirty = True

    def hidden_ranges(self) -> list[tuple[int, int]]:
        """The folded row ranges (a copy: for a worker)."""
        return list(self._hidden)

    def is_shown(self, row: int) -> bool:
        """Whether the view shows `row` (not folded, not filtered out)."""
        return 0 <= row < len(self._flags) and self._pos(row) is not None

    def hidden(self, row: int) -> bool:
        """Whether `row` is folded away."""
        k = bisect_right(self._hidden, (row, 1 << 62)) - 1
        return k >= 0 and self._hidden[k][0] <= row <= self._hidden[k][1]

    # ------------------------------------------------------------------ view
    def set_filter(self, errors_only: bool, rx_rows: array[int] | None) -> None:
        """Show only crash/warning/block rows (``errors_only``) and only ``rx_rows`` (the rows the regex filters
        keep, None: no regex filter); neither: every row but the folded ones."""
        self.errors_only = errors_only
        self.rx_rows = rx_rows
        if not errors_only and rx_rows is None:
            self._frows = None
        elif rx_rows is None:
            self._frows = array("Q", (m.start() for m in _ERRORISH.finditer(self._flags)
                                      if not self.hidden(m.start())))
        else:
            self._frows = array("Q", (r for r in rx_rows if r < len(self._flags) and self._passes(r)))
        self._hv_dirty = True

    def add_kept(self, rows: Sequence[int]) -> int:
        """Rows the regex filters keep, found after the last ones (a filter following the file); how many show."""
        if self.rx_rows is None or self._frows is None:
            return 0
        self.rx_rows.extend(rows)
        shown = [r for r in rows if r < len(self._flags) and self._passes(r)]
        self._frows.extend(shown)
        if shown:
            self._hv_dirty = True
        return len(shown)

    def _passes(self, row: int) -> bool:
        """Whether the filters (not the folds) keep ``row``."""
        if self.errors_only and not self._flags[row] & ERRORISH:
            return False
        return not self.hidden(row) and (self.rx_rows is None or _holds(self.rx_rows, row))

    def shown_count(self) -> int:
        """Rows the view shows (summary rows not counted)."""
        return len(self._frows) if self._frows is not None else len(self._flags) - self._hid_before[-1]

    def _pos(self, row: int) -> int | None:
        """The position of `row` among the rows shown (summary rows not counted), None if not shown."""
        if self._frows is not None:
            k = bisect_left(self._frows, row)
            return k if k < len(self._frows) and self._frows[k] == row else None
        k = bisect_right(self._hidden, (row, 1 << 62)) - 1
        if k >= 0 and row <= self._hidden[k][1]:
            return None
        return row - self._hid_before[k + 1]

    def _row_at(self, pos: int) -> int:
        if self._frows is not None:
            return self._frows[pos]
        k = bisect_right(self._hid_pos, pos)
        return pos + self._hid_before[k]

    def _view_heads(self) -> list[int]:
        if self._hv_dirty:
            hv: list[int] = []
            shown: list[int] = []
            frows = self._frows
            for k, block in enumerate(self.blocks):
                if block.folded:
                    continue
                pos = self._pos(block.start)
                if pos is None:
                    if frows is None:
                        continue
                    pos = bisect_left(frows, block.start)  # a filter hides its first row: still a head
                    if pos >= len(frows) or frows[pos] > block.end:
                        continue  # none of its rows shown
                hv.append(pos + len(hv))
                shown.append(k)
            self._hv, self._vblocks = hv, shown
            self._hv_dirty = False
        return self._hv

    def view_len(self) -> int:
        """Rows in the view, summary rows included."""
        return self.shown_count() + len(self._view_heads())

    def view_entry(self, y: int) -> tuple[bool, int]:
        """What view line `y` shows: (True, block index) for a summary row, else (False, row)."""
        hv = self._view_heads()
        k = bisect_right(hv, y) - 1
        if k >= 0 and hv[k] == y:
            return True, self._vblocks[k]
        return False, self._row_at(y - (k + 1))

    def view_y(self, row: int, *, summary: bool = False) -> int | None:
        """The view line of `row` (of its block's summary row when `summary`), None if not shown."""
        if not 0 <= row < len(self._flags):
            return None
        hv = self._view_heads()
        if summary:
            k = bisect_left(self._block_starts, row)
            if k < len(self._block_starts) and self._block_starts[k] == row:
                v = bisect_left(self._vblocks, k)
                if v < len(self._vblocks) and self._vblocks[v] == k:
                    return hv[v]
        pos = self._pos(row)
        return None if pos is None else self._y_of(pos)

    def _y_of(self, pos: int) -> int:
        """The view line of the row at shown position `pos`: pos plus the summary rows above it."""
        hv = self._view_heads()
        lo, hi = 0, len(hv)
        while lo < hi:  # the number of heads k with hv[k] <= pos + k
            mid = (lo + hi) // 2
            if hv[mid] - mid <= pos:
                lo = mid + 1
            else:
                hi = mid
        return pos + lo

    def nearest_row(self, y: int) -> int | None:
        """The row at or just below view line `y` (a summary row counts as its block's start)."""
        if self.view_len() == 0:
            return None
        y = max(0, min(y, self.view_len() - 1))
        is_summary, value = self.view_entry(y)
        return self.blocks[value].start if is_summary else value

    def view_rows(self, start: int, forward: bool) -> Iterator[int]:
        """Rows of the view from `start` (inclusive) in one direction, without wrapping."""
        frows = self._frows
        if frows is not None:
            pos = bisect_left(frows, start)
            if forward:
                yield from (frows[i] for i in range(pos, len(frows)))
            else:
                if pos < len(frows) and frows[pos] == start:
                    pos += 1
                yield from (frows[i] for i in range(pos - 1, -1, -1))
            return
        n = len(self._flags)
        rows = range(max(start, 0), n) if forward else range(min(start, n - 1), -1, -1)
        if not self._hidden:
            yield from rows
            return
        yield from (r for r in rows if not self.hidden(r))


def _holds(rows: array[int], row: int) -> bool:
    k = bisect_left(rows, row)
    return k < len(rows) and rows[k] == row
