"""The log pane's Textual-free line index: bounded rows, a ring of recent text, pread for older lines, blocks, view.

Memory per row is 9 bytes (an `array('Q')` of byte offsets plus one flag byte); the text of the last
`ring` rows stays in memory, older rows are read back from the file with `os.pread` when they come
into view. Past `max_rows` rows the oldest are dropped in chunks, so memory is bounded whatever the
log's size. Line numbers are stored as run-length "points" (a row's number is its index plus a
delta that only changes when the numbering jumps), not one integer per row.

Traceback blocks are recognised here (a display grouping, like a syntax highlighter: the engine's
events name what they mean), so every traceback shows as one block under a summary row even
before, or without, an engine event. Engine events (`add_events`) mark rows with their kind, give
a block its summary and ranks, and build the error list that n/N walk through.

The view is what the widget scrolls over: every row (or only the error rows when filtered), with
one summary pseudo-row inserted above each block.
"""

from __future__ import annotations

import os
import re
from array import array
from bisect import bisect_left, bisect_right, insort
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from symmtui.core import tracebacks
from symmtui.core.decode import clean_raw, strip_ansi
from symmtui.core.lineparts import split_prefix
from symmtui.core.rules import mask_quoted

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
    "EventLike",
    "LineIndex",
    "LineLike",
]

# Flag byte layout: bits 0-2 the kind, then markers.
PLAIN, CRASH, WARNING, READY, PHASE, PROGRESS, INFO = range(7)
KIND_MASK = 0x07
BLOCK = 0x08  # the row is part of a traceback block
BLOCK_END = 0x10  # the block's exception line ("KeyError: 12")
TRUNCATED = 0x20  # the line was cut at the follower's cap
PROVISIONAL = 0x40  # a carriage-return progress update that the next item at its offset replaces
ERRORISH = 0x80  # shown by the errors-only filter: crash, warning or block rows

KIND_NAMES: dict[int, str] = {
    PLAIN: "plain", CRASH: "crash", WARNING: "warning", READY: "ready",
    PHASE: "phase", PROGRESS: "progress", INFO: "info",
}
_KIND_CODES: dict[str, int] = {name: code for code, name in KIND_NAMES.items()}

_TRACEBACK = tracebacks.HEADER
_MAX_BLOCK_ROWS = 400
_READ_CAP = 16 * 1024  # bytes read back per line
_SCAN_CHUNK = 1 << 20
_MAX_PENDING = 10_000  # events for lines not yet appended


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


@dataclass
class Block:
    """A traceback block: rows `start`..`end` (absolute row ids, inclusive) under one summary row."""

    start: int
    end: int
    closed: bool = False
    frames: int = 0
    exc_line: str = ""
    location: str = ""
    event_summary: str = ""
    ranks: frozenset[int] = field(default_factory=frozenset)
    count: int = 1

    def summary(self) -> str:
        """The summary row's text, e.g. ``KeyError: 12 at torch_symm_mem.py:83 (8 ranks)``."""
        if self.event_summary:
            text = self.event_summary
        elif self.exc_line:
            text = self.exc_line[:160] + (f" at {self.location}" if self.location else "")
        else:
            text = "Traceback (still being written)" if not self.closed else "Traceback with no exception line"
            text += f" at {self.location}" if self.location else ""
        if len(self.ranks) > 1:
            text += f" ({len(self.ranks)} ranks)"
        elif self.count > 1:
            text += f" ({self.count} times)"
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


class LineIndex:
    """Rows of one log, with bounded memory; see the module docstring."""

    def __init__(self, *, ring: int = 20_000, max_rows: int = 5_000_000) -> None:
        if ring < 1 or max_rows < ring:
            raise ValueError("need 1 <= ring <= max_rows")
        self.ring = ring
        self.max_rows = max_rows
        self.scan_yield_bytes = 2 << 20  # find_steps yields after this much file scanned
        self._path: Path | None = None
        self._fd: int | None = None
        self._read_cache: dict[int, str] = {}
        self.clear()

    # ------------------------------------------------------------------ state
    def clear(self) -> None:
        """Forget every row (the file stays set)."""
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
        self._open: Block | None = None
        self.targets: list[int] = []  # n/N stops: block starts and crash/warning rows
        # distinct engine events (line of first occurrence): a traceback from 8 ranks is ONE event
        self.crash_events: set[int] = set()
        self.warning_events: set[int] = set()
        self._target_summary: dict[int, str] = {}
        self._pending: dict[int, EventLike] = {}
        self._merged: dict[str, Block] = {}  # engine summary -> the block its event points at
        self._scanned: dict[tuple[str, int], int] = {}  # merged event -> last row searched for copies
        self.errors_only = False
        self._frows: array[int] = array("Q")
        self._hv: list[int] = []  # view position of each block's summary row
        self._hv_dirty = False
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
        errors_only = self.errors_only
        pending = self._pending
        widest = self.width
        for i, line in enumerate(lines):
            plain = line.plain
            if flags and flags[-1] & PROVISIONAL and offsets[-1] == line.offset:
                row = self.end - 1
                texts[-1] = plain
                keep = flags[-1] & ~(PROVISIONAL | TRUNCATED)
                flags[-1] = keep | (PROVISIONAL if line.progress else 0) | (TRUNCATED if line.truncated else 0)
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
            # traceback blocks
            if self._open is not None:
                flag = self._continue_block(self._open, row, plain, flag, result)
            if self._open is None and _TRACEBACK in plain and tracebacks.header_at(mask_quoted(plain)) >= 0:
                self._open = Block(start=row, end=row)
                flag = (flag & ~KIND_MASK) | CRASH | BLOCK | ERRORISH
            offsets.append(line.offset)
            flags.append(flag)
            texts.append(plain)
            if errors_only and flag & ERRORISH:
                frows.append(row)
            if len(plain) > widest:
                widest = len(plain)
            self.end = row + 1
            result.added += 1
            if pending and no in pending:
                self.add_events([pending.pop(no)])
        self.width = widest
        if len(texts) > 2 * self.ring:
            cut = len(texts) - self.ring
            del texts[:cut]
            self._text_base += cut
        if self.end - self.base > self.max_rows:
            result.pruned = self._prune(self.end - self.base - self.max_rows + self.max_rows // 8)
            result.blocks_changed = True
        return result

    def _continue_block(self, block: Block, row: int, plain: str, flag: int, result: AppendResult) -> int:
        """Extend or close the open traceback block with the row being appended; returns its flag."""
        # The engine's traceback classifier (symmtui.core.tracebacks), on the line's message part.
        body = split_prefix(plain).body
        stripped = body.strip()
        inside = False
        exc = None
        if tracebacks.is_continuation(body) and stripped:
            inside = True
            loc = tracebacks.frame_location(body)
            if loc is not None:
                block.location = loc
                block.frames += 1
        elif tracebacks.is_chain(body):
            inside = True
        elif block.frames and stripped:
            exc = stripped if tracebacks.is_exception_line(stripped) else tracebacks.exception_inside(stripped)
        if exc is not None:
            block.end = row
            block.exc_line = exc
            self._close_block(block, result)
            return (flag & ~KIND_MASK) | CRASH | BLOCK | BLOCK_END | ERRORISH
        if inside and row - block.start < _MAX_BLOCK_ROWS:
            block.end = row
            return (flag & ~KIND_MASK) | CRASH | BLOCK | ERRORISH
        self._close_block(block, result)
        return flag

    def close_open_block(self) -> AppendResult:
        """Close a traceback still being written (end of the log, process gone)."""
        result = AppendResult()
        if self._open is not None:
            self._close_block(self._open, result)
        return result

    def _close_block(self, block: Block, result: AppendResult) -> None:
        """A block is complete: it gets its summary row (if it had frames) and becomes an n/N stop."""
        self._open = None
        block.closed = True
        block.start = max(block.start, self.base)  # its first rows may have been pruned meanwhile
        if not block.frames:  # a quoted "Traceback (...)" header, not a traceback: the line stays red
            self._add_target(block.start)
            return
        k = len(self.blocks)
        self.blocks.append(block)
        self._block_starts.append(block.start)
        self._add_target(block.start)
        if not self._hv_dirty:
            if self.errors_only:
                pos = bisect_left(self._frows, block.start)
            else:
                pos = block.start - self.base
            self._hv.append(pos + k)
        result.blocks_changed = True
        result.inserted.append(self.view_y(block.start, summary=True) or 0)

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
            for key in [k for k, b in self._merged.items() if b.start < new_base]:
                del self._merged[key]
        del self.targets[: bisect_left(self.targets, new_base)]
        for row in [r for r in self._target_summary if r < new_base]:
            del self._target_summary[row]
        if self.errors_only:
            del self._frows[: bisect_left(self._frows, new_base)]
        self.base = new_base
        self._read_cache.clear()
        self._hv_dirty = True
        return count

    # ------------------------------------------------------------------ events
    def add_events(self, events: Sequence[EventLike]) -> list[int]:
        """Mark rows with engine events; returns the rows whose rendering changed.

        An event re-emitted with a larger count (the same error from another rank) also marks the
        later lines that carry the same message, so every rank's copy is coloured and is an n/N stop.
        """
        changed: list[int] = []
        latest: dict[tuple[str, str, int], EventLike] = {}
        for event in events:  # an event re-emitted in the same batch: only its last state matters
            latest[(str(event.kind), event.summary, event.line_no)] = event
        for event in latest.values():
            kind = _KIND_CODES.get(str(event.kind), INFO)
            if kind in (PLAIN, INFO):
                continue
            if kind == CRASH:
                self.crash_events.add(event.line_no)
            elif kind == WARNING:
                self.warning_events.add(event.line_no)
            row = self.row_for_no(event.line_no)
            if row is None:
                if event.line_no > self.last_no and len(self._pending) < _MAX_PENDING:
                    self._pending[event.line_no] = event
                continue
            block = self.block_at(row)
            if block is not None:
                if kind in (CRASH, WARNING):
                    if block is self._open:  # the engine closed it (end of log, process gone)
                        self._close_block(block, AppendResult())
                    block.event_summary = event.summary
                    self._merged.setdefault(event.summary, block)
                    block.ranks = event.ranks
                    block.count = max(event.count, 1)
                    changed.append(block.start)
                continue
            summary = event.summary
            if len(event.ranks) > 1:
                summary += f" ({len(event.ranks)} ranks)"
            elif event.count > 1:
                summary += f" ({event.count} times)"
            self._mark(row, kind, summary, changed)
            if kind in (CRASH, WARNING) and event.count > 1:
                body = event.summary.rstrip("…")
                key = (body, event.line_no)
                if body:
                    # each re-emission scans only the rows that arrived since the last one
                    after = max(row, self._scanned.get(key, row))
                    for other in self._recent_rows_containing(body, after=after):
                        self._mark(other, kind, summary, changed)
                    self._scanned[key] = self.end - 1
        return changed

    def _mark(self, row: int, kind: int, summary: str, changed: list[int]) -> None:
        i = row - self.base
        old = self._flags[i]
        new = (old & ~KIND_MASK) | kind
        if kind in (CRASH, WARNING):
            new |= ERRORISH
            self._add_target(row)
            self._target_summary[row] = summary
            if self.errors_only and not old & ERRORISH:
                insort(self._frows, row)
                self._hv_dirty = True
        if new != old:
            self._flags[i] = new
            changed.append(row)

    def _add_target(self, row: int) -> None:
        k = bisect_left(self.targets, row)
        if k == len(self.targets) or self.targets[k] != row:
            self.targets.insert(k, row)

    def _recent_rows_containing(self, body: str, *, after: int, limit: int = 5000) -> list[int]:
        """Unmarked in-memory rows after `after` (the newest `limit`) whose text contains `body`."""
        lo = max(after + 1, self._text_base, self.end - limit)
        texts = self._texts
        tb = self._text_base
        flags = self._flags
        base = self.base
        return [r for r in range(lo, self.end) if not flags[r - base] & KIND_MASK and body in texts[r - tb]]

    def block_summary(self, block: Block) -> str:
        """A block's summary row; a copy of an error the engine merged says which line holds it."""
        if not block.event_summary:
            first = self._merged.get(block.summary())
            if first is not None and first is not block and first.start < block.start:
                spread = f", {len(first.ranks)} ranks" if len(first.ranks) > 1 else ""
                return f"{block.summary()} (same as line {self.no_for_row(first.start):,}{spread})"
        return block.summary()

    def target_summary(self, row: int) -> str:
        """What n/N shows for a stop: the block's or event's summary, else the line itself."""
        block = self.block_at(row)
        if block is not None and block.start == row:
            return self.block_summary(block)
        return self._target_summary.get(row) or self.text(row).strip()[:200]

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
        current = self._open
        if current is not None and current.start <= row <= current.end:
            return current
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
    def set_errors_only(self, on: bool) -> None:
        """Show only crash/warning/block rows (and block summaries) in the view."""
        self.errors_only = on
        self._frows = array("Q")
        if on:
            flags = self._flags
            base = self.base
            self._frows.extend(base + m.start() for m in re.finditer(rb"[\x80-\xff]", flags))
        self._hv_dirty = True

    def _view_heads(self) -> list[int]:
        if self._hv_dirty:
            if self.errors_only:
                self._hv = [bisect_left(self._frows, s) + k for k, s in enumerate(self._block_starts)]
            else:
                self._hv = [s - self.base + k for k, s in enumerate(self._block_starts)]
            self._hv_dirty = False
        return self._hv

    def view_len(self) -> int:
        """Rows in the view, summary rows included."""
        base_len = len(self._frows) if self.errors_only else self.rows
        return base_len + len(self.blocks)

    def view_entry(self, y: int) -> tuple[bool, int]:
        """What view line `y` shows: (True, block index) for a summary row, else (False, row)."""
        hv = self._view_heads()
        k = bisect_right(hv, y) - 1
        if k >= 0 and hv[k] == y:
            return True, k
        pos = y - (k + 1)
        if self.errors_only:
            return False, self._frows[pos]
        return False, self.base + pos

    def view_y(self, row: int, *, summary: bool = False) -> int | None:
        """The view line of `row` (of its block's summary row when `summary`), None if filtered out."""
        if not self.base <= row < self.end:
            return None
        hv = self._view_heads()
        if summary:
            k = bisect_left(self._block_starts, row)
            if k < len(self._block_starts) and self._block_starts[k] == row:
                return hv[k]
        if self.errors_only:
            pos = bisect_left(self._frows, row)
            if pos >= len(self._frows) or self._frows[pos] != row:
                return None
        else:
            pos = row - self.base
        return pos + bisect_right(self._block_starts, row)

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
        if self.errors_only:
            pos = bisect_left(self._frows, start)
            if forward:
                yield from (self._frows[i] for i in range(pos, len(self._frows)))
            else:
                if pos < len(self._frows) and self._frows[pos] == start:
                    pos += 1
                yield from (self._frows[i] for i in range(pos - 1, -1, -1))
        elif forward:
            yield from range(max(start, self.base), self.end)
        else:
            yield from range(min(start, self.end - 1), self.base - 1, -1)

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
            found = yield from self._find_in(needle, lo, hi, forward)
            if found is not None:
                yield found
                return

    def _find_in(self, needle: str, lo: int, hi: int, forward: bool) -> Generator[None, None, int | None]:
        fold = needle == needle.lower()
        probe = needle.lower() if fold else needle
        lo = max(lo, self.base)
        if lo >= hi:
            return None
        if self.errors_only:
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
