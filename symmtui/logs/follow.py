"""Follow a log file like `tail -F`, on inotify: whole lines, rotation, truncation, tqdm progress."""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, cast

from msgspec import Struct

from symmtui import boundary
from symmtui.logs import inotify
from symmtui.logs.decode import DEFAULT_MAX_LINE_BYTES, LogLine, cut_utf8, make_line, make_lines, newlines

__all__ = [
    "BATCH_BYTES",
    "DEFAULT_MAX_LINE_BYTES",
    "READ_BYTES",
    "FileNotice",
    "LogFollower",
    "LogItem",
    "LineSplitter",
    "LogLine",
    "NoticeKind",
    "count_lines",
    "iter_lines",
    "tail_offset",
]

READ_BYTES = 1 << 20
"""One read (pread) at most: big enough for bytes.split to run at C speed, small enough for memory."""
BATCH_BYTES = 4 << 20
"""One poll() reads at most this much, so a huge backlog comes in bounded batches (see `has_more`)."""
BACKFILL_BYTES = 1 << 20
"""A batch of the history (``backfill``): its lines live as objects until judged, so it stays small."""
COUNT_LIMIT = 256 << 20
"""Attaching at the tail counts the newlines before it (exact line numbers) up to this many bytes."""
ATTACH_COUNT_LIMIT = 32 << 20
"""``attach_at`` counts the newlines before its point up to this offset (~10 ms); past it a printed
number is an estimate (``line ~N``): the verdict never waits on a count that grows with the file."""
SAMPLE_BYTES = 1 << 20  # the lines before an uncounted attach point are estimated from this much before it
_FINGERPRINT = 64
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)

NoticeKind = Literal["waiting", "opened", "attached", "truncated", "rotated", "deleted", "error",
                     "started", "exited", "replayed"]

Attach = Callable[[int, int], "tuple[int, str]"]
"""``attach_at(fd, size) -> (offset, message)``: where to start reading an existing file (a line start) and
what to tell the reader about the part before it (sent as an "attached" notice; "" for none)."""


class FileNotice(Struct, frozen=True):
    """Something happened to the file itself (not a line).

    waiting: the file (or its directory) does not exist yet. opened: a file generation is opened
    (or is reachable again); the lines that follow belong to it. truncated: it shrank or was
    rewritten below our position (copytruncate); reading restarts at its start, numbered from 1.
    rotated / deleted: the path no longer names the file being read (renamed away / unlinked).
    The old file stays open and is still read (a server that never reopens its log keeps writing
    there) until a file appears at the path; then the old one is read to its end and an "opened"
    follows. attached: reading starts partway into an existing file (``attach_at``); the message says
    where and why. error: the file cannot be read (the message says why and what to do); the follower
    retries on every change and sends "opened" when it succeeds.
    A log command (``logs.logcmd``; ``path`` is its program): started (a run began), exited (it ended;
    restarting after a wait), replayed (a restart printed lines already shown: skipped), error (cannot start).
    """

    kind: NoticeKind
    path: Path
    message: str


LogItem = LogLine | FileNotice


class _Splitter:
    """The byte stream of one file generation -> whole lines, plus live updates of a CR progress line."""

    __slots__ = ("cap", "crs", "last", "last_over", "line_start", "live", "no", "offset", "seg", "seg_over", "sent")

    def __init__(self, cap: int, live: bool) -> None:
        self.cap = cap
        self.live = live
        self.reset(0, 1)

    def reset(self, offset: int, no: int) -> None:
        self.offset = offset  # file offset of the next byte fed
        self.no = no  # number of the pending (next) line
        self.line_start = offset  # offset of the pending line's first byte
        self._clear()

    def _clear(self) -> None:
        self.seg = bytearray()  # current CR segment of the pending line (NULs dropped, capped)
        self.seg_over = False
        self.last = b""  # last non-empty finished CR segment of the pending line
        self.last_over = False
        self.crs = 0  # carriage returns seen in the pending line
        self.sent: bytes | None = None  # last progress update sent for the pending line

    @property
    def pending(self) -> bool:
        """A line has started and not ended."""
        return self.line_start < self.offset

    def feed(self, data: bytes, out: list[LogItem]) -> None:
        base = self.offset
        self.offset += len(data)
        first = data.find(b"\n")
        if first < 0:
            self._absorb(data)
            if self.live:
                self._progress(out)
            return
        start = 0
        if self.line_start < base:
            self._absorb(data[:first])
            out.append(self._finish())
            start = first + 1
        last = data.rfind(b"\n")
        if last >= start:
            lines: list[LogLine] = []
            self.no += make_lines(data[start:last], self.no, base + start, self.cap, lines)
            out.extend(lines)
        self.line_start = base + last + 1
        if last + 1 < len(data):
            self._absorb(data[last + 1 :])
            if self.live:
                self._progress(out)

    def flush(self, out: list[LogItem]) -> None:
        """The file ended for good: a pending unterminated line is emitted as it is."""
        if self.pending:
            out.append(self._finish())
            self.line_start = self.offset

    def _add(self, piece: bytes) -> None:
        if not piece or self.seg_over:
            return
        if len(self.seg) + len(piece) > self.cap:
            whole = bytes(self.seg) + piece[: self.cap - len(self.seg) + 4]
            self.seg = bytearray(cut_utf8(whole, self.cap))
            self.seg_over = True
        else:
            self.seg += piece

    def _absorb(self, piece: bytes) -> None:
        if b"\x00" in piece:
            piece = piece.replace(b"\x00", b"")
        if b"\r" not in piece:
            self._add(piece)
            return
        parts = piece.split(b"\r")
        self._add(parts[0])
        self.crs += len(parts) - 1
        for p in reversed(parts[1:-1]):
            if p:
                self.last, self.last_over = (cut_utf8(p, self.cap), True) if len(p) > self.cap else (p, False)
                break
        else:
            if self.seg:
                self.last, self.last_over = bytes(self.seg), self.seg_over
        self.seg = bytearray()
        self.seg_over = False
        self._add(parts[-1])

    def _visible(self) -> tuple[bytes, bool]:
        if self.seg:
            return bytes(self.seg), self.seg_over
        return self.last, self.last_over

    def _progress(self, out: list[LogItem]) -> None:
        # A lone CR at the very end may be the first half of CRLF: wait for the next byte then.
        if self.crs == 0 or (not self.seg and self.crs < 2):
            return
        visible, over = self._visible()
        if visible == self.sent:
            return
        self.sent = visible
        out.append(make_line(self.no, self.line_start, visible, True, over))

    def _finish(self) -> LogLine:
        visible, over = self._visible()
        line = make_line(self.no, self.line_start, visible, False, over)
        self.no += 1
        self._clear()
        return line


LineSplitter = _Splitter
"""Bytes of a stream -> LogLines (CR progress, caps): a file generation here, a command's output in logs.logcmd."""


def tail_offset(fd: int, size: int, lines: int, block: int = 64 << 10) -> int:
    """Offset where the last `lines` complete lines of the first `size` bytes begin (reads backwards).

    An unterminated last line is not counted and is always included; 0 lines gives its start.
    """
    need = lines + 1
    pos = size
    while pos > 0:
        lo = max(0, pos - block)
        buf = os.pread(fd, pos - lo, lo)
        found = buf.count(b"\n")
        if found >= need:
            i = len(buf)
            for _ in range(need):
                i = buf.rfind(b"\n", 0, i)
            return lo + i + 1
        need -= found
        pos = lo
    return 0


def count_lines(fd: int, start: int, end: int, block: int = READ_BYTES) -> int:
    """Newlines in bytes [start, end) of `fd`, read in blocks (never the whole range at once)."""
    n = 0
    while start < end:
        buf = os.pread(fd, min(block, end - start), start)
        if not buf:
            break
        n += newlines(buf)
        start += len(buf)
    return n


class Numbering(Struct, frozen=True):
    """Line numbers as the follower gave them -> the file's own: exact, or estimated past an uncounted part."""

    skipped: int = 0  # bytes before the attach point whose lines were not counted (0: numbers are exact)
    read_bytes: int = 0  # bytes read since the attach point
    skipped_lines: int = 0  # the lines before it, estimated from the MiB just before it ...
    counted: bool = False  # ... or counted (the follower counts them in the background): numbers are the file's

    def label(self, no: int) -> str:
        """``line 123`` (the file's own number), or ``line ~123`` while the lines before the attach point are not
        counted yet (an estimate)."""
        if not self.skipped:
            return f"line {no}"
        return f"line {self.skipped_lines + no}" if self.counted else f"line ~{self.skipped_lines + no}"


def _iter_fd(
    fd: int, start: int, end: int | None, first_no: int, cap: int, batch_bytes: int
) -> Iterator[list[LogLine]]:
    splitter = _Splitter(cap, live=False)
    splitter.reset(start, first_no)
    pos = start
    while True:
        stop = os.fstat(fd).st_size if end is None else end
        batch: list[LogItem] = []
        got = 0
        while pos < stop and got < batch_bytes:
            data = os.pread(fd, min(READ_BYTES, stop - pos, batch_bytes - got), pos)
            if not data:
                stop = pos
                break
            splitter.feed(data, batch)
            pos += len(data)
            got += len(data)
        if pos >= stop:
            splitter.flush(batch)
        if batch:
            yield cast(list[LogLine], batch)  # a non-live splitter emits only lines
        if pos >= stop:
            return


def iter_lines(
    path: str | os.PathLike[str],
    *,
    start: int = 0,
    end: int | None = None,
    first_no: int = 1,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    batch_bytes: int = BATCH_BYTES,
) -> Iterator[list[LogLine]]:
    """The finished lines of bytes [start, end) of a file (end=None: to its end), in batches.

    Memory stays bounded by `batch_bytes` whatever the file size. `start` should be a line start;
    lines are numbered from `first_no`. A last line without newline is included. Raises OSError
    when the file cannot be opened.
    """
    fd = os.open(path, _OPEN_FLAGS)
    try:
        yield from _iter_fd(fd, start, end, first_no, max_line_bytes, batch_bytes)
    finally:
        os.close(fd)


def _missing_part(path: Path) -> Path | None:
    """The first ancestor directory of `path` that does not exist (None when its directory exists)."""
    missing = None
    for parent in path.parents:
        if os.path.exists(parent):
            break
        missing = parent
    return missing


class LogFollower:
    """Follow one log path across creation, truncation, rotation and deletion.

    `poll()` does the work without blocking; `watch()` blocks on inotify and calls poll when the
    directory changes. One thread at a time should drive it (a lock guards it anyway).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        tail_lines: int | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        batch_bytes: int = BATCH_BYTES,
        count_limit: int | None = None,
        attach_at: Attach | None = None,
    ) -> None:
        if tail_lines is not None and tail_lines < 0:
            raise ValueError("tail_lines must be >= 0 or None")
        if max_line_bytes < 16:
            raise ValueError("max_line_bytes must be at least 16")
        self.path = Path(os.path.abspath(os.fspath(path)))
        self.tail_lines = tail_lines
        self.max_line_bytes = max_line_bytes
        self.batch_bytes = max(batch_bytes, 1)
        self.count_limit = COUNT_LIMIT if count_limit is None else count_limit
        self.attach_at = attach_at
        self.numbering_exact = True
        self.skipped = 0  # bytes before the attach point whose lines were not counted (numbers start there)
        self.skipped_lines = 0  # ... and their estimated number (counted in the background: see _count_skipped)
        self.skipped_counted = False
        self._count_gen = 0  # an attach's count is this follower's only while no later attach or reset began
        # (fd, end, generation) of a count not begun yet: it starts once the lines there at the start are judged,
        # so that it does not take the GIL from the verdict (see _start_count)
        self._count_todo: tuple[int, int, int] | None = None
        self.has_more = False
        self._lock = threading.Lock()
        self._split = _Splitter(max_line_bytes, live=True)
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None
        self._fingerprint = b""
        self._state: str = "new"  # new | waiting | open | detached (path moved on, old fd kept) | error
        self._error = ""
        self._polled = False
        self._attach_tail = False
        self._backfill: tuple[int, int] | None = None  # (dup fd, end offset) of the region the tail skipped
        self._closed = False
        self._watch: Any = None  # the inotify watch that watch() blocks on, for wake()

    # -- public ---------------------------------------------------------------------------------

    @property
    def offset(self) -> int:
        """Byte offset up to which the current file has been read."""
        return self._split.offset

    @property
    def generation(self) -> tuple[int, int] | None:
        """(st_dev, st_ino) of the file being followed, None when none is open."""
        return self._ident

    caught_up = False
    """Set before the ``on_batch`` call that delivers the end of what the file held when the watch began (an
    empty file, or none: an empty batch says so once), so that call knows its verdict is not overtaken by
    older lines still unread (`wait` on a log whose READY was followed by a crash)."""

    def poll(self) -> list[LogItem]:
        """Read what is new, without blocking. Never raises for file trouble: that becomes a FileNotice."""
        out = self._read_new()
        if not self.has_more:
            self._start_count()  # polled by hand, read to the end (``watch`` starts it after its batch is handed on)
        return out

    def _read_new(self) -> list[LogItem]:
        out: list[LogItem] = []
        with self._lock:
            self.has_more = False
            if self._closed:
                return out
            if not self._polled:
                self._polled = True
                self._attach_tail = (self.tail_lines is not None or self.attach_at is not None) and os.path.exists(
                    self.path)
            try:
                self._step(out)
            except OSError as exc:
                self._notice_error(out, f"cannot read {self.path}: {exc.strerror or exc}")
        return out

    def _start_count(self) -> None:
        """Begin counting the lines before the attach point, on a thread of its own (the file's own numbers).
        Called once what the file held is read and judged: counting 600 MB of newlines while the last launch was
        being judged took the GIL from it (the verdict of a 600 MB log with no launch start in its last 64 MB)."""
        with self._lock:
            todo, self._count_todo = self._count_todo, None
        if todo is not None:
            threading.Thread(target=self._count_skipped, args=todo, name="symmtui-count", daemon=True).start()

    def _drop_count(self) -> None:
        """Forget a count not begun (a reset, a new attach, close): its descriptor closed."""
        todo, self._count_todo = self._count_todo, None
        if todo is not None:
            os.close(todo[0])

    def watch(
        self,
        stop: threading.Event,
        on_batch: Callable[[list[LogItem]], None],
        *,
        gather_ms: int = 5,
        timeout_ms: int = 1000,
    ) -> None:
        """Block until `stop` is set, calling `on_batch` with every non-empty poll result.

        Blocks in inotify on the open file (writes) and its directory (or, while it is missing, its
        nearest existing ancestor: entries coming and going): a write after a quiet moment is read at once; while writes keep coming, reads are at
        least `gather_ms` apart (a flood comes in batches, not a read per write). Every `timeout_ms` it
        polls anyway, as a safety net. Returns at once after ``wake()``, else within
        ``inotify.STOP_CHECK`` of `stop` being set. Nothing wakes an idle follower in between.
        """
        self._drain(stop, on_batch)  # the lines already there first (an attach's verdict), then arm
        while not stop.is_set() and not self._closed:
            targets = self._watch_targets()
            try:
                if not targets:
                    raise FileNotFoundError(str(self.path.parent))
                fd = self._fd
                files = (f"/proc/self/fd/{fd}",) if fd is not None else ()  # the open file, even renamed away
                dirs = [str(t[0]) for t in targets if t[0] != self.path]
                watch = inotify.open_watch(dirs, self._watch_names(), files)
            except OSError:
                # A target vanished between the check and the watch, or inotify is unavailable:
                # poll on a short timer for this round.
                self._drain(stop, on_batch)
                stop.wait(min(timeout_ms, 250) / 1000)
                continue
            self._watch = watch
            try:
                self._watch_loop(watch, targets, stop, on_batch, gather_ms / 1000, timeout_ms / 1000,
                                 min(inotify.STOP_CHECK, timeout_ms / 1000))
            finally:
                self._watch = None
                watch.close()

    def _watch_loop(self, watch: Any, targets: tuple[tuple[Path, int, int], ...], stop: threading.Event,
                    on_batch: Callable[[list[LogItem]], None], gather: float, timeout: float,
                    step: float) -> None:
        self._drain(stop, on_batch)  # what came between the first read and the arming
        while not stop.is_set() and not self._closed:
            if self._watch_targets() != targets:
                return  # a directory replaced or created: watch the new one
            woke = False
            for _ in range(max(1, round(timeout / step))):  # looking at the stop event every step
                woke = watch.wait(step)
                if woke or stop.is_set():
                    break
            if stop.is_set():
                return
            self._drain(stop, on_batch)
            if woke:
                stop.wait(gather)  # let a flood gather; a lone write was read at once

    def wake(self) -> None:
        """Make ``watch`` look at its stop event now (call it after setting the event)."""
        watch = self._watch
        if watch is not None:
            watch.wake()

    def _count_skipped(self, fd: int, end: int, gen: int) -> None:
        """Count the lines before the attach point (a thread of its own: the verdict never waits on it)."""
        boundary.after_first_frame()
        try:
            n = count_lines(fd, 0, end)
        except OSError:
            return  # the file went away: the numbers stay estimates
        finally:
            os.close(fd)
        if gen == self._count_gen and self.skipped == end:
            self.skipped_lines = n
            self.skipped_counted = True

    def numbering(self) -> Numbering:
        """How this follower's line numbers map to the file's (it outlives ``close``)."""
        skipped = self.skipped
        counted = self.skipped_counted  # (read first: set after skipped_lines)
        return Numbering(skipped, self._split.offset - skipped, self.skipped_lines, counted and skipped > 0)

    def backfill(self, batch_bytes: int = BACKFILL_BYTES) -> Iterator[list[LogLine]]:
        """The lines the tail start skipped (bytes before it), numbered exactly from 1, in batches.

        Reads the generation that was attached even after it is rotated away; stops early if that
        file is truncated meanwhile. Yields nothing when nothing was skipped. Use it from another
        thread to scan a big log's history off the hot path.
        """
        with self._lock:
            region, self._backfill = self._backfill, None
        if region is None:
            return
        fd, end = region
        try:
            for batch in _iter_fd(fd, 0, end, 1, self.max_line_bytes, batch_bytes):
                if os.fstat(fd).st_size < end:
                    return
                yield batch
        finally:
            os.close(fd)

    def close(self) -> None:
        """Release the open file descriptors; poll() returns nothing and watch() returns after this."""
        with self._lock:
            self._closed = True
            self._close()
            self._drop_count()
            if self._backfill is not None:
                os.close(self._backfill[0])
                self._backfill = None

    def __enter__(self) -> LogFollower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------------

    def _drain(self, stop: threading.Event, on_batch: Callable[[list[LogItem]], None]) -> None:
        while True:
            boundary.give_way()
            items = self._read_new()
            if items or not (self.has_more or self.caught_up):
                self.caught_up = not self.has_more  # read by on_batch: what existed at the start is all judged
                on_batch(items)
            if not self.has_more or stop.is_set():
                if not self.has_more:
                    self._start_count()  # after the batch that ends what was there is judged
                return

    def _watch_names(self) -> frozenset[bytes]:
        """The entry names whose events matter: every part of the path and of where it links to (a
        missing directory is watched for in its nearest existing ancestor)."""
        real = Path(os.path.realpath(self.path))
        return frozenset(os.fsencode(part) for part in (*self.path.parts, *real.parts))

    def _watch_targets(self) -> tuple[tuple[Path, int, int], ...]:
        """The directories to watch, with their (dev, inode): a directory replaced under the same name
        (mv logs logs.old; mkdir logs) must be watched anew; and the open file's (a new one is watched anew)."""
        parent = self.path.parent
        candidates: list[Path] = []
        if os.path.isdir(parent):
            candidates.append(parent)
            real = Path(os.path.realpath(self.path)).parent
            if real != parent and os.path.isdir(real):
                candidates.append(real)
        else:
            candidates.append(next((a for a in parent.parents if os.path.isdir(a)), Path("/")))
        targets = []
        for d in candidates:
            try:
                st = os.stat(d)
            except OSError:
                continue
            targets.append((d, st.st_dev, st.st_ino))
        if self._ident is not None:
            targets.append((self.path, *self._ident))
        return tuple(targets)

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None
        self._ident = None

    def _notice(self, out: list[LogItem], kind: NoticeKind, message: str) -> None:
        out.append(FileNotice(kind, self.path, message))

    def _notice_error(self, out: list[LogItem], message: str) -> None:
        if self._state != "error" or self._error != message:
            self._notice(out, "error", message)
        self._state = "error"
        self._error = message

    def _step(self, out: list[LogItem]) -> None:
        if self._fd is None:
            self._open(out)
            if self._fd is None:
                return
        fd = self._fd
        try:
            st: os.stat_result | None = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        except PermissionError as exc:
            # Cannot look at the path any more (a directory lost its x bit): keep reading the open file.
            self._notice_error(
                out, f"cannot check {self.path} ({exc.strerror}); still reading the open file, "
                "rotation cannot be seen until access returns"
            )
            self._read(out)
            return
        if st is not None and (st.st_dev, st.st_ino) == self._ident:
            if self._state not in ("error", "detached"):
                self._check_truncation(out, fd)
                self._read(out)
                return
            # Recovering: say so only once reading works again (an OSError here keeps the error state).
            no = self._split.no
            got: list[LogItem] = []
            self._check_truncation(got, fd)
            self._read(got)
            self._state = "open"
            self._error = ""
            self._notice(out, "opened", f"{self.path} is back; following it at line {no}")
            out.extend(got)
            return
        # The path names another file, or nothing. Keep reading the old file (a server that never
        # reopens its log keeps writing there) until a new file is at the path; then drain the old
        # one to its end, flush its unterminated last line, and switch.
        self._read(out)
        if self._state != "detached":
            self._state = "detached"
            lines = self._split.no - 1
            if st is not None:
                then = "following the new file from its start"
            else:
                then = "still reading it until a new file appears at the path"
                missing = _missing_part(self.path)
                if missing is not None:
                    then = f"its directory {missing} is gone too; {then}"
            if os.fstat(fd).st_nlink == 0:
                self._notice(out, "deleted", f"{self.path} was deleted after line {lines}; {then}")
            else:
                self._notice(out, "rotated", f"{self.path} was renamed away (rotated) after line {lines}; {then}")
        if st is None or self.has_more:
            return
        self._split.flush(out)
        self._close()
        self._open(out)
        self._read(out)

    def _open(self, out: list[LogItem]) -> None:
        path = self.path
        try:
            st = os.stat(path)
        except NotADirectoryError:
            blocker = next((a for a in reversed(path.parents) if os.path.exists(a) and not os.path.isdir(a)), None)
            self._notice_error(out, f"{blocker or path.parent} is a file, not a directory; "
                               f"waiting for a directory there to hold {path.name}")
            return
        except FileNotFoundError:
            if self._state not in ("waiting", "detached"):
                missing = _missing_part(path)
                if missing is not None:
                    msg = f"waiting for directory {missing} (and then {path.name}) to appear"
                else:
                    msg = f"waiting for {path} to appear"
                self._notice(out, "waiting", msg)
            if self._state != "detached":
                self._state = "waiting"
            return
        except PermissionError as exc:
            self._notice_error(out, f"cannot reach {path}: {exc.strerror}; check the directory permissions")
            return
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            self._notice_error(out, f"{path} is {kind}; waiting for a regular log file there")
            return
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            hint = "; check its permissions (chmod a+r)" if exc.errno in (errno.EACCES, errno.EPERM) else ""
            self._notice_error(out, f"cannot open {path}: {exc.strerror}{hint}")
            return
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode):
            os.close(fd)
            self._notice_error(out, f"{path} is not a regular file; waiting for a regular log file there")
            return
        self._fd = fd
        self._ident = (fst.st_dev, fst.st_ino)
        self._fingerprint = b""
        start, no = 0, 1
        where = "from its start"
        attached = ""
        if self._attach_tail and self.tail_lines is not None:
            self._attach_tail = False
            start = tail_offset(fd, fst.st_size, self.tail_lines)
            if start > 0:
                self._backfill = (os.dup(fd), start)
                if start <= self.count_limit:
                    no = count_lines(fd, 0, start) + 1
                    where = f"at line {no} (last {self.tail_lines} lines)"
                else:
                    self.numbering_exact = False
                    where = (
                        f"at its last {self.tail_lines} lines (byte {start}); line numbers count from there "
                        f"(file too big to count at once)"
                    )
        elif self._attach_tail and self.attach_at is not None:
            self._attach_tail = False
            start, attached = self.attach_at(fd, fst.st_size)
            if start > 0:
                self._backfill = (os.dup(fd), start)
                if start <= min(self.count_limit, ATTACH_COUNT_LIMIT):
                    no = count_lines(fd, 0, start) + 1
                    where = f"at line {no}"
                else:
                    # Counting a GB of newlines takes ~0.4 s, for a line number only: number from here, estimate
                    # the lines before it, and count them in the background (the numbers become the file's).
                    self.numbering_exact = False
                    self.skipped = start
                    sample = os.pread(fd, SAMPLE_BYTES, start - SAMPLE_BYTES)  # lines like those before it
                    self.skipped_lines = round(start * newlines(sample) / len(sample))
                    self.skipped_counted = False
                    self._count_gen += 1
                    self._drop_count()
                    self._count_todo = (os.dup(fd), start, self._count_gen)
                    where = (f"at byte {start} (lines numbered from there; the lines before it are being counted: "
                             "until then printed numbers are estimates, line ~N)")
        else:
            self._attach_tail = False
            self.numbering_exact = True
        self._split.reset(start, no)
        self._state = "open"
        self._error = ""
        self._notice(out, "opened", f"following {path} {where}")
        if attached:
            self._notice(out, "attached", attached)

    def _check_truncation(self, out: list[LogItem], fd: int) -> None:
        offset = self._split.offset
        if offset == 0:
            return
        size = os.fstat(fd).st_size
        if size >= offset:
            fp = self._fingerprint
            if not fp or os.pread(fd, len(fp), offset - len(fp)) == fp:
                return
            why = f"was rewritten in place (content before byte {offset} changed)"
        else:
            why = f"shrank from {offset} to {size} bytes (truncated, e.g. copytruncate)"
        self._split.flush(out)
        lines = self._split.no - 1
        self._split.reset(0, 1)
        self._fingerprint = b""
        self.numbering_exact = True
        self.skipped = self.skipped_lines = 0
        self.skipped_counted = False
        self._count_gen += 1
        self._drop_count()
        self._notice(out, "truncated", f"{self.path} {why} after line {lines}; reading it again from its start")

    def _read(self, out: list[LogItem]) -> None:
        fd = self._fd
        if fd is None:
            return
        split = self._split
        size = os.fstat(fd).st_size
        budget = self.batch_bytes
        data = b""
        while split.offset < size and budget > 0:
            data = os.pread(fd, min(READ_BYTES, size - split.offset, budget), split.offset)
            if not data:
                break
            split.feed(data, out)
            budget -= len(data)
        if data:
            if len(data) >= _FINGERPRINT or split.offset <= len(data):
                self._fingerprint = data[-_FINGERPRINT:]
            else:
                n = min(_FINGERPRINT, split.offset)
                self._fingerprint = os.pread(fd, n, split.offset - n)
        self.has_more = split.offset < size
