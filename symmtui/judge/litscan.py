"""The line starts of a big buffer that hold a rule's literal: Hyperscan's multi-literal search, else ByteScanner."""

from __future__ import annotations

import mmap
from functools import lru_cache
from typing import Any, Protocol

from symmtui.judge import hscache
from symmtui.judge.rules import ByteScanner, RuleSet
from symmtui.logs.lineparts import goes_on_literals

_hs: Any
try:  # a C multi-literal matcher (SIMD), ~0.4 ns/byte for the whole catalogue's literals at once
    import hyperscan

    _hs = hyperscan
except ImportError:  # no wheel for this platform: the pure-Python scanner gives the same lines, slower
    _hs = None

# Lines holding a NUL or an escape byte are always candidates: the decoder drops them, so a marker
# may be split by one (the same rule as ByteScanner's).
ALWAYS = ("\x00", "\x1b")


class LineFinder(Protocol):
    """What phase one of ``scan`` needs: sorted start offsets of the lines of ``buf[:end]`` a rule may match."""

    def candidate_starts(self, buf: bytes | bytearray, end: int) -> list[int]: ...

    def marked_starts(self, buf: bytes | bytearray, end: int) -> tuple[list[int], set[int]]:
        """``candidate_starts``, and the starts of the lines that hold one of the finder's ``marked`` literals."""
        ...


def _literals_db(literals: list[bytes]) -> Any:
    """A Hyperscan block-mode database matching each literal (its id: its index)."""
    assert _hs is not None
    # Hex escapes: every byte is a literal, and a NUL cannot end the pattern early.
    return hscache.database(_hs, [b"".join(b"\\x%02x" % c for c in lit) for lit in literals])


class HyperscanFinder:
    """Every literal of the rule set (and NUL, ESC) in one Hyperscan block scan; rules without a
    literal are searched with their regex, as ByteScanner does."""

    def __init__(self, ruleset: RuleSet, sample: bytes = b"", extra: tuple[str, ...] = (),
                 marked: frozenset[str] = frozenset()) -> None:
        assert _hs is not None
        self._names = minimal((*ruleset.literals, *extra, *ALWAYS), marked)
        self._marked = frozenset(i for i, name in enumerate(self._names) if name in marked)
        lits = [lit.encode("utf-8") for lit in self._names]
        self._lens = [len(x) for x in lits]
        self._db: Any = _literals_db(lits)
        self._regex = ByteScanner(ruleset, sample) if ruleset.unanchored else None

    def candidate_starts(self, buf: bytes | bytearray, end: int) -> list[int]:
        """Sorted start offsets of the lines of ``buf[:end]`` that hold a literal (or match a free regex)."""
        hits: list[int] = []
        lens = self._lens
        add = hits.append

        def on_match(pid: int, _start: int, stop: int, _flags: int, _ctx: object) -> None:
            add(stop - lens[pid])

        self._db.scan(buf if end == len(buf) else memoryview(buf)[:end], match_event_handler=on_match)
        rfind = buf.rfind
        starts = {rfind(b"\n", 0, at) + 1 for at in hits}
        if self._regex is not None:
            starts.update(self._regex.regex_starts(buf, end))
        return sorted(starts)

    def marked_starts(self, buf: bytes | bytearray, end: int) -> tuple[list[int], set[int]]:
        """``candidate_starts`` and, from the same scan, the starts of the lines that hold a ``marked`` literal."""
        ids = self._marked
        lens = self._lens
        rfind = buf.rfind
        starts: set[int] = set()
        flagged: set[int] = set()
        add, mark = starts.add, flagged.add

        def on_match(pid: int, _start: int, stop: int, _flags: int, _ctx: object) -> None:
            ls = rfind(b"\n", 0, stop - lens[pid]) + 1  # the line's start, found here: no list of hits
            add(ls)
            if pid in ids:
                mark(ls)

        self._db.scan(buf if end == len(buf) else memoryview(buf)[:end], match_event_handler=on_match)
        if self._regex is not None:
            extra = self._regex.regex_starts(buf, end)
            starts.update(extra)
            flagged.update(extra)
        return sorted(starts), flagged


class LastLiteral:
    """The last of a few literals in a buffer: one Hyperscan pass over it for all of them (``rfind`` a literal at
    a time without Hyperscan). The backward search for a launch start: 5 literals over 64 MB took 185-216 ms
    with ``mmap.rfind`` each, 23 ms in one Hyperscan pass (2-core VM, under load)."""

    def __init__(self, needles: tuple[bytes, ...], *, fast: bool = True) -> None:
        self.needles = needles
        self._lens = [len(n) for n in needles]
        self._db: Any = None
        if fast and _hs is not None and needles:
            try:
                self._db = _literals_db(list(needles))
            except _hs.error:  # a CPU Hyperscan does not support: rfind, slower
                self._db = None

    def last(self, mm: mmap.mmap, lo: int, hi: int) -> int:
        """The offset of the last occurrence of any needle that lies wholly in ``mm[lo:hi]``, or -1 (in place: the
        mapped file is not copied)."""
        if self._db is None:
            return max((mm.rfind(n, lo, hi) for n in self.needles), default=-1)
        lens, best = self._lens, [-1]

        def on_match(pid: int, _start: int, stop: int, _flags: int, _ctx: object) -> None:
            best[0] = max(best[0], lo + stop - lens[pid])

        with memoryview(mm) as whole, whole[lo:hi] as part:  # both released before the caller closes the map
            self._db.scan(part, match_event_handler=on_match)
        return best[0]


def available() -> bool:
    """Whether the Hyperscan matcher can be used here (the package is installed)."""
    return _hs is not None


@lru_cache(maxsize=16)
def minimal(literals: tuple[str, ...], marked: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """``literals`` without those that hold another (a line holding "Decode out of memory happened" holds "out of
    memory": one report a line is enough to make it a candidate), a ``marked`` one kept unless it holds a marked one."""
    by_length = sorted(set(literals), key=lambda x: (len(x), x))
    kept: set[str] = set()
    for i, lit in enumerate(by_length):
        shorter = by_length[:i] if lit not in marked else [o for o in by_length[:i] if o in marked]
        if not any(map(lit.__contains__, shorter)):
            kept.add(lit)
    out = [lit for lit in literals if lit in kept]
    return tuple(out)


def finder(ruleset: RuleSet, sample: bytes, *, fast: bool = True, marked: frozenset[str] = frozenset()) -> LineFinder:
    """The fastest finder this host has for ``ruleset`` (``fast=False``: the pure-Python one); ``marked``: literals
    whose lines ``marked_starts`` names. A request line whose content goes on over the next lines (logs.lineparts)
    is a candidate too: its content must not be judged."""
    extra = goes_on_literals()
    if fast and _hs is not None:
        try:
            return HyperscanFinder(ruleset, sample, extra, marked)
        except _hs.error:  # a CPU Hyperscan does not support (it needs SSSE3): the same lines, slower
            return ByteScanner(ruleset, sample, extra, marked)
    return ByteScanner(ruleset, sample, extra, marked)
