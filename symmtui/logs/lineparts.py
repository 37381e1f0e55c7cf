"""A log line's parts: the record prefixes servers and launchers put before the message (ranks, time, logger), the
message, where a second record starts inside one physical line (two ranks' writes joined), and which part of a
request line is the client's content. The one prefix parser; every shape it knows comes from the engine table
(``tables.enginetable``: symmtui/engines/*.toml)."""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from functools import cached_property, lru_cache
from typing import NamedTuple

from symmtui.tables import enginetable


class Prefix(NamedTuple):
    """The per-record prefix a server or launcher puts before the message.

    ``key`` names the writing process for traceback assembly ("TP3", "DP1 TP3", "rank3", "pid123"); ``label``
    the rank it is for the rank board ("TP3", "DP1 TP3", "rank 3", "RayWorkerWrapper pid 7 @10.0.0.2"; None
    for a process that is no rank: vLLM's API server, an engine core of one rank); ``pid`` where printed.
    """

    key: str | None
    rank: int | None
    ts: float | None
    body: str
    dialect: str | None
    label: str | None = None
    pid: int | None = None
    proc: str | None = None
    """The process's own name where the prefix prints one (vLLM: "APIServer", "EngineCore_DP0", "Worker_TP3")."""
    level: str | None = None
    """The record's level where its prefix says it and the engine table reads it (one of enginetable.LEVELS)."""


_TP_TAG = re.compile(r"\bTP(\d{1,9})\b")
_RANK_TAG = re.compile(r"(?<![A-Za-z])((?:DP|PP|TP|EP|CP|NP)\d{1,9})(?!\d)")
STAMP_RANGE = (946684800, 4102444800)
"""The stamps read as times: 2000-01-01 to 2100-01-01 (UTC); another (a zeroed clock, a typo) is no time: it makes no
absurd duration."""
MASK = "_"
"""What a request line's client content is blanked with (the same length: offsets stay)."""


def rank_tags(text: str) -> str:
    """The rank tags in ``text`` joined by spaces: "DP1 TP3"."""
    return " ".join(_RANK_TAG.findall(text))


@lru_cache(maxsize=4096)
def _seconds(stamp: tuple[str, ...]) -> int | None:
    """Epoch seconds of a (year, month, day, hour, minute, second) stamp (cached: a log repeats its
    seconds thousands of times in a burst)."""
    try:
        return calendar.timegm((*(int(x) for x in stamp), 0, 0, 0))
    except (ValueError, OverflowError):
        return None


# What a shape's match derives, cached by the matched text: (ts, key, rank, label, pid, proc, level, dialect)
_Derived = tuple[float | None, str | None, int | None, str | None, int | None, str | None, str | None, str | None]
_Rest = tuple[str | None, int | None, str | None, int | None, str | None, str | None, str | None]
_MAX_DERIVED = 4096


class _Shape:
    """One prefix shape of the table, compiled on its first use (a start compiles only the shapes its lines need):
    ``derive(m)`` reads its match (cached by the matched text)."""

    __slots__ = ("cache", "dialect", "frac", "layer", "levels", "match", "not_ranks", "pattern", "stamp", "suffix", "tz")

    def __init__(self, shape: enginetable.PrefixShape, not_ranks: tuple[str, ...]) -> None:
        self.pattern = shape.pattern
        self.match: Callable[[str, int], re.Match[str] | None] = self._compile
        self.layer = shape.layer
        self.dialect = shape.engine if shape.tells else None
        self.levels = dict(shape.levels)
        self.not_ranks = not_ranks
        self.suffix = re.compile(shape.suffix) if shape.suffix else None
        groups = shape.groups
        self.stamp = all(k in groups for k in ("Y", "M", "D", "h", "m", "s"))
        self.frac = "frac" in groups
        self.tz = "tzsign" in groups
        self.cache: dict[str, _Rest] = {}

    def _compile(self, plain: str, pos: int) -> re.Match[str] | None:
        self.match = re.compile(self.pattern).match
        return self.match(plain, pos)

    def derive(self, m: re.Match[str]) -> _Derived:
        """(ts, key, rank, label, pid, proc, level, dialect) of a match: the stamp read each time (its seconds
        cached), the rest cached by the matched text without its stamp (a flood repeats each rank's prefix)."""
        text = m.group(0)
        ts: float | None = None
        if self.stamp:
            whole = _seconds(m.group("Y", "M", "D", "h", "m", "s"))
            if whole is not None and STAMP_RANGE[0] <= whole < STAMP_RANGE[1]:
                frac = m.group("frac") if self.frac else None
                ts = whole + float("0." + frac) if frac else float(whole)
                if self.tz and m.group("tzsign"):
                    sign = 1 if m.group("tzsign") == "+" else -1
                    ts -= sign * (int(m.group("tzh") or 0) * 3600 + int(m.group("tzm") or 0) * 60)
            at = m.start()  # the match's offsets are the line's
            a, b = m.start("Y") - at, max(m.end("s"), m.end("frac") if self.frac else -1) - at
            text = text[:a] + text[b:] if 0 <= a <= b else text
        got = self.cache.get(text)
        if got is not None:
            return (ts, *got)
        g = m.groupdict()
        tags = (g.get("tags") or "").strip()
        proc = g.get("proc")
        nrank = g.get("rank")
        pid = _number(g.get("pid"))
        level = self.levels.get(g.get("level") or "")
        ranktext = rank_tags(tags) or (rank_tags(proc.replace("_", " ")) if proc else "")
        t = _TP_TAG.search(ranktext)
        rank = int(t.group(1)) if t is not None else _number(nrank)
        key = f"pid{pid}" if pid is not None else tags or (f"rank{nrank}" if nrank is not None else None)
        label: str | None = None
        if ranktext:
            label = ranktext
        elif nrank is not None:
            label = f"rank {nrank}"
        elif proc and pid is not None and not _named(proc, self.not_ranks):
            label = f"{proc} pid {pid}" + (f" @{g['ip']}" if g.get("ip") else "")
        if proc is not None:
            proc = proc + (g.get("tags") or "").replace(" ", "_")
        if len(self.cache) >= _MAX_DERIVED:
            self.cache.clear()
        rest = self.cache[text] = (key, rank, label, pid, proc, level, self.dialect)
        return (ts, *rest)


def _number(text: str | None) -> int | None:
    """A rank or pid group's number: None for none, or for more than 9 digits (no rank or pid has 10; int() refuses
    4,300; an engine file's pattern may leave the digits uncounted)."""
    return int(text) if text and len(text) <= 9 else None


def _named(proc: str, names: tuple[str, ...]) -> bool:
    return any(proc.startswith(n[:-1]) if n.endswith("*") else proc == n for n in names)


class _Parser:
    """The engine table compiled for the hot path: shapes by the first character they can start with."""

    def __init__(self, table: enginetable.Table) -> None:
        not_ranks = {e.name: e.not_ranks for e in table.engines}
        shapes = [_Shape(p, not_ranks.get(p.engine, ())) for p in table.prefixes]
        self.by_char: dict[str, tuple[_Shape, ...]] = {}
        anywhere: list[_Shape] = []
        firsts: list[tuple[_Shape, frozenset[str] | None]] = [(s, p.first) for s, p in zip(shapes, table.prefixes,
                                                                                            strict=True)]
        chars = set().union(*(f for _, f in firsts if f is not None))
        for s, f in firsts:
            if f is None:
                anywhere.append(s)
        for c in chars:
            self.by_char[c] = tuple(s for s, f in firsts if f is None or c in f)
        self.other = tuple(anywhere)
        joins = [p.joins for p in table.prefixes if p.joins]
        self.joins_pattern = "|".join(f"(?:{_unnamed(j)})" for j in joins) if joins else None
        hints = [p.join for p in table.prefixes if p.joins]
        self.join_hints: tuple[tuple[str, tuple[tuple[frozenset[str] | None, str], ...]], ...] | None = None
        if all(h is not None for h in hints):
            by: dict[str, list[tuple[frozenset[str] | None, str]]] = {}
            for h in hints:
                if h is not None:
                    by.setdefault(h[0], []).append((h[1], h[2]))
            self.join_hints = tuple((c, tuple(alts)) for c, alts in by.items())
        # A record prefix that names its source (a rank, a pid) starts with one of these, or after an outer layer:
        keyed = [f for (s, f), p in zip(firsts, table.prefixes, strict=True) if s.layer == "record" and
                 {"tags", "rank", "pid", "proc"} & p.groups]
        self.keyed_chars: frozenset[str] | None = None if any(f is None for f in keyed) \
            else frozenset().union(*keyed)  # type: ignore[arg-type]
        outer = [s.pattern for s in shapes if s.layer == "outer"]
        self.outer = re.compile("|".join(f"(?:{_unnamed(p)})" for p in outer)) if outer else None
        self.requests = tuple((r, _Lazy(r.pattern), r.literals) for r in table.requests)
        self.request_lits = tuple(sorted({lit for r in table.requests for lit in r.literals}, key=len, reverse=True))

    @cached_property
    def joins(self) -> re.Pattern[str] | None:
        """Where a joining shape's prefix starts (compiled when a line first needs it: ``_may_join`` spares most)."""
        return re.compile(self.joins_pattern) if self.joins_pattern is not None else None


class _Lazy:
    """A regex compiled on its first use."""

    __slots__ = ("_rx", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._rx: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        rx = self._rx
        if rx is None:
            rx = self._rx = re.compile(self.pattern)
        return rx


def _unnamed(pattern: str) -> str:
    """``pattern`` with its named groups made plain ones (several shapes combine into one regex)."""
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


_parser: _Parser | None = None


def _get() -> _Parser:
    global _parser
    if _parser is None:
        _parser = _Parser(enginetable.table())
    return _parser


def goes_on_literals() -> tuple[str, ...]:
    """The literals of the request shapes whose content goes on over the next lines: a line holding one is always
    judged (scan and the live engine read only candidate lines), so the lines after it are known as content."""
    return tuple(sorted({lit for r, _, lits in _get().requests if r.continues for lit in lits}))


def container_body(plain: str) -> str:
    """``plain`` without the prefixes a container runtime or log collector adds (compose service names,
    `docker logs -t` / `kubectl logs --timestamps` stamps, journald's "Mon DD HH:MM:SS host unit[pid]: "):
    the server's own line, as it wrote it."""
    outer = _get().outer
    pos = 0
    while outer is not None:
        m = outer.match(plain, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
    return plain[pos:] if pos else plain


def may_name_a_source(plain: str) -> bool:
    """Whether ``plain`` may start with a prefix that names its writing process (a rank, a pid): cheap, for the
    rank board, which asks it of every line."""
    p = _parser if _parser is not None else _get()
    c = plain[:1]
    if p.keyed_chars is None or c in p.keyed_chars:
        return True
    return p.outer is not None and p.outer.match(plain) is not None


# The last line split: the engine splits a matched line more than once (the rule match, then its event).
_last: tuple[str, Prefix] = ("", Prefix(None, None, None, "", None))


def split_prefix(plain: str) -> Prefix:
    """Split known rank/timestamp prefixes off a line (every shape of the engine table; they stack: a collector's
    layers first, then the record's own)."""
    global _last
    last = _last  # one read: another thread may replace it meanwhile (Prefix is immutable)
    if last[0] == plain:
        return last[1]
    pre = _split(plain)
    _last = (plain, pre)
    return pre


def _split(plain: str) -> Prefix:
    parser = _parser if _parser is not None else _get()
    by_char = parser.by_char
    other = parser.other
    key: str | None = None
    rank: int | None = None
    ts: float | None = None
    dialect: str | None = None
    label: str | None = None
    pid: int | None = None
    proc: str | None = None
    level: str | None = None
    suffix: re.Pattern[str] | None = None
    pos = 0
    outer = True  # only a collector's layers (stamps, compose names, journald) so far: more of them may follow
    for _ in range(8):
        shapes = by_char.get(plain[pos : pos + 1], other)
        for s in shapes:
            if s.layer == "outer" and not outer:
                continue
            m = s.match(plain, pos)
            if m is None or m.end() == pos:
                continue
            d = s.derive(m)
            if s.layer == "outer":
                if ts is None:
                    ts = d[0]
            elif s.layer == "record":
                outer = False
                if d[0] is not None:
                    ts = d[0]
                if d[1] is not None:
                    key = d[1]
                if d[2] is not None:
                    rank = d[2]
                if d[3] is not None:
                    label = d[3]
                if d[4] is not None:
                    pid = d[4]
                if d[5] is not None:
                    proc = d[5]
                if d[6] is not None:
                    level = d[6]
                if d[7] is not None:
                    dialect = d[7]
                if s.suffix is not None:
                    suffix = s.suffix
            pos = m.end()
            break
        else:
            break
    body = plain[pos:] if pos else plain
    if suffix is not None and rank is None:
        sm = suffix.search(body)
        rank = _number(sm.group("rank")) if sm is not None else None
        if rank is not None:
            key = key or f"rank{rank}"
            label = label or f"rank {rank}"
    return Prefix(key, rank, ts, body, dialect, label, pid, proc, level)


NOT_REQUEST, CONTENT_INSIDE, CONTENT_TO_END, CONTENT_GOES_ON = 0, 1, 2, 3
"""What ``request_mask`` found: no request line; one whose content is a part of it (uvicorn's path: the server's
own text goes on after it); one whose content runs to the end of the line; and one whose content goes on over the
following lines that carry no record prefix."""


def request_mask(plain: str, start: int = 0) -> tuple[str, int]:
    """``plain`` with the client content of a request line whose message starts at ``start`` blanked (MASK, the
    same length: offsets stay), and what it found (NOT_REQUEST, CONTENT_INSIDE, CONTENT_TO_END, CONTENT_GOES_ON).

    A request or access line (the engine table's ``[[request]]`` shapes: uvicorn's access line, SGLang's
    ``Receive: obj=``, vLLM's ``Received request``, ...) logs what an API client sent: a prompt, a path, a header.
    That text is content: it never becomes a record, a rank, an error or a verdict."""
    p = _parser if _parser is not None else _get()
    found = NOT_REQUEST
    for shape, lazy, lits in p.requests:  # every shape that matches blanks its content (a TGI span and its Input)
        for lit in lits:
            if lit in plain:
                break
        else:
            continue
        rx = lazy.get()
        m = rx.search(plain, start) if shape.anywhere else rx.match(plain, start)
        if m is None:
            continue
        a, b = m.span("content") if "content" in rx.groupindex else (m.end(), len(plain))
        if b == len(plain):
            found = max(found, CONTENT_GOES_ON if shape.continues else CONTENT_TO_END)
        else:
            found = max(found, CONTENT_INSIDE)
        if b > a:
            plain = plain[:a] + MASK * (b - a) + plain[b:]
    return plain, found


def split_records(plain: str) -> list[str]:
    """The records of one physical line: itself, or (two writers' records joined on it) each record's text, with
    the client content of a request line blanked (``request_mask``: a request line stays one record whatever it
    quotes).

    A second record starts where a record prefix of a joining shape (the table's ``joins``: SGLang's, torchrun's,
    vLLM's) begins inside a line that itself starts with one; everything before it belongs to the first record."""
    p = _parser if _parser is not None else _get()
    if p.joins_pattern is None or not _may_join(p, plain):
        return [plain]  # (the rank board asks this of every line: most take this way)
    return records(plain, mask=False)[0]


def records(plain: str, *, mask: bool = True) -> tuple[list[str], bool]:
    """``split_records(plain)``, and whether its last record is a request whose content goes on over the next
    lines (CONTENT_GOES_ON: they are the client's until a line that starts with a record prefix). ``mask=False``:
    a line that is one record comes back as it is (the rank board reads only its prefix)."""
    p = _parser if _parser is not None else _get()
    joins = p.joins if p.joins_pattern is not None and _may_join(p, plain) else None
    m = joins.search(plain, 1) if joins is not None else None
    if m is None:
        if not mask:
            return [plain], False
        first = split_prefix(plain)
        text, found = request_mask(plain, len(plain) - len(first.body))
        return [text], found == CONTENT_GOES_ON
    first = split_prefix(plain)
    body_at = len(plain) - len(first.body)
    text, found = request_mask(plain, body_at)
    if found >= CONTENT_TO_END or (first.key is None and first.ts is None):
        return [text], found == CONTENT_GOES_ON  # the rest is the client's (no record starts in it), or no prefix
    out: list[str] = []
    at = 0
    search = m.re.search
    m = search(text, body_at + 1) if found or m.start() <= body_at else m
    while m is not None:
        out.append(text[at : m.start()])
        at = m.start()
        body_at = len(text) - len(_split(text[at:]).body)
        text, found = request_mask(text, body_at)
        if found >= CONTENT_TO_END:
            break
        m = search(text, max(body_at, at + 1))
    out.append(text[at:])
    return out, found == CONTENT_GOES_ON


def _may_join(p: _Parser, plain: str) -> bool:
    """Whether a joining shape's prefix may start inside ``plain`` past its first character (its first character
    there, followed by one its second may be, and its literal run in the line): most lines fail this, and the
    joins' regex then does not run on them."""
    hints = p.join_hints
    if hints is None:
        return True
    for c, alts in hints:
        i = plain.find(c, 1)
        if i < 0:
            continue
        for second, lit in alts:
            if lit not in plain:
                continue
            j = i
            while j >= 0:
                if second is None or plain[j + 1 : j + 2] in second:
                    return True
                j = plain.find(c, j + 1)
    return False


def has_prefix(plain: str) -> bool:
    """Whether ``plain`` starts with a record prefix the table knows (a continued request's content ends there)."""
    pre = split_prefix(plain)
    return len(pre.body) != len(plain) or pre.ts is not None or pre.key is not None


_SOURCES: dict[str, tuple[str | None, str | None, int | None]] = {}
_MAX_SOURCES = 4096


def record_source(plain: str) -> tuple[str | None, str | None, int | None]:
    """(key, label, pid) of a record's prefix, as ``split_prefix`` reads them, without the rest of its work:
    cached by the prefix's own text (a flood repeats each rank's prefix, its stamp too, many times a second).
    The rank board asks this of every record."""
    end = -1
    if plain[:1] == "[":
        end = plain.find("] ", 1, 120)
    elif plain[:1] == "(":
        end = plain.find(") ", 1, 120)
    if end < 0:
        pre = split_prefix(plain)
        return pre.key, pre.label, pre.pid
    head = plain[: end + 2]
    key = head
    if head[5:6] == "-" and head[1:5].isdigit():  # "[YYYY-MM-DD HH:MM:SS(.fff) TP3] ": the stamp names no source
        key = head[20:].lstrip(".,0123456789")
    got = _SOURCES.get(key)
    if got is None:
        pre = _split(head)
        if len(_SOURCES) >= _MAX_SOURCES:
            _SOURCES.clear()
        got = _SOURCES[key] = (pre.key, pre.label, pre.pid)
    return got
