"""The log pane's search and filters over the whole file, run on a worker thread: the rows a pattern matches, the
rows the filters keep (lnav's ``:filter-in`` / ``:filter-out``, records kept whole), the next match from a row.

Every pattern the user types is compiled by RE2 (``symmtui.patterns.compile_user``): a lower-case pattern matches
any case (smart case), a search that is no valid regex is searched as the text typed. The file is read in chunks
of rows (``LogFile.chunks``); a chunk of plain bytes is searched as it is (a match's byte offset gives its row),
a chunk with escapes, carriage returns or NULs as the text the pane shows, its rows joined, in the same way.

A filter judges records, not lines (lnav's multi-line messages): a line that starts no record (no prefix the one
prefix parser, ``symmtui.logs.lineparts``, knows) continues the record above, and a traceback (an event's span:
a block) is one record. A filter-in keeps every record one of its patterns matches somewhere; a filter-out hides
every record one of its patterns matches. In a file whose lines carry no prefix, each line is a record.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence

from msgspec import Struct

from symmtui.logs.lineparts import split_prefix
from symmtui.patterns import PatternError, UserPattern, compile_user
from symmtui.ui.widgets import log_file
from symmtui.ui.widgets.log_file import LogFile

__all__ = ["MAX_RECORD", "FilterRule", "Found", "Records", "compile_search", "count", "find", "keep", "matching"]

MAX_RECORD = 400
"""Lines a record spans at most (the engine closes a traceback longer than this as incomplete)."""
PIECE = 64 << 10  # bytes of lines one RE2 call matches at most (see matching)
SAMPLE = 2_000  # rows looked at to tell whether a file's lines carry prefixes


class FilterRule(Struct, frozen=True):
    """One regex filter: ``include`` (filter-in) or not (filter-out)."""

    include: bool
    pattern: str
    rx: UserPattern

    @classmethod
    def parse(cls, include: bool, pattern: str) -> FilterRule:
        """A rule from what the user typed; PatternError (one line) for an empty or unusable regex."""
        if not pattern:
            raise PatternError("an empty pattern filters nothing")
        what = "filter-in" if include else "filter-out"
        return cls(include, pattern, compile_user(pattern, what=what, ignore_case=pattern == pattern.lower(),
                                                  lines=True))

    @property
    def chip(self) -> str:
        """``in /TP3/`` or ``out /GET \\/health/``."""
        return f"{'in' if self.include else 'out'} /{self.pattern}/"


def compile_search(text: str) -> tuple[UserPattern, bool]:
    """The search's pattern for ``text`` (smart case) and whether it is a regex (else the text itself)."""
    fold = text == text.lower()
    try:
        return compile_user(text, what="search", ignore_case=fold, lines=True), True
    except PatternError:
        return compile_user(text, what="search", ignore_case=fold, lines=True, literal=True), False


Seen = Callable[[int, bytes, bool, bool], None]
"""``seen(first, data, plain, exact)``: the chunk of rows from ``first`` that a scan read (``LogFile.chunks``)."""


def matching(rx: UserPattern, file: LogFile, lo: int, hi: int, seen: Seen | None = None,
             stopped: Callable[[], bool] = lambda: False) -> Iterator[tuple[int, list[int]]]:
    """``(stop, rows)`` for each chunk of rows [lo, hi) read: the rows before ``stop`` that ``rx`` matches.

    A chunk is matched a PIECE of lines at a time, ``stopped`` asked before each: one RE2 call over a megabyte
    costs up to 20 s with a costly pattern (``(.*a){1000}z``), over a piece a second at most, so a new filter, a
    quit or a signal never waits on a pattern for long. Stopped, it ends without the chunk."""
    starts = file.starts
    for first, last, data, plain, exact in file.chunks(lo, hi):
        if seen is not None:
            seen(first, data, plain, exact)
        if not plain:  # the text the pane shows, its rows joined as UTF-8: searched as a plain chunk's bytes are
            data, exact = "\n".join(log_file.shown(data, plain, exact)).encode(), False
        rows: list[int] = []
        base = starts[first]
        local = None if exact else _local_starts(data)
        prev = -1
        for at0, piece in _pieces(data):
            if stopped():
                return
            inner = at0 + len(piece) < len(data)  # not the last piece: its end is the next one's start
            for hit in rx.line_hits(piece):
                if inner and hit == len(piece):
                    continue  # an empty match after the piece's last newline: the next piece judges that spot
                at = at0 + hit
                row = (bisect_right(starts, base + at, first, last) - 1) if local is None else \
                    first + bisect_right(local, at) - 1
                if row != prev:
                    rows.append(row)
                    prev = row
        yield last, rows


def _pieces(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``data`` cut after a newline every PIECE bytes or so: (offset, piece); one piece at least (an empty row)."""
    at = 0
    while True:
        cut = data.find(b"\n", at + PIECE)
        end = len(data) if cut < 0 else cut + 1
        yield at, data[at:end] if at or end < len(data) else data
        if end >= len(data):
            return
        at = end


def _local_starts(data: bytes) -> list[int]:
    out = [0]
    i = data.find(b"\n")
    while i >= 0:
        out.append(i + 1)
        i = data.find(b"\n", i + 1)
    return out


class Found(Struct):
    """What a scan has found so far: the new rows since the last report, the rows judged, whether it is done."""

    rows: list[int]
    judged: int
    done: bool


Wait = Callable[[], bool]
"""Block until the file may have grown; False when the scan is to stop."""


def count(rx: UserPattern, file: LogFile, wait: Wait, stopped: Callable[[], bool], *,
          every: int = 1 << 22) -> Iterator[Found]:
    """Every row ``rx`` matches, from the first; a report after about ``every`` bytes, one when caught up (``done``),
    then more as the file grows (until ``wait`` says stop)."""
    pos = 0
    while True:
        found: list[int] = []
        size = 0
        rows = file.rows if file.indexed else file.filled
        for stop, hits in matching(rx, file, pos, rows, stopped=stopped):
            found += hits
            size += file.stop_of(stop - 1) - file.starts[pos] if stop > pos else 0
            pos = stop
            if stopped():
                return
            if size >= every:
                yield Found(found, pos, False)
                found, size = [], 0
        if stopped():
            return
        pos = max(pos, rows)
        yield Found(found, pos, file.indexed)
        if not wait():
            return


def find(rx: UserPattern, file: LogFile, start: int, forward: bool, shown: Callable[[int], bool],
         stopped: Callable[[], bool], *, step: int = 20_000) -> int | None:
    """The first row from ``start`` (inclusive, wrapping once) that ``rx`` matches and ``shown`` accepts."""
    n = file.rows
    if not n:
        return None
    start = max(0, min(start, n - 1))
    spans = [(start, n), (0, start)] if forward else [(0, start + 1), (start + 1, n)]
    for lo, hi in spans:
        if forward:
            for a in range(lo, hi, step):
                for _stop, rows in matching(rx, file, a, min(hi, a + step), stopped=stopped):
                    for row in rows:
                        if shown(row):
                            return row
                if stopped():
                    return None
        else:
            for b in range(hi, lo, -step):
                hits = [row for _stop, rows in matching(rx, file, max(lo, b - step), b, stopped=stopped)
                        for row in rows]
                if stopped():
                    return None
                for row in reversed(hits):
                    if shown(row):
                        return row
                if stopped():
                    return None
    return None


class Records:
    """Where the record holding a row starts and ends (see the module docstring), with what it learnt cached."""

    def __init__(self, file: LogFile, blocks: Sequence[tuple[int, int]]) -> None:
        self.file = file
        self.blocks = sorted(blocks)
        self._block_starts = [a for a, _ in self.blocks]
        self._starts = bytearray()  # per row: 0 unknown, 1 starts no record, 2 starts one
        self._window: tuple[int, bytes, bool, bool] | None = None  # the chunk a scan read last (its rows' text)
        self._texts: list[str] = []
        self.prefixed = self._sample()

    def window(self, first: int, data: bytes, plain: bool, exact: bool) -> None:
        """The rows a scan just read (from ``first``): their text is taken from there, not read again."""
        self._window = (first, data, plain, exact)
        self._texts = []

    def _text(self, row: int) -> str:
        if self._window is not None:
            first, data, plain, exact = self._window
            if not self._texts:
                self._texts = log_file.shown(data, plain, exact)
            if first <= row < first + len(self._texts):
                return self._texts[row - first]
        return self.file.text(row)

    def _sample(self) -> bool:
        """Whether the file's lines carry record prefixes (its first and last rows are looked at)."""
        n = self.file.rows
        rows = [*range(min(n, SAMPLE)), *range(max(SAMPLE, n - SAMPLE), n)]
        hits = sum(1 for r in rows if self.starts(r))
        return hits * 20 >= len(rows)  # at least one line in twenty

    def starts(self, row: int) -> bool:
        """Whether ``row`` starts a record (its line carries a prefix)."""
        memo = self._starts
        if row >= len(memo):
            memo.extend(bytes(row + 1 - len(memo)))
        got = memo[row]
        if not got:
            text = self._text(row)
            got = 2 if len(split_prefix(text).body) != len(text) else 1
            memo[row] = got
        return got == 2

    def _block(self, row: int) -> tuple[int, int] | None:
        k = bisect_right(self._block_starts, row) - 1
        if k >= 0 and self.blocks[k][0] <= row <= self.blocks[k][1]:
            return self.blocks[k]
        return None

    def extent(self, row: int) -> tuple[int, int]:
        """The first and last row of the record that holds ``row``."""
        block = self._block(row)
        lo, hi = block if block is not None else (row, row)
        if not self.prefixed:
            return lo, hi
        start = lo
        while not self.starts(start):
            above = self._block(start - 1) if start > 0 else None
            if above is not None:  # the lines after a traceback that start no record continue it
                start = above[0]
                break
            if start == 0 or lo - start >= MAX_RECORD:
                return lo, hi  # no record starts above: a line of its own
            start -= 1
        n = self.file.rows
        end = hi
        k = bisect_left(self._block_starts, end + 1)
        nxt = self._block_starts[k] if k < len(self._block_starts) else n
        while end + 1 < min(n, nxt, hi + MAX_RECORD) and not self.starts(end + 1):
            end += 1
        return start, end


def keep(rules: Sequence[FilterRule], file: LogFile, blocks: Sequence[tuple[int, int]], wait: Wait,
         stopped: Callable[[], bool], *, every: int = 1 << 22) -> Iterator[Found]:
    """The rows the filter-in / filter-out ``rules`` keep, in order, from the first row: a report after about
    ``every`` bytes (its rows are final), one when caught up (``done``), then more as the file grows."""
    ins = [r.rx for r in rules if r.include]
    outs = [r.rx for r in rules if not r.include]
    records = Records(file, blocks)
    kept: list[tuple[int, int]] = []  # records a filter-in matched (merged, in order)
    hidden: list[tuple[int, int]] = []  # records a filter-out matched
    emitted = 0  # rows before this are reported
    pos = 0
    while True:
        rows = file.rows if file.indexed else file.filled
        size = 0
        while pos < rows:
            stop = _chunk_end(file, pos, rows)
            for rx in ins:
                _add_records(kept, records, rx, file, pos, stop, stopped)
            for rx in outs:
                _add_records(hidden, records, rx, file, pos, stop, stopped)
            size += file.stop_of(stop - 1) - file.starts[pos]
            pos = stop
            if stopped():
                return
            if size >= every and pos - MAX_RECORD > emitted:
                safe = pos - MAX_RECORD  # no record found later reaches back before this
                yield Found(_shown(emitted, safe, kept if ins else None, hidden), safe, False)
                emitted, size = safe, 0
        yield Found(_shown(emitted, pos, kept if ins else None, hidden), pos, file.indexed)
        emitted = pos
        if not wait():
            return


def _chunk_end(file: LogFile, pos: int, rows: int) -> int:
    """The row where a chunk of about CHUNK bytes from ``pos`` ends (rows [0, rows) are indexed)."""
    return max(pos + 1, bisect_left(file.starts, file.starts[pos] + log_file.CHUNK, pos, rows))


def _add_records(ranges: list[tuple[int, int]], records: Records, rx: UserPattern, file: LogFile,
                 lo: int, hi: int, stopped: Callable[[], bool]) -> None:
    for _stop, rows in matching(rx, file, lo, hi, records.window, stopped):
        for row in rows:
            if ranges and ranges[-1][0] <= row <= ranges[-1][1]:
                continue
            a, b = records.extent(row)
            _merge(ranges, a, b)


def _merge(ranges: list[tuple[int, int]], a: int, b: int) -> None:
    """Add [a, b] to sorted disjoint ``ranges`` (found mostly in order: the last ones are looked at)."""
    k = bisect_left(ranges, (a, -1))
    while k > 0 and ranges[k - 1][1] >= a - 1:
        k -= 1
    j = k
    while j < len(ranges) and ranges[j][0] <= b + 1:
        a, b = min(a, ranges[j][0]), max(b, ranges[j][1])
        j += 1
    ranges[k:j] = [(a, b)]


def _shown(lo: int, hi: int, kept: list[tuple[int, int]] | None, hidden: list[tuple[int, int]]) -> list[int]:
    """Rows of [lo, hi) in a kept range (or any, with no filter-in) and in no hidden range."""
    spans = [(lo, hi - 1)] if kept is None else [(max(a, lo), min(b, hi - 1)) for a, b in kept
                                                  if b >= lo and a < hi]
    out: list[int] = []
    for a, b in spans:
        row = a
        k = bisect_right(hidden, (row, 1 << 62)) - 1
        k = max(k, 0)
        while row <= b:
            while k < len(hidden) and hidden[k][1] < row:
                k += 1
            if k < len(hidden) and hidden[k][0] <= row:
                row = hidden[k][1] + 1
                continue
            nxt = hidden[k][0] if k < len(hidden) else b + 1
            out.extend(range(row, min(b + 1, nxt)))
            row = nxt
    return out


def as_rows(rows: Sequence[int]) -> array[int]:
    """Rows as the index keeps them."""
    return array("Q", rows)
