"""Bytes of whole log lines -> `LogLine`s: UTF-8 with replacement, NULs dropped, CR overwrites, ANSI-free `plain`."""

from __future__ import annotations

import gc
from functools import partial
from itertools import accumulate, chain, count, repeat
from typing import NamedTuple

from symmtui.textsafe import ANSI as _ANSI
from symmtui.textsafe import strip_ansi as strip_ansi  # one ANSI rule: the follower's and the redactor's

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "LogLine",
    "clean_raw",
    "cut_utf8",
    "make_line",
    "make_lines",
    "newlines",
    "strip_ansi",
]

DEFAULT_MAX_LINE_BYTES = 64 * 1024
"""Longest line kept (bytes, after NUL removal); the rest of a longer line is discarded while streaming."""

_ONE_PLUS = (1).__add__


class LogLine(NamedTuple):
    """One line of the log (a NamedTuple: immutable and cheap to build at ~1M lines/s).

    `no`: 1-based line number in the current file generation. `offset`: byte offset of the line's
    first byte (exact). `text`: the line as written (ANSI kept, NULs dropped, no newline); `plain`:
    `text` without ANSI escapes, for matching. `progress`: a provisional carriage-return update of
    the still-unfinished line at `offset` (tqdm); it replaces any earlier item with the same offset,
    and the finished line arrives later with `progress=False`. `truncated`: the line was longer
    than max_line_bytes and only its head is kept.
    """

    no: int
    offset: int
    text: str
    plain: str
    progress: bool = False
    truncated: bool = False


_new_line = partial(tuple.__new__, LogLine)


def cut_utf8(raw: bytes, cap: int) -> bytes:
    """The first `cap` bytes of `raw`, shortened so that no UTF-8 character is split."""
    if len(raw) <= cap:
        return raw
    end = cap
    while end > 0 and end > cap - 3 and (raw[end] & 0xC0) == 0x80:
        end -= 1
    if (raw[end] & 0xC0) == 0x80:  # not UTF-8 anyway: keep the plain cut
        end = cap
    return raw[:end]


def clean_raw(raw: bytes, cap: int) -> tuple[bytes, bool]:
    """What a terminal would leave of one finished line: NULs dropped, the last non-empty CR segment, capped.

    Returns (visible bytes, truncated).
    """
    if b"\x00" in raw:
        raw = raw.replace(b"\x00", b"")
    if b"\r" in raw:
        for seg in reversed(raw.split(b"\r")):
            if seg:
                raw = seg
                break
        else:
            raw = b""
    if len(raw) > cap:
        return cut_utf8(raw, cap), True
    return raw, False


def newlines(buf: bytes) -> int:
    """The number of b"\\n" in ``buf``: ``replace`` runs on memchr/memcpy, 3x faster than ``bytes.count``
    (a byte-at-a-time loop for a one-byte needle in CPython 3.11)."""
    return len(buf) - len(buf.replace(b"\n", b""))


def make_line(no: int, offset: int, visible: bytes, progress: bool = False, truncated: bool = False) -> LogLine:
    """A `LogLine` from already-cleaned bytes (no NUL, no CR, within the cap)."""
    text = visible.decode("utf-8", "replace")
    plain = _ANSI.sub("", text) if "\x1b" in text else text
    return _new_line((no, offset, text, plain, progress, truncated))


def make_lines(chunk: bytes, no: int, offset: int, cap: int, out: list[LogLine]) -> int:
    """Append the lines of `chunk` (whole lines joined by b"\\n", the last one without its newline).

    The first line starts at file offset `offset` and has number `no`. Returns how many lines were
    added. Runs of ordinary lines are decoded and split in one go; only lines holding a CR or a NUL
    (and over-long lines) take the per-line path.
    """
    end = len(chunk)
    pos = 0
    n = 0
    next_cr = chunk.find(b"\r")
    next_nul = chunk.find(b"\x00")
    while True:
        if 0 <= next_cr < pos:
            next_cr = chunk.find(b"\r", pos)
        if 0 <= next_nul < pos:
            next_nul = chunk.find(b"\x00", pos)
        special = min((i for i in (next_cr, next_nul) if i >= 0), default=-1)
        if special < 0:
            return n + _run(chunk[pos:] if pos else chunk, no + n, offset + pos, cap, out)
        start = chunk.rfind(b"\n", pos, special) + 1 or pos
        stop = chunk.find(b"\n", special)
        stop = end if stop < 0 else stop
        if start > pos:
            n += _run(chunk[pos : start - 1], no + n, offset + pos, cap, out)
        visible, truncated = clean_raw(chunk[start:stop], cap)
        out.append(make_line(no + n, offset + start, visible, False, truncated))
        n += 1
        if stop == end:
            return n
        pos = stop + 1


def _run(chunk: bytes, no: int, offset: int, cap: int, out: list[LogLine]) -> int:
    """make_lines for a chunk without CR or NUL."""
    text = chunk.decode("utf-8", "replace")
    texts = text.split("\n")
    if chunk.isascii():
        lens: list[int] = list(map(len, texts))
    else:
        lens = list(map(len, chunk.split(b"\n")))
    if max(lens) <= cap:
        offsets = accumulate(chain((offset,), map(_ONE_PLUS, lens)))
        plains = _ANSI.sub("", text).split("\n") if "\x1b" in text else texts
        # The cyclic GC would walk the growing batch again and again while thousands of tuples are
        # made (a 2x slowdown); pause it for this C-level loop only, if it was on.
        paused = gc.isenabled()
        if paused:
            gc.disable()
        try:
            out.extend(map(_new_line, zip(count(no), offsets, texts, plains, repeat(False), repeat(False))))
        finally:
            if paused:
                gc.enable()
        return len(lens)
    n = 0
    for raw in chunk.split(b"\n"):
        visible, truncated = clean_raw(raw, cap)
        out.append(make_line(no + n, offset, visible, False, truncated))
        offset += len(raw) + 1
        n += 1
    return n
