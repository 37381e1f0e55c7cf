"""The log pane's Textual-free line index: bounded rows, a ring of recent text, pread for older lines, blocks, view.

Memory per row is 9 bytes (an `array('Q')` of byte offsets plus one flag byte); the text of the last
`ring` rows stays in memory, older rows are read back from the file with `os.pread` when they come
into view. Past `max_rows` rows the oldest are dropped in chunks, so memory is bounded whatever the
log's size. Line numbers are stored as run-length "points" (a row's number is its index plus a
delta that only changes when the numbering jumps), not one integer per row.

Rows are marked from the engine's events only (`add_events`): an event carries the span (first and last
line) of every occurrence, so a traceback is one block under a summary row from its event, every rank's
copy of it is marked from its own span, and nothing here recognises a traceback a second time. The copies
of a traceback (the same error from other ranks, in spans of their own) are folded under the first
one's summary (`KeyError: 12 at torch_symm_mem.py:83 ×8 ranks`) while `folding` is on; unfolded, each
copy is a block of its own (`(TP1; same as line 10)`). Copies interleaved with another block stay marked
rows (their span is not theirs alone).

The view is what the widget scrolls over: every row but the folded ones (or only the rows a filter keeps,
`set_filter`), with one summary pseudo-row inserted above each block shown.
"""

from __future__ import annotations

import os
import re
from array import array
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from symmtui.core.decode import clean_raw, strip_ansi

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
    "TRUNCATED",
    "WARNING",
    "AppendResult",
    "Block",
    "ErrorsOnly",
    "EventLike",
    "Keep",
    "LineIndex",
    "LineLike",
    "errors_filter",
    "spread",
]

# Flag byte layout: bits 0-2 the kind, then markers.
PLAIN, CRASH, WARNING, READY, PHASE, PROGRESS, INFO = range(7)
KIND_MASK = 0x07
BLOCK = 0x08  # the row is part of a traceback block
BLOCK_END = 0x10  # the block's last line (the exception line, "KeyError: 12", or its last detail line)
TRUNCATED = 0x20  # the line was cut at the follower's cap
PROVISIONAL = 0x40  # a carriage-return progress update that the next item at its offset replaces
ERRORISH = 0x80  # shown by the errors-only filter: crash, warning or block rows

KIND_NAMES: dict[int, str] = {
    PLAIN: "plain", CRASH: "crash", WARNING: "warning", READY: "ready",
    PHASE: "phase", PROGRESS: "progress", INFO: "info",
}
_KIND_CODES: dict[str, int] = {name: code for code, name in KIND_NAMES.items()}

_READ_CAP = 16 * 1024  # bytes read back per line
_SCAN_CHUNK = 1 << 20
_MAX_PENDING = 10_000  # events for lines not yet appended

Keep = Callable[[int, int], bool]
"""A view filter: ``keep(row, flags)`` is True for a row the view shows (it may read ``index.text(row)``)."""


class ErrorsOnly:
    """The errors-only filter: crash, warning and traceback rows."""

    errors_only = True

    def __call__(self, row: int, flags: int) -> bool:
        return bool(flags & ERRORISH)


def errors_filter() -> Keep:
    """A filter that keeps crash, warning and traceback rows."""
    return ErrorsOnly()


class LineLike(Protocol):
    """What the index needs of a `symmtui.core.follow.LogLine`."""

    @property
    def no(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def plain(self) -> str: ...
    @property
    def progress(self) -> bool: ...
    @property
    def truncated(self) -> bool: ...


class EventLike(Protocol):
    """What the index needs of a `symmtui.core.events.Event`."""

    @property
    def kind(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def line_no(self) -> int: ...
    @property
    def ranks(self) -> frozenset[int]: ...
    @property
    def count(self) -> int: ...
    @property
    def key(self) -> str: ...
    @property
    def spans(self) -> tuple[tuple[int, int], ...]: ...
    @property
    def phase(self) -> str | None: ...


def spread(ranks: frozenset[int], count: int) -> str:
    """``×8 ranks``, ``×3 times`` or ``""``: how widely an event was seen."""
    if len(ranks) > 1:
        return f"×{len(ranks)} ranks"
    return f"×{count} times" if count > 1 else ""


@dataclass
class Block:
    """A traceback block: rows `start`..`end` (absolute row ids, inclusive) under one summary row.

    ``copy``: another occurrence (another rank's) of the event whose first occurrence is at line ``first_no``;
    ``folded``: that copy is hidden under the first one's summary."""

    start: int
    end: int
    key: str = ""
    event_summary: str = ""
    first_no: int = 0
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
            return f"{text} (another copy; same as line {self.first_no:,})"
        where = spread(self.ranks, self.count)
        text += f" {where}" if where else ""
        if self.copies_folded:
            text += f" ({self.copies_folded} cop{'ies' if self.copies_folded > 1 else 'y'} folded: z)"
        return text


@dataclass
class AppendResult:
    """What one `append` changed: rows added, rows replaced in place, whether the view moved."""

    added: int = 0
    replaced: list[int] = field(default_factory=list)
    blocks_changed: bool = False
    inserted: list[int] = field(default_factory=list)  # view lines where summary rows appeared
    pruned: int = 0
    restart_at: int | None = None  # the batch's lines from here on belong to a new file generation


@dataclass
class _Keyed:
    """What one event key (its latest version) marked: span first line -> last line applied, its blocks."""

    applied: dict[int, int] = field(default_factory=dict)
    blocks: dict[int, Block] = field(default_factory=dict)  # span first line -> its block
    scanned: int = -1  # the last row searched for more copies of a one-line event (past its spans)


class LineIndex:
    """Rows of one log, with bounded memory; see the module docstring."""

    def __init__(self, *, ring: int = 20_000, max_rows: int = 5_000_000) -> None:
        if ring < 1 or max_rows < ring:
            raise ValueError("need 1 <= ring <= max_rows")
        self.ring = ring
        self.max_rows = max_rows
        self.scan_yield_bytes = 2 << 20  # find_steps yields after this much file scanned
        self.folding = True  # copies of a traceback are folded under its first occurrence
        self.filter: Keep | None = None  # what the view shows (None: every row but the folded ones)
        self._path: Path | None = None
        self._fd: int | None = None
        self._read_cache: dict[int, str] = {}
        self.clear()

    # ------------------------------------------------------------------ state
    def clear(self) -> None:
        """Forget every row (the file stays set; the filter stays, its rows go)."""
        self.base = 0  # absolute id of the oldest row kept
        self.end = 0  # absolute id one past the newest row
        self._offsets: array[int] = array("Q")
        self._flags = bytearray()
        self._texts: list[str] = []
        self._text_base = 0
        self._pt_rows: list[int] = []  # line-number points: rows where the delta changes
        self._pt_nos: list[int] = []
        self._pt_delta: list[int] = []
        self.last_no = 0
        self.width = 0
        self.blocks: list[Block] = []
        self._block_starts: list[int] = []
        self._marks: list[int] = []  # single marked crash/warning rows (n/N stops besides the blocks)
        self._targets: list[int] | None = []  # n/N stops; None: to be rebuilt
        # distinct engine events (line of first occurrence): a traceback from 8 ranks is ONE event
        self.crash_events: set[int] = set()
        self.warning_events: set[int] = set()
        self._target_summary: dict[int, str] = {}
        self._pending: dict[str, EventLike] = {}
        self._keyed: dict[str, _Keyed] = {}
        self.phases: list[tuple[str, int]] = []  # (phase, line number) of each phase event, in order
        self._hidden: list[tuple[int, int]] = []  # folded rows: sorted disjoint (first, last) row ranges
        self._hid_pos: list[int] = []  # the shown position where each hidden range would start
        self._hid_before: list[int] = [0]  # rows hidden before each range (prefix sums)
        self._frows: array[int] = array("Q")
        self._hv: list[int] = []  # view position of each shown block's summary row
        self._vblocks: list[int] = []  # indices (into blocks) of the blocks shown, in view order
        self._hv_dirty = True
        self._read_cache.clear()

    def set_file(self, path: str | os.PathLike[str] | None) -> None:
        """The file the rows' offsets point into; rows that left the ring are read back from it."""
        self.close_file()
        self._path = Path(path) if path is not None else None

    def close_file(self) -> None:
        """Close the read-back descriptor (reopened lazily)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._read_cache.clear()

    @property
    def path(self) -> Path | None:
        """The file set with `set_file`."""
        return self._path

    @property
    def rows(self) -> int:
        """Rows kept."""
        return self.end - self.base

    @property
    def text_base(self) -> int:
        """Absolute id of the oldest row whose text is in memory."""
        return self._text_base

    @property
    def filtered(self) -> bool:
        """Whether a filter decides which rows the view shows."""
        return self.filter is not None

    @property
    def errors_only(self) -> bool:
        """Whether the view shows only crash/warning/block rows (`set_errors_only`)."""
        return getattr(self.filter, "errors_only", False) is True

    @property
    def targets(self) -> list[int]:
        """n/N stops: the blocks shown (their start) and the marked crash/warning rows, in order."""
        if self._targets is None:
            starts = [b.start for b in self.blocks if not b.folded]
            self._targets = sorted(set(starts) | set(self._marks))
        return self._targets

    def memory_bytes(self) -> int:
        """An estimate of what the index holds: arrays plus ring strings."""
        texts = sum(len(t) + 49 for t in self._texts) + 8 * len(self._texts)
        return self._offsets.itemsize * len(self._offsets) + len(self._flags) + len(self._frows) * 8 + texts

    # ------------------------------------------------------------------ appending
    def append(self, lines: Sequence[LineLike]) -> AppendResult:
        """Add a batch of lines (O(batch)); provisional progress updates replace their row in place.

        A line numbered at or below the last one means the file started over (truncated, rotated):
        appending stops there and `restart_at` says where; the caller clears and appends the rest.
        """
        result = AppendResult()
        if not lines:
            return result
        offsets = self._offsets
        flags = self._flags
        texts = self._texts
        frows = self._frows
        keep = self.filter
        widest = self.width
        for i, line in enumerate(lines):
            plain = line.plain
            if flags and flags[-1] & PROVISIONAL and offsets[-1] == line.offset:
                row = self.end - 1
                texts[-1] = plain
                self._read_cache.pop(row, None)
                kept = flags[-1] & ~(PROVISIONAL | TRUNCATED)
                flags[-1] = kept | (PROVISIONAL if line.progress else 0) | (TRUNCATED if line.truncated else 0)
                if len(plain) > widest:
                    widest = len(plain)
                result.replaced.append(row)
                continue
            row = self.end
            no = line.no
            if no <= self.last_no:  # numbering restarted: the file was truncated or replaced
                result.restart_at = i
                break
            if not self._pt_rows or no != row + self._pt_delta[-1]:
                self._pt_rows.append(row)
                self._pt_nos.append(no)
                self._pt_delta.append(no - row)
            self.last_no = no
            flag = PLAIN
            if line.progress:
                flag = PROGRESS | PROVISIONAL
            if line.truncated:
                flag |= TRUNCATED
            offsets.append(line.offset)
            flags.append(flag)
            texts.append(plain)
            self.end = row + 1
            if keep is not None and keep(row, flag):
                frows.append(row)
                self._hv_dirty = True
            if len(plain) > widest:
                widest = len(plain)
            result.added += 1
        self.width = widest
        if self._pending:
            ready = [ev for key, ev in list(self._pending.items()) if self._needs(ev) <= self.last_no
                     and self._pending.pop(key, None) is not None]
            if ready and self.add_events(ready):
                result.blocks_changed = True
        if len(texts) > 2 * self.ring:
            cut = len(texts) - self.ring
            del texts[:cut]
            self._text_base += cut
        if self.end - self.base > self.max_rows:
            result.pruned = self._prune(self.end - self.base - self.max_rows + self.max_rows // 8)
            result.blocks_changed = True
        return result

    def _prune(self, count: int) -> int:
        """Drop the oldest `count` rows (amortised: called with a chunk, not per row)."""
        count = min(count, self.rows)
        new_base = self.base + count
        del self._offsets[:count]
        del self._flags[:count]
        if self._text_base < new_base:
            cut = new_base - self._text_base
            del self._texts[:cut]
            self._text_base = new_base
        keep = bisect_right(self._pt_rows, new_base) - 1
        if keep > 0:
            del self._pt_rows[:keep], self._pt_nos[:keep], self._pt_delta[:keep]
        drop = bisect_left(self._block_starts, new_base)
        if drop:
            del self.blocks[:drop], self._block_starts[:drop]
        del self._marks[: bisect_left(self._marks, new_base)]
        self._targets = None
        for row in [r for r in self._target_summary if r < new_base]:
            del self._target_summary[row]
        if self.filter is not None:
            del self._frows[: bisect_left(self._frows, new_base)]
        self.base = new_base
        self._set_hidden([(max(a, new_base), b) for a, b in self._hidden if b >= new_base])
        self._read_cache.clear()
        return count

    # ------------------------------------------------------------------ events
    @staticmethod
    def _needs(event: EventLike) -> int:
        """The last line an event's spans name: it is applied once that line is appended."""
        spans = event.spans or ((event.line_no, event.line_no),)
        return max(b for _, b in spans)

    def add_events(self, events: Sequence[EventLike]) -> list[int]:
        """Mark rows from engine events; returns the rows whose rendering changed.

        Each occurrence of an event (its span) is marked: a one-line occurrence as a crash/warning row, a
        longer one as a traceback block (a copy, after the first). An event re-emitted under the same key
        (more ranks, detail lines) marks only what is new. An event for lines not yet appended waits.
        """
        changed: list[int] = []
        latest: dict[tuple[str, int], EventLike] = {}
        for event in events:  # an event re-emitted in the same batch: only its last state matters
            latest[(event.key or f"{event.kind}:{event.summary}", event.line_no)] = event
            kind = _KIND_CODES.get(str(event.kind), INFO)
            if kind in (PHASE, READY):  # where each phase began (every rank's line: the first one counts)
                name = "ready" if kind == READY else event.phase or event.summary
                if (name, event.line_no) not in self.phases[-64:]:
                    self.phases.append((name, event.line_no))
        for (key, _no), event in latest.items():
            kind = _KIND_CODES.get(str(event.kind), INFO)
            if kind in (PLAIN, INFO):
                continue
            if kind == CRASH:
                self.crash_events.add(event.line_no)
            elif kind == WARNING:
                self.warning_events.add(event.line_no)
            if self._needs(event) > self.last_no and len(self._pending) < _MAX_PENDING:
                self._pending[f"{key}\0{event.line_no}"] = event  # applied (again, whole) once its last line is appended
            self._apply(key, event, kind, changed)
        return changed

    def _apply(self, key: str, event: EventLike, kind: int, changed: list[int]) -> None:
        state = self._keyed.setdefault(key, _Keyed())
        spans = event.spans or ((event.line_no, event.line_no),)
        first_block: Block | None = None
        for i, (a, b) in enumerate(spans):
            b = min(b, self.last_no)
            if b < a or state.applied.get(a, a - 1) >= b:
                block = state.blocks.get(a)
                first_block = first_block or (block if i == 0 else None)
                continue
            done = state.applied.get(a)
            state.applied[a] = b
            ra = self.row_for_no(a)
            rb = self.row_for_no(b)
            if rb is None:
                continue  # pruned meanwhile
            if ra is None:
                ra = self.base
            if b == a and a not in state.blocks:  # a one-line occurrence (a rank's warning line)
                self._mark(ra, kind, event.summary, changed, spread(event.ranks, event.count))
                continue
            block = state.blocks.get(a)
            if block is not None:  # the occurrence grew (detail lines): extend it
                lo = block.end + 1
                if 0 <= block.end - self.base < len(self._flags):  # its old end may be pruned already
                    self._flags[block.end - self.base] &= ~BLOCK_END
                block.end = max(block.end, rb)
                self._mark_block_rows(lo, block.end, kind, changed)
            elif not self._overlaps(ra, rb):
                if done is not None and ra in self._marks:  # it was one line; detail lines made it a block
                    self._marks.remove(ra)
                block = Block(ra, rb, key, event.summary, event.line_no, copy=i > 0)
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
        if kind in (CRASH, WARNING) and event.count > len(spans) and all(a == b for a, b in spans):
            self._mark_more(state, event, kind, changed)
        if first_block is not None:
            first_block.event_summary = event.summary
            first_block.ranks = event.ranks
            first_block.count = max(event.count, 1)
            first_block.copies_folded = sum(1 for c in state.blocks.values() if c.folded)
            changed.append(first_block.start)
        for block in state.blocks.values():
            if block.copy:
                block.event_summary = event.summary

    def _mark_more(self, state: _Keyed, event: EventLike, kind: int, changed: list[int]) -> None:
        """A one-line event seen more often than the spans the engine keeps (MAX_SPANS): the later rows that
        carry its text are marked too, each re-emission scanning only the rows that came since the last."""
        body = event.summary.rstrip("…")
        if not body:
            return
        lo = max(state.scanned + 1, self._text_base, self.end - 5000, self.base)
        texts, tb, flags, base = self._texts, self._text_base, self._flags, self.base
        where = spread(event.ranks, event.count)
        for row in range(lo, self.end):
            if not flags[row - base] & KIND_MASK and body in texts[row - tb]:
                self._mark(row, kind, event.summary, changed, where)
        state.scanned = self.end - 1

    def _overlaps(self, lo: int, hi: int) -> bool:
        k = bisect_right(self._block_starts, hi)
        return k > 0 and self.blocks[k - 1].end >= lo

    def _mark_block_rows(self, lo: int, hi: int, kind: int, changed: list[int], *, block: bool = True) -> None:
        kind = kind if kind in (CRASH, WARNING) else CRASH
        for row in range(max(lo, self.base), hi + 1):
            i = row - self.base
            old = self._flags[i]
            new = (old & ~KIND_MASK & ~PROVISIONAL) | kind | ERRORISH | (BLOCK if block else 0)
            if block and row == hi:
                new |= BLOCK_END
            if new != old:
                self._flags[i] = new
                changed.append(row)
                self._refilter(row, new)

    def _mark(self, row: int, kind: int, summary: str, changed: list[int], where: str = "") -> None:
        i = row - self.base
        old = self._flags[i]
        new = (old & ~KIND_MASK) | kind
        if kind in (CRASH, WARNING):
            new |= ERRORISH
            k = bisect_left(self._marks, row)
            if k == len(self._marks) or self._marks[k] != row:
                self._marks.insert(k, row)
                self._targets = None
            self._target_summary[row] = f"{summary} {where}" if where else summary
        if new != old:
            self._flags[i] = new
            changed.append(row)
            self._refilter(row, new)

    def _refilter(self, row: int, flags: int) -> None:
        """A row's flags changed: a filter that reads them may show it now."""
        keep = self.filter
        if keep is None or self.hidden(row):
            return
        k = bisect_left(self._frows, row)
        there = k < len(self._frows) and self._frows[k] == row
        if keep(row, flags) and not there:
            self._frows.insert(k, row)
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
            firsts = [b for b in state.blocks.values() if not b.copy]
            for first in firsts:
                first.copies_folded = sum(1 for c in state.blocks.values() if c.folded)
        self._targets = None
        self._hv_dirty = True

    def _fold(self, block: Block, on: bool) -> None:
        """Hide a copy (and the blank lines just above it, the gap between two copies), or show it again."""
        first = block.start
        if on:
            while (first > self.base and block.start - first < 3 and not self._flags[first - 1 - self.base]
                   and not self.text(first - 1).strip() and not self.hidden(first - 1)):
                first -= 1
            block.fold_start = first
        else:
            first = block.fold_start
        block.folded = on
        ranges = [r for r in self._hidden if r[1] != block.end]
        if on:
            insort(ranges, (first, block.end))
        self._set_hidden([r for r in ranges if r[1] >= self.base])
        if self.filter is not None:
            lo = bisect_left(self._frows, first)
            hi = bisect_right(self._frows, block.end)
            if on:
                del self._frows[lo:hi]
            else:
                keep = self.filter
                self._frows[lo:lo] = array("Q", [r for r in range(max(first, self.base), block.end + 1)
                                                  if keep(r, self._flags[r - self.base])])
        self._hv_dirty = True

    def _set_hidden(self, ranges: list[tuple[int, int]]) -> None:
        self._hidden = ranges
        self._hid_pos = []
        self._hid_before = [0]
        for a, b in ranges:
            self._hid_pos.append(a - self.base - self._hid_before[-1])
            self._hid_before.append(self._hid_before[-1] + b - a + 1)
        self._hv_dirty = True

    def is_shown(self, row: int) -> bool:
        """Whether the view shows `row` (not folded, not filtered out)."""
        return self.base <= row < self.end and self._pos(row) is not None

    def hidden(self, row: int) -> bool:
        """Whether `row` is folded away."""
        k = bisect_right(self._hidden, (row, 1 << 62)) - 1
        return k >= 0 and self._hidden[k][0] <= row <= self._hidden[k][1]

    # ------------------------------------------------------------------ rows
    def row_for_no(self, no: int) -> int | None:
        """The row holding line `no` (1-based, as the follower numbers them), or None if not kept."""
        if not self._pt_rows or no > self.last_no:
            return None
        k = bisect_right(self._pt_nos, no) - 1
        if k < 0:
            return None
        row = no - self._pt_delta[k]
        nxt = self._pt_rows[k + 1] if k + 1 < len(self._pt_rows) else self.end
        row = min(row, nxt - 1)
        return row if self.base <= row < self.end else None

    def no_for_row(self, row: int) -> int:
        """The line number of `row`."""
        k = bisect_right(self._pt_rows, row) - 1
        return row + self._pt_delta[max(k, 0)] if self._pt_delta else row + 1

    def flags(self, row: int) -> int:
        """The flag byte of `row`."""
        return self._flags[row - self.base]

    def block_at(self, row: int) -> Block | None:
        """The block containing `row`, if any."""
        k = bisect_right(self._block_starts, row) - 1
        if k >= 0:
            block = self.blocks[k]
            if block.start <= row <= block.end:
                return block
        return None

    def text(self, row: int) -> str:
        """The plain text of `row`: from the ring, else read back from the file."""
        if row >= self._text_base:
            return self._texts[row - self._text_base]
        cached = self._read_cache.get(row)
        if cached is not None:
            return cached
        text = self._read_back(row)
        if len(self._read_cache) >= 4096:
            self._read_cache.clear()
        self._read_cache[row] = text
        return text

    def texts(self, lo: int, hi: int) -> Iterator[tuple[int, str]]:
        """(row, text) of rows [lo, hi) in order; rows out of the ring read from the file in 1 MiB chunks."""
        lo = max(lo, self.base)
        split = min(hi, self._text_base)
        row = lo
        fd = self._open_fd() if row < split else None
        while row < split:
            row = max(row, self.base)  # rows pruned while the caller was away are skipped
            if fd is None:
                yield row, self.text(row)
                row += 1
                continue
            start = self._offsets[row - self.base]
            want = self._offsets[min(split, self.end - 1) - self.base] - start + _READ_CAP
            try:
                chunk = os.pread(fd, max(1, min(_SCAN_CHUNK, want)), start)
            except OSError:
                chunk = b""
            last = row
            while last < split and last >= self.base and last + 1 < self.end and self._offsets[last + 1 - self.base] - start <= len(chunk):
                s = self._offsets[last - self.base] - start
                e = self._offsets[last + 1 - self.base] - start
                raw = chunk[s:e].split(b"\n", 1)[0]
                yield last, strip_ansi(clean_raw(raw, _READ_CAP)[0].decode("utf-8", "replace"))
                last += 1
            if last == row:  # a line longer than the chunk (or the file's last line)
                yield row, self.text(row)
                last += 1
            row = last
        for r in range(max(row, self._text_base), min(hi, self.end)):
            if r >= self.base:
                yield r, self._texts[r - self._text_base]

    def _open_fd(self) -> int | None:
        if self._fd is None and self._path is not None:
            try:
                self._fd = os.open(self._path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO swapped in never blocks the UI
            except OSError:
                return None
        return self._fd

    def _read_back(self, row: int) -> str:
        i = row - self.base
        fd = self._open_fd()
        if fd is None:
            return f"(line {self.no_for_row(row)} is no longer in memory and the log file is not readable)"
        start = self._offsets[i]
        size = _READ_CAP
        if i + 1 < len(self._offsets) and self._offsets[i + 1] > start:
            size = min(size, self._offsets[i + 1] - start)
        try:
            raw = os.pread(fd, size, start)
        except OSError as err:
            return f"(line {self.no_for_row(row)} could not be read back: {err.strerror})"
        cut = raw.find(b"\n")
        if cut >= 0:
            raw = raw[:cut]
        visible, _ = clean_raw(raw, _READ_CAP)
        return strip_ansi(visible.decode("utf-8", "replace"))

    # ------------------------------------------------------------------ view
    def set_filter(self, keep: Keep | None, rows: array[int] | None = None) -> None:
        """Show only the rows `keep` accepts (None: every row but the folded ones). `rows`: the rows it keeps,
        already computed (`symmtui.ui.widgets.log_filters.build` does it in slices); else computed here."""
        self.filter = keep
        self._frows = array("Q")
        if keep is not None:
            flags = self._flags
            base = self.base
            if rows is None and isinstance(keep, ErrorsOnly):  # the flag's top bit: one regex over the bytes
                rows = array("Q", (base + m.start() for m in re.finditer(rb"[\x80-\xff]", flags)))
            elif rows is None:
                rows = array("Q", (base + i for i, f in enumerate(flags) if keep(base + i, f)))
            self._frows = array("Q", (r for r in rows if self.base <= r < self.end and not self.hidden(r)))
        self._hv_dirty = True

    def set_errors_only(self, on: bool) -> None:
        """Show only crash/warning/block rows (and block summaries) in the view."""
        self.set_filter(errors_filter() if on else None)

    def _shown(self) -> int:
        """Rows the view shows (summary rows not counted)."""
        return len(self._frows) if self.filter is not None else self.rows - self._hid_before[-1]

    def _pos(self, row: int) -> int | None:
        """The position of `row` among the rows shown (summary rows not counted), None if not shown."""
        if self.filter is not None:
            k = bisect_left(self._frows, row)
            return k if k < len(self._frows) and self._frows[k] == row else None
        k = bisect_right(self._hidden, (row, 1 << 62)) - 1
        if k >= 0 and row <= self._hidden[k][1]:
            return None
        return row - self.base - self._hid_before[k + 1]

    def _row_at(self, pos: int) -> int:
        if self.filter is not None:
            return self._frows[pos]
        k = bisect_right(self._hid_pos, pos)
        return self.base + pos + self._hid_before[k]

    def _view_heads(self) -> list[int]:
        if self._hv_dirty:
            hv: list[int] = []
            shown: list[int] = []
            for k, block in enumerate(self.blocks):
                if block.folded:
                    continue
                pos = self._pos(block.start)
                if pos is None:
                    if self.filter is None:
                        continue
                    pos = bisect_left(self._frows, block.start)  # a filter hides its first row: still a head
                    if pos >= len(self._frows) or self._frows[pos] > block.end:
                        continue  # none of its rows shown
                hv.append(pos + len(hv))
                shown.append(k)
            self._hv, self._vblocks = hv, shown
            self._hv_dirty = False
        return self._hv

    def view_len(self) -> int:
        """Rows in the view, summary rows included."""
        return self._shown() + len(self._view_heads())

    def view_entry(self, y: int) -> tuple[bool, int]:
        """What view line `y` shows: (True, block index) for a summary row, else (False, row)."""
        hv = self._view_heads()
        k = bisect_right(hv, y) - 1
        if k >= 0 and hv[k] == y:
            return True, self._vblocks[k]
        return False, self._row_at(y - (k + 1))

    def view_y(self, row: int, *, summary: bool = False) -> int | None:
        """The view line of `row` (of its block's summary row when `summary`), None if filtered out."""
        if not self.base <= row < self.end:
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

    # ------------------------------------------------------------------ search
    def view_rows(self, start: int, forward: bool) -> Iterator[int]:
        """Rows of the view from `start` (inclusive) in one direction, without wrapping."""
        if self.filter is not None:
            pos = bisect_left(self._frows, start)
            if forward:
                yield from (self._frows[i] for i in range(pos, len(self._frows)))
            else:
                if pos < len(self._frows) and self._frows[pos] == start:
                    pos += 1
                yield from (self._frows[i] for i in range(pos - 1, -1, -1))
            return
        rows = range(max(start, self.base), self.end) if forward else range(min(start, self.end - 1), self.base - 1, -1)
        if not self._hidden:
            yield from rows
            return
        yield from (r for r in rows if not self.hidden(r))

    def find(self, needle: str, start: int, *, forward: bool = True) -> int | None:
        """The next row (from `start`, inclusive, wrapping once) whose text contains `needle`.

        Smart case: a needle without capitals matches any case. Rows outside the ring are scanned in
        the file in 1 MiB chunks, not line by line.
        """
        for found in self.find_steps(needle, start, forward=forward):
            if found is not None:
                return found
        return None

    def find_steps(self, needle: str, start: int, *, forward: bool = True) -> Iterator[int | None]:
        """`find` in slices: yields None after every `scan_yield_bytes` of file scanned, then the row if found.

        Between slices the caller may append (and prune); rows dropped meanwhile are skipped.
        """
        if not needle or self.rows == 0:
            return
        start = max(self.base, min(start, self.end - 1))
        if forward:
            spans = [(start, self.end), (self.base, start)]
        else:
            spans = [(self.base, start + 1), (start + 1, self.end)]
        for lo, hi in spans:
            while lo < hi:
                found = yield from self._find_in(needle, lo, hi, forward)
                if found is None:
                    break
                if not self.hidden(found):
                    yield found
                    return
                if forward:  # in a folded copy: search on past it
                    lo = found + 1
                else:
                    hi = found

    def _find_in(self, needle: str, lo: int, hi: int, forward: bool) -> Generator[None, None, int | None]:
        fold = needle == needle.lower()
        probe = needle.lower() if fold else needle
        lo = max(lo, self.base)
        if lo >= hi:
            return None
        if self.filter is not None:
            for r in [r for r in self.view_rows(lo if forward else hi - 1, forward) if lo <= r < hi]:
                text = self.text(r)
                if probe in (text.lower() if fold else text):
                    return r
            return None
        split = self._text_base
        parts: list[tuple[bool, int, int]] = []  # (in the file?, lo, hi)
        if lo < min(hi, split):
            parts.append((True, lo, min(hi, split)))
        if max(lo, split) < hi:
            parts.append((False, max(lo, split), hi))
        if not forward:
            parts.reverse()
        for in_file, a, b in parts:
            if in_file:
                found = yield from self._find_in_file(probe, fold, a, b, forward)
            else:
                found = self._find_in_memory(probe, fold, a, b, forward)
            if found is not None:
                return found
        return None

    def _find_in_memory(self, probe: str, fold: bool, lo: int, hi: int, forward: bool) -> int | None:
        """Scan rows [lo, hi) without yielding (the ring is small); rows that left the ring are read back."""
        lo = max(lo, self.base)
        texts = self._texts
        tb = self._text_base
        for r in range(lo, hi) if forward else range(hi - 1, lo - 1, -1):
            text = texts[r - tb] if r >= tb else self.text(r)
            if probe in (text.lower() if fold else text):
                return r
        return None

    def _find_in_file(self, probe: str, fold: bool, lo: int, hi: int,
                      forward: bool) -> Generator[None, None, int | None]:
        """Scan the file bytes of rows [lo, hi) in chunks; a hit is mapped to its row and confirmed."""
        fd = self._open_fd()
        if fd is None:
            return None
        needle = probe.encode()
        ascii_fold = probe.isascii() or not fold  # bytes.lower() folds ASCII only
        overlap = len(needle) - 1
        stop = self._offsets[hi - self.base] if hi < self.end else self._offsets[-1] + _READ_CAP
        pos = self._offsets[lo - self.base] if forward else stop
        scanned = 0
        while True:
            if lo < self.base:  # pruned while we were away
                lo = self.base
            if lo >= hi or lo >= self.end:
                return None
            start = self._offsets[lo - self.base]
            if forward:
                pos = max(pos, start)
                if pos >= stop:
                    return None
                a, b = pos, min(stop, pos + _SCAN_CHUNK)
                read_at, size = a, b - a + overlap
            else:
                if pos <= start:
                    return None
                a, b = max(start, pos - _SCAN_CHUNK), pos
                read_at = max(start, a - overlap)
                size = b - read_at
            try:
                chunk = os.pread(fd, size, read_at)
            except OSError:
                return None
            if not chunk:
                return None
            if b"\x1b" in chunk or b"\x00" in chunk or not ascii_fold:
                # escapes or NULs can split a visible match: clean each row of the chunk instead
                found = self._scan_rows(chunk, read_at, a, b, probe, fold, lo, hi, forward)
            else:
                hay = chunk.lower() if fold else chunk
                found = self._confirm_hits(hay, needle, read_at, probe, fold, lo, hi, forward)
            if found is not None:
                return found if found >= 0 else None
            pos = b if forward else a
            scanned += size
            if scanned >= self.scan_yield_bytes:
                scanned = 0
                yield None

    def _scan_rows(self, chunk: bytes, at: int, a: int, b: int, probe: str, fold: bool,
                   lo: int, hi: int, forward: bool) -> int | None:
        """Rows of [lo, hi) that overlap bytes [a, b) of the file (`chunk` was read at `at`), cleaned one by one.

        A row cut by the chunk's edges is read back whole, so a match is found whichever chunk sees it.
        """
        base = self.base
        offsets = self._offsets
        r0 = max(lo, base + bisect_right(offsets, a) - 1)
        r1 = min(hi, base + bisect_left(offsets, b))
        for r in range(r0, r1) if forward else range(r1 - 1, r0 - 1, -1):
            s = offsets[r - base] - at
            e = offsets[r + 1 - base] - at if r + 1 < self.end else len(chunk) + 1
            if s >= 0 and e <= len(chunk):
                raw = chunk[s:e].split(b"\n", 1)[0]
                text = strip_ansi(clean_raw(raw, _READ_CAP)[0].decode("utf-8", "replace"))
            else:
                text = self.text(r)
            if probe in (text.lower() if fold else text):
                return r
        return None

    def _confirm_hits(self, hay: bytes, needle: bytes, at: int, probe: str, fold: bool,
                      lo: int, hi: int, forward: bool) -> int | None:
        """The first hit in `hay` (read at file offset `at`) on a row in [lo, hi) whose cleaned text matches.

        Returns the row, -1 when the hits ran past the range (stop searching), None to read on.
        """
        offsets = self._offsets
        base = self.base
        hit = hay.find(needle) if forward else hay.rfind(needle)
        while hit >= 0:
            row = base + bisect_right(offsets, at + hit) - 1
            if not lo <= row < hi:
                if (forward and row >= hi) or (not forward and row < lo):
                    return -1
            elif probe in (self.text(row).lower() if fold else self.text(row)):
                return row
            if forward:
                nxt = row + 1
                if nxt >= self.end:
                    return -1
                hit = hay.find(needle, max(offsets[nxt - base] - at, hit + 1))
            else:  # a match never spans a newline: the next candidate lies wholly before this row
                cut = offsets[row - base] - at
                if cut <= 0:
                    return None
                hit = hay.rfind(needle, 0, cut)
        return None
