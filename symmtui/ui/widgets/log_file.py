"""The log pane's file, read where it lies: the byte offset of every line's start (8 bytes a line), text read back.

One ``LogFile`` is one generation of a file (truncated or replaced: the pane makes a new one). A thread
(``follow``) builds the index and then follows the file as it grows; any thread may read rows meanwhile:

    file = LogFile(path)
    follow(file, stop, wake, changed)   # on a thread: index the file, then read what it gains each wake-up
    file.rows, file.text(row)           # rows known so far; a row's text (ANSI-free, its last CR segment)
    file.row_of(offset)                 # the row that starts at a byte offset (an event's line), None if unknown

A big file shows its end first: the newlines before its last megabyte are counted (a C-speed pass), the
rows of that megabyte are indexed, and then the rows before them are filled in from the start, so the
rows keep their final numbers from the first paint on (rows not yet filled read as ``(indexing…)``).
``index_ahead(path)``, called as the dashboard starts, makes that first part of the index on a thread while
Textual starts up, and the pane takes it (``take_ahead``): its first frame has the rows (it waited ~0.2 s
for them, the count of a 1M-line file's newlines competing with Textual's start for the GIL).
"""

from __future__ import annotations

import errno
import operator
import os
import re
import stat
import threading
import time
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from pathlib import Path

from symmtui.logs.decode import DEFAULT_MAX_LINE_BYTES, clean_raw, newlines
from symmtui.textsafe import strip_ansi

__all__ = ["CAP", "CHUNK", "LogFile", "clean", "follow", "index_ahead", "take_ahead"]

CAP = DEFAULT_MAX_LINE_BYTES
"""Bytes of one line shown (the follower's cap); a longer line ends in ``…(line cut)``."""
CHUNK = 1 << 20
"""One read while indexing or scanning."""
TAIL_FIRST = 4 << 20
"""Files larger than this are indexed from their end first."""
TAIL_BYTES = 1 << 20
"""How much of a big file's end is indexed first."""
POLL = 1.0
"""Seconds between two looks at the file when nothing wakes the follower (the engine's batches do)."""
PROGRESS_EVERY = 0.1
"""Seconds between two progress notes while a big file is indexed."""
_NL = re.compile(b"\n")
_SPECIAL = re.compile(b"[\x1b\r\x00]")
_OPEN = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


class LogFile:
    """The line starts of one generation of a file; see the module docstring."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.starts: array[int] = array("Q")  # row -> byte offset of its first byte
        self.head = 0  # rows before the end indexed first (their starts are filled from row 0 on)
        self.filled = 0  # rows [0, filled) of the head are known
        self.end = 0  # bytes indexed
        self.size = 0  # the file's size when last looked at
        self.widest = 0  # the longest row seen, in bytes (at most CAP)
        self.complete = True  # the last row ends with a newline (else it is still being written)
        self.error = ""  # why the file cannot be read now ("" when it can)
        self.ended = ""  # set by ``follow`` when this generation is over: "truncated" or "replaced"
        self.end_indexed = False  # ``index_end`` is done (here or ahead)
        self._tail_from = 0  # where the rows indexed first begin (a big file's)
        self._fd: int | None = None
        self._identity: tuple[int, int] | None = None
        self._cache: dict[int, str] = {}
        self._lock = threading.Lock()

    # ---- reading rows (any thread) ---------------------------------------------------------------

    @property
    def rows(self) -> int:
        """Rows known so far (with the head still being filled: its rows count, their text is not read yet)."""
        return len(self.starts)

    @property
    def indexed(self) -> bool:
        """Every row's start is known (the head is filled)."""
        return self.filled >= self.head

    def progress(self) -> float:
        """The share of the head filled (1.0 once indexed)."""
        return 1.0 if self.indexed or not self.head else self.filled / self.head

    def known(self, row: int) -> bool:
        return 0 <= row < self.filled or self.head <= row < len(self.starts)

    def offset_of(self, row: int) -> int:
        """The byte offset where ``row`` starts (only for a known row)."""
        return self.starts[row]

    def stop_of(self, row: int) -> int:
        """The byte offset just past ``row`` (its newline included)."""
        return self.starts[row + 1] if row + 1 < len(self.starts) else self.end

    def row_of(self, offset: int) -> int | None:
        """The row that holds byte ``offset`` (an event's line start gives its row), None while not indexed."""
        starts = self.starts
        n = len(starts)
        if offset < 0 or not n or offset >= self.end:
            return None
        if self.head < n and offset >= starts[self.head]:
            return bisect_right(starts, offset, self.head, n) - 1
        if self.filled >= self.head:
            return bisect_right(starts, offset, 0, self.head) - 1
        row = bisect_right(starts, offset, 0, self.filled + 1) - 1  # starts[filled] is known, its end is not
        return row if 0 <= row < self.filled else None

    def text(self, row: int) -> str:
        """What the pane shows of ``row``: NULs dropped, its last carriage-return segment, ANSI-free, capped."""
        got = self._cache.get(row)
        if got is not None:
            return got
        if not self.known(row):
            return "(indexing…)" if 0 <= row < len(self.starts) else ""
        text = self._read(row)
        if len(self._cache) >= 4096:
            self._cache.clear()
        if row < len(self.starts) - 1 or self.complete:  # the last row may still grow
            self._cache[row] = text
        return text

    def cut(self, row: int) -> bool:
        """Whether ``row`` is longer than CAP (its end is not shown)."""
        return self.known(row) and self.stop_of(row) - self.starts[row] > CAP + 1

    def _read(self, row: int) -> str:
        raw = self._raw(row)
        if raw is None:
            return f"(line {row + 1:,} cannot be read back: {self.error or 'the log file is closed'})"
        return clean(raw)

    def _pread(self, size: int, at: int) -> bytes | None:
        """``size`` bytes at ``at``; None when the file is closed or cannot be read (``error`` says why)."""
        with self._lock:  # close() waits: a descriptor number is never read after it was given back
            if self._fd is None:
                return None
            try:
                return os.pread(self._fd, size, at)
            except OSError as exc:
                self.error = _why(self.path, exc)
                return None

    def texts(self, lo: int, hi: int) -> Iterator[tuple[int, str]]:
        """(row, text) of the known rows in [lo, hi), read in chunks of about CHUNK bytes."""
        for first, last, data, plain, exact in self.chunks(lo, hi):
            yield from zip(range(first, last), shown(data, plain, exact), strict=True)

    def chunks(self, lo: int, hi: int, size: int | None = None) -> Iterator[tuple[int, int, bytes, bool, bool]]:
        """The known rows of [lo, hi) as ``(first, stop, data, plain, exact)``: rows first..stop-1 joined by
        newlines, each capped at CAP bytes; ``plain`` when they hold no escape, CR or NUL (the bytes are the
        text); ``exact`` when ``data`` is the file's bytes from the first row's start (a byte's place in it is
        its offset from there). Rows of the head not filled yet are skipped."""
        size = CHUNK if size is None else size
        row = max(lo, 0)
        hi = min(hi, len(self.starts))
        starts = self.starts
        while row < hi:
            if not self.known(row):
                row = self.head
                continue
            stop_row = min(hi, self.filled) if row < self.filled else hi
            start = starts[row]
            last = max(bisect_left(starts, start + size, row + 1, stop_row), row + 1)
            end = self.stop_of(last - 1)
            data = self._pread(end - start, start) if end - start <= 4 * size else b""
            if data is None:
                return
            exact = len(data) == end - start and (self.widest < CAP or _longest(starts, row, last, end) <= CAP + 1)
            if not exact:
                data = b"\n".join(self._raw(r) or b"" for r in range(row, last))  # a row over the cap, or the file shrank
            elif data.endswith(b"\n"):
                data = data[:-1]
            yield row, last, data, _SPECIAL.search(data) is None, exact
            row = last

    def _raw(self, row: int) -> bytes | None:
        """The bytes of one row (no newline), capped at CAP (a rewritten progress line: its last CAP bytes)."""
        start, stop = self.starts[row], self.stop_of(row)
        raw = self._pread(min(stop - start, CAP + 1), start)
        if raw is not None and stop - start > CAP + 1 and b"\r" in raw:
            raw = self._pread(CAP, max(start, stop - 1 - CAP))
        if raw is None:
            return None
        raw = raw.split(b"\n", 1)[0]
        return raw[:CAP] if len(raw) > CAP and b"\r" not in raw else raw

    # ---- indexing (the follower thread only) ------------------------------------------------------

    def open(self) -> bool:
        """Open the file (or say why not in ``error``); True when it is open."""
        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, _OPEN)
            st = os.fstat(fd)
        except OSError as exc:
            self.error = _why(self.path, exc)
            return False
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            self.error = f"{self.path} is not a regular file"
            return False
        self._fd, self._identity, self.error = fd, (st.st_dev, st.st_ino), ""
        return True

    def close(self) -> None:
        """Give the descriptor back (reads after it say the file is closed)."""
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)
        self._cache.clear()

    def index(self, stop: Callable[[], bool], changed: Callable[[], None],
              shown: Callable[[], None] = lambda: None) -> None:
        """Index the file as it is now: its end first when it is big (``index_end``, unless done ahead), then
        every row from the first (after ``shown()`` returns: the reader had its moment to paint the end before
        the rest competes with it)."""
        if not self.end_indexed and not self.index_end(stop):
            return
        changed()
        if self.indexed:
            return
        shown()
        self._fill_head(self._tail_from, stop, changed)
        changed()

    def index_end(self, stop: Callable[[], bool]) -> bool:
        """The first part of ``index``: a small file whole; a big one's last TAIL_BYTES, the rows before them
        counted (their starts not read yet). False when it was not done (closed, unreadable, stopped)."""
        size = self._size()
        if size is None:
            return False
        self.size = size
        at = size - TAIL_BYTES
        near = self._pread(CAP, at) if size > TAIL_FIRST else None
        cut = near.find(b"\n") if near is not None else -1
        if cut < 0:  # small, or no line starts near the tail's cut: from the first byte
            self._read_to(size, stop)
            self.end_indexed = not stop()
            return self.end_indexed
        tail_from = at + cut + 1
        head = pos = 0
        while pos < tail_from:  # the rows before the tail: one per newline
            buf = self._pread(min(4 * CHUNK, tail_from - pos), pos)
            if not buf or stop():
                return False
            head += newlines(buf)
            pos += len(buf)
        self.starts.frombytes(bytes(8 * head))
        self.head, self.filled, self.end, self._tail_from = head, 0, tail_from, tail_from
        self._read_to(size, stop)  # the tail: rows head, head + 1, ...
        self.end_indexed = not stop()
        return self.end_indexed

    def _fill_head(self, tail_from: int, stop: Callable[[], bool], changed: Callable[[], None]) -> None:
        """The starts of rows 1..head-1 (row 0 starts at 0, row head at ``tail_from``), from the first byte on."""
        starts = self.starts
        pos = row = 0  # row: the last row whose start is written
        widest = self.widest
        note = time.monotonic() + PROGRESS_EVERY
        while row < self.head - 1 and pos < tail_from:
            buf = self._pread(min(CHUNK, tail_from - pos), pos)
            if not buf or stop():
                return
            cut = buf.rfind(b"\n") + 1
            if cut:
                found = [m.end() + pos for m in _NL.finditer(buf, 0, cut)][: self.head - 1 - row]
                if found:
                    widest = max(widest, found[0] - starts[row], _gaps(found))
                    starts[row + 1 : row + 1 + len(found)] = array("Q", found)
                    row += len(found)
                    self.filled = row  # rows before it end where the next starts
            pos += cut or len(buf)
            self.widest = min(widest, CAP)
            if time.monotonic() > note:
                changed()
                note = time.monotonic() + PROGRESS_EVERY
        self.widest = min(max(widest, tail_from - starts[self.head - 1]), CAP)
        self.filled = self.head

    def _read_to(self, size: int, stop: Callable[[], bool]) -> bool:
        """Index the bytes from ``end`` to ``size``; True when anything was added."""
        grew = False
        while self.end < size and not stop():
            buf = self._pread(min(CHUNK, size - self.end), self.end)
            if not buf:
                break
            base = self.end
            found = [m.end() + base for m in _NL.finditer(buf)]
            done = bool(found) and found[-1] == base + len(buf)
            if done:
                found.pop()
            longest = 0
            if not self.complete and self.starts:  # the row still being written grows to its newline
                longest = (found[0] if found else base + len(buf)) - self.starts[-1]
            if self.complete:
                found.insert(0, base)
            if found:
                longest = max(longest, base + len(buf) - found[-1], _gaps(found))
                self.starts.extend(found)
            self.widest = min(max(self.widest, longest), CAP)
            self.complete = done
            self.end = base + len(buf)
            grew = True
        return grew

    def _size(self) -> int | None:
        with self._lock:
            if self._fd is None:
                return None
            try:
                return os.fstat(self._fd).st_size
            except OSError as exc:
                self.error = _why(self.path, exc)
                return None

    def grow(self, stop: Callable[[], bool]) -> bool:
        """Read what the file gained; True when rows were added. Sets ``ended`` when this generation is over
        (the file shrank: truncated; another file now has its name and this one is read to its end: replaced)."""
        if self._fd is None and not self.open():
            return False
        size = self._size()
        if size is None:
            return False
        if size < self.end:
            self.ended = "truncated"
            return False
        self.size = size
        grew = self._read_to(size, stop)
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return grew  # renamed or deleted: the writer may still write to the file we have open
        except OSError as exc:
            self.error = _why(self.path, exc)
            return grew
        if (st.st_dev, st.st_ino) != self._identity and self.end >= (self._size() or 0):
            self.ended = "replaced"
        return grew


def _gaps(starts: list[int]) -> int:
    """The longest distance between two neighbouring starts."""
    return max(map(operator.sub, starts[1:], starts[:-1]), default=0)


def _longest(starts: array[int], lo: int, hi: int, end: int) -> int:
    """The longest of rows [lo, hi) in bytes (``end``: where row hi-1 ends)."""
    inner = max(map(operator.sub, starts[lo + 1 : hi], starts[lo : hi - 1]), default=0)
    return max(inner, end - starts[hi - 1])


class _Ahead:
    """An index begun ahead of its pane (``index_ahead``): ``file``, its end indexed once ``done`` is set."""

    def __init__(self, file: LogFile) -> None:
        self.file = file
        self.done = threading.Event()


_AHEAD: dict[str, _Ahead] = {}
_AHEAD_LOCK = threading.Lock()


def _key(path: str | os.PathLike[str]) -> str:
    return os.path.abspath(path)


def index_ahead(path: str | os.PathLike[str]) -> threading.Event:
    """Begin, on a thread, the index of ``path`` a pane is about to show: its end (``LogFile.index_end``); the
    event returned is set once that is done. The pane's ``take_ahead`` takes it; one not taken is closed when
    another is begun for the same path."""
    ahead = _Ahead(LogFile(path))
    with _AHEAD_LOCK:
        old = _AHEAD.pop(_key(path), None)
        _AHEAD[_key(path)] = ahead
    if old is not None:
        old.file.close()

    def run() -> None:
        try:
            if ahead.file.open():  # an unreadable file: the pane's follower says why
                ahead.file.index_end(lambda: False)
        finally:
            ahead.done.set()

    threading.Thread(target=run, name="symmtui-log-ahead", daemon=True).start()
    return ahead.done


def take_ahead(path: str | os.PathLike[str]) -> tuple[LogFile, threading.Event] | None:
    """The file ``index_ahead`` began for ``path`` and the event set once its end is indexed (``follow`` waits
    for it before going on); None when none was begun. Taken once."""
    with _AHEAD_LOCK:
        ahead = _AHEAD.pop(_key(path), None)
    return (ahead.file, ahead.done) if ahead is not None else None


def clean(raw: bytes) -> str:
    """A row's bytes as the pane shows them: NULs dropped, the last CR segment, capped, decoded, ANSI-free."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    visible, _cut = clean_raw(raw, CAP)
    return strip_ansi(visible.decode("utf-8", "replace"))


def shown(data: bytes, plain: bool, exact: bool) -> list[str]:
    """The texts a chunk's rows show (``LogFile.chunks``): rows with escapes but no CR or NUL, none cut, are cleaned
    at once (no escape spans a newline), the others row by row."""
    if plain or (exact and b"\r" not in data and b"\x00" not in data):
        return strip_ansi(data.decode("utf-8", "replace")).split("\n")
    return [clean(raw) for raw in data.split(b"\n")]


def _why(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return f"waiting for {path} (no such file yet)"
    if exc.errno == errno.EACCES:
        return f"cannot read {path} (permission denied)"
    return f"cannot read {path} ({exc.strerror or exc})"


def follow(file: LogFile, stop: threading.Event, wake: threading.Event, changed: Callable[[], None],
           shown: Callable[[], None] = lambda: None) -> None:
    """Index ``file``, then read what it gains on each ``wake`` (and every POLL seconds), until ``stop`` or
    until the generation ends (``file.ended``: truncated or replaced); ``changed()`` after each change
    (``shown``: see ``LogFile.index``)."""
    stopped = stop.is_set
    while not file.open():
        changed()
        if stop.wait(POLL):
            return
    file.index(stopped, changed, shown)
    while not stopped():
        wake.wait(POLL)
        wake.clear()
        if stopped():
            return
        error = file.error
        if file.grow(stopped) or file.ended or file.error != error:
            changed()
        if file.ended:
            return
