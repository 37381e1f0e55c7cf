"""Lines to events: rule matches, Traceback blocks grouped per rank, and the same error from N ranks merged."""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from symmtui.core.rules import ByteScanner, Kind, RuleMatch, RuleSet

MAX_SUMMARY = 200
BATCH_MIN = 64  # feed_many prefilters batches at least this long as one buffer
RETUNE_BYTES = 1 << 20  # the byte prefilter is tuned again on the first batch this big
MAX_BLOCK_LINES = 400  # a traceback longer than this is closed as incomplete
STALE_AFTER_LINES = 300  # an open traceback that got no line for this many lines is closed as incomplete
NEW_RUN_RULES = frozenset({"server_args", "vllm_start"})  # a server prints these once, at its very start


@dataclass(frozen=True)
class Event:
    """Something a log line (or a block of lines) means.

    ``key`` identifies the event across updates: the same traceback or warning from another rank is
    re-emitted as an updated Event with the same key, a larger ``count`` and more ``ranks``; consumers
    replace the older one. ``ts`` is the log's own timestamp (epoch seconds, naive times read as UTC)
    when the line carries one. ``ends`` names the phase a phase-end marker closes.
    """

    kind: Kind
    rule_id: str
    summary: str
    line_no: int
    text: str
    phase: str | None = None
    progress: tuple[int, int] | None = None
    ranks: frozenset[int] = frozenset()
    count: int = 1
    block: tuple[str, ...] = ()
    diagnosis: str | None = None
    key: str = ""
    ts: float | None = None
    ends: str | None = None

    def where(self) -> str:
        """``"8 ranks"``, ``"rank 3"``, ``"3 times"`` or ``""``: how widely this event was seen."""
        if len(self.ranks) > 1:
            return f"{len(self.ranks)} ranks"
        if len(self.ranks) == 1:
            rank = next(iter(self.ranks))
            return f"rank {rank}" if self.count == 1 else f"rank {rank}, {self.count} times"
        return f"{self.count} times" if self.count > 1 else ""

    def headline(self) -> str:
        """The summary with its spread, e.g. ``KeyError: 12 at torch_symm_mem.py:83 (8 ranks)``."""
        where = self.where()
        return f"{self.summary} ({where})" if where else self.summary


class LineLike(Protocol):
    """What the builder reads from a follower line (``symmtui.core.follow.LogLine`` fits)."""

    @property
    def no(self) -> int: ...

    @property
    def text(self) -> str: ...

    @property
    def plain(self) -> str: ...


@dataclass(frozen=True)
class Prefix:
    """The per-line prefix a server or launcher puts before the message."""

    key: str | None
    rank: int | None
    ts: float | None
    body: str
    dialect: str | None


# SGLang: "[2026-11-29 09:40:17 TP0] ", "[2026-11-29 09:40:17 DP1 TP3 EP3] ", "[2026-11-29 09:40:17] "
_SGLANG = re.compile(
    r"\[(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?((?: (?:[A-Z]{2,3}\d+))*)\] ?"
)
# torchrun: "[rank3]: "
_TORCHRUN = re.compile(r"\[rank(\d+)\]: ?")
# vLLM worker / engine processes: "(VllmWorkerProcess pid=123) ", "(Worker_TP3 pid=9) ", "(APIServer pid=1) "
_VLLM_PROC = re.compile(r"\((\w+?)(?:_TP(\d+))?(?:_\w+)? pid=(\d+)\) ?")
# vLLM logger header after the process prefix: "ERROR 10-29 06:48:05 [file.py:233] "
_VLLM_HEAD = re.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d+)? \[[^\]]*\] ?"
)
_TP_TAG = re.compile(r"\bTP(\d+)\b")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_TB_HEAD = "Traceback (most recent call last):"


def split_prefix(plain: str) -> Prefix:
    """Split known rank/timestamp prefixes off a line (SGLang, torchrun, vLLM shapes; they may stack)."""
    key: str | None = None
    rank: int | None = None
    ts: float | None = None
    dialect: str | None = None
    pos = 0
    for _ in range(3):
        m = _SGLANG.match(plain, pos)
        if m is not None:
            y, mo, d, hh, mi, ss = (int(m.group(i)) for i in range(1, 7))
            frac = m.group(7)
            try:
                ts = calendar.timegm((y, mo, d, hh, mi, ss, 0, 0, 0)) + (float("0." + frac) if frac else 0.0)
            except (ValueError, OverflowError):
                ts = None
            tags = m.group(8).strip()
            if tags:
                key = tags
                t = _TP_TAG.search(tags)
                rank = int(t.group(1)) if t else rank
                dialect = "sglang"
            pos = m.end()
            continue
        m = _TORCHRUN.match(plain, pos)
        if m is not None:
            rank = int(m.group(1))
            key = f"rank{rank}"
            pos = m.end()
            continue
        m = _VLLM_PROC.match(plain, pos)
        if m is not None:
            if m.group(2) is not None:
                rank = int(m.group(2))
            key = f"pid{m.group(3)}"
            dialect = "vllm"
            pos = m.end()
            h = _VLLM_HEAD.match(plain, pos)
            if h is not None:
                pos = h.end()
            continue
        h = _VLLM_HEAD.match(plain, pos)
        if h is not None:
            dialect = "vllm"
            pos = h.end()
            continue
        break
    return Prefix(key, rank, ts, plain[pos:] if pos else plain, dialect)


def _clip(s: str, n: int = MAX_SUMMARY) -> str:
    s = s.strip()
    return s if len(s) <= n else s[: n - 1] + "…"


@dataclass
class _Block:
    key: str | None
    rank: int | None
    start_no: int
    ts: float | None
    head: str
    lines: list[str] = field(default_factory=list)
    frame: str | None = None
    frames: int = 0
    last_fed: int = 0


class EventBuilder:
    """Feed lines in order, get events. Traceback blocks are collected per rank prefix and merged."""

    def __init__(self, ruleset: RuleSet | None = None) -> None:
        self.ruleset = ruleset if ruleset is not None else RuleSet()
        self.dialect: str | None = None
        self._open: list[_Block] = []
        self._merged: dict[str, Event] = {}
        self._fed = 0
        self._scanner: ByteScanner | None = None
        self._scanner_sample = 0
        # "Scheduler hit an exception:" with the traceback on the next line: held for one line
        self._pending: tuple[int, str, str, RuleMatch] | None = None

    # ------------------------------------------------------------------ public
    @property
    def in_block(self) -> bool:
        """True while a traceback is open (or announced): every following line matters (scan stops skipping)."""
        return bool(self._open) or self._pending is not None

    def reset(self) -> None:
        """Forget everything (a relaunch)."""
        self.dialect = None
        self._open.clear()
        self._merged.clear()
        self._fed = 0
        self._scanner = None
        self._scanner_sample = 0
        self._pending = None

    def feed(self, line: LineLike) -> list[Event]:
        """Events completed or updated by this line (usually none)."""
        return self.feed_plain(line.no, line.plain, line.text)

    def feed_many(self, lines: Sequence[LineLike]) -> list[Event]:
        """Like ``feed`` for each line in order, several times faster on big batches: the batch is
        prefiltered as one buffer (the same byte scanner ``scan`` uses) and only candidate lines (and
        every line of an open traceback) go through the rules."""
        n = len(lines)
        if n < BATCH_MIN:
            out: list[Event] = []
            for line in lines:
                out.extend(self.feed_plain(line.no, line.plain, line.text))
            return out
        data = ("\n".join([ln.plain for ln in lines]) + "\n").encode("utf-8", "replace")
        scanner = self._scanner_for(data)
        count = data.count
        idxs: list[int] = []
        prev_off = prev_idx = 0
        for off in scanner.candidate_starts(data, len(data)):
            prev_idx += count(b"\n", prev_off, off)
            prev_off = off
            idxs.append(prev_idx)
        idxs.append(n)
        out = []
        pos = 0
        for ci in idxs:
            while pos < ci and self.in_block:
                line = lines[pos]
                out.extend(self.feed_plain(line.no, line.plain, line.text))
                pos += 1
            if pos < ci:
                self._fed += ci - pos
                pos = ci
            if ci < n and pos == ci:
                line = lines[ci]
                out.extend(self.feed_plain(line.no, line.plain, line.text))
                pos = ci + 1
        return out

    def feed_progress(self, line: LineLike) -> list[Event]:
        """A provisional carriage-return update (tqdm): only its progress counts; blocks and merged
        counts are left alone (the finished line comes later and is fed normally)."""
        m = self.ruleset.match(line.plain)
        if m is None or m.rule.kind is not Kind.PROGRESS:
            return []
        return self._on_match(line.no, line.plain, line.text, m)

    def _scanner_for(self, data: bytes) -> ByteScanner:
        if self._scanner is None or (self._scanner_sample < RETUNE_BYTES <= len(data)):
            sample = data[:RETUNE_BYTES]
            self._scanner = ByteScanner(self.ruleset, sample)
            self._scanner_sample = len(sample)
        return self._scanner

    def feed_plain(self, no: int, plain: str, text: str | None = None) -> list[Event]:
        """Like ``feed`` for a line given as its number and ANSI-free text."""
        self._fed += 1
        if not self._open and self._pending is None:
            if _TB_HEAD not in plain:
                m = self.ruleset.match(plain)
                if m is None:
                    return []
                return self._on_match(no, plain, text if text is not None else plain, m)
        return self._feed_slow(no, plain, text if text is not None else plain)

    def flush(self) -> list[Event]:
        """Close every open traceback (end of file, or the process is gone)."""
        out: list[Event] = []
        if self._pending is not None:
            no, plain, text, m = self._pending
            self._pending = None
            out.extend(self._on_match(no, plain, text, m, defer=False))
        for block in list(self._open):
            out.append(self._close(block, None))
        return out

    # ------------------------------------------------------------------ internals
    def _feed_slow(self, no: int, plain: str, text: str) -> list[Event]:
        out: list[Event] = []
        pre = split_prefix(plain)
        body = pre.body
        if self._pending is not None:
            hno, hplain, htext, hm = self._pending
            self._pending = None
            if _TB_HEAD in body and body.lstrip().startswith(_TB_HEAD):
                # the announced traceback: one block from the announcing line, with its rank
                hpre = split_prefix(hplain)
                self._open.append(
                    _Block(hpre.key, hpre.rank, hno, hpre.ts, hpre.body, [htext, text], last_fed=self._fed)
                )
                return out
            out.extend(self._on_match(hno, hplain, htext, hm, defer=False))
            if not self._open:
                if _TB_HEAD not in plain:
                    m = self.ruleset.match(plain)
                    if m is not None:
                        out.extend(self._on_match(no, plain, text, m))
                    return out
        if _TB_HEAD in body:
            if pre.dialect:
                self.dialect = pre.dialect
            existing = self._block_for(pre.key) if pre.key is not None else None
            if existing is not None and existing.frames == 0:
                existing.lines.append(text)  # a repeated header ("Traceback" after "hit an exception")
                existing.last_fed = self._fed
                return out
            if existing is not None:
                out.append(self._close(existing, None))
            head = body
            if "hit an exception" in body:
                self.dialect = self.dialect or "sglang"
            self._open.append(_Block(pre.key, pre.rank, no, pre.ts, head, [text], last_fed=self._fed))
            return out
        block = self._target(pre)
        if block is None:
            out.extend(self._expire())
            m = self.ruleset.match(plain)
            if m is not None:
                out.extend(self._on_match(no, plain, text, m))
            return out
        block.last_fed = self._fed
        stripped = body.strip()
        if not stripped:
            return out  # blank lines inside a traceback carry nothing
        if body[:1] in (" ", "\t"):
            block.lines.append(text)
            f = _FRAME.search(body)
            if f is not None:
                block.frames += 1
                block.frame = f"{_basename(f.group(1))}:{f.group(2)}"
            if len(block.lines) > MAX_BLOCK_LINES:
                out.append(self._close(block, None))
            return out
        if block.frames == 0:
            # Not a traceback after all (a header line quoted in a message): close it as incomplete and
            # judge this line on its own.
            out.append(self._close(block, None))
            m = self.ruleset.match(plain)
            if m is not None:
                out.extend(self._on_match(no, plain, text, m))
            return out
        block.lines.append(text)
        out.append(self._close(block, stripped))
        out.extend(self._expire())
        return out

    def _block_for(self, key: str) -> _Block | None:
        for block in self._open:
            if block.key == key:
                return block
        return None

    def _target(self, pre: Prefix) -> _Block | None:
        if pre.key is not None:
            return self._block_for(pre.key)
        # An unprefixed continuation line: the open block that has the fewest lines (ties: the oldest).
        # Whole blocks printed one after another and identical blocks interleaved line by line both
        # come out right.
        best: _Block | None = None
        for block in self._open:
            if best is None or len(block.lines) < len(best.lines):
                best = block
        return best

    def _expire(self) -> list[Event]:
        out: list[Event] = []
        for block in list(self._open):
            if self._fed - block.last_fed > STALE_AFTER_LINES:
                out.append(self._close(block, None))
        return out

    def _close(self, block: _Block, exc_line: str | None) -> Event:
        self._open.remove(block)
        where = f" at {block.frame}" if block.frame else ""
        if exc_line is not None:
            summary = _clip(exc_line, MAX_SUMMARY - len(where)) + where
            m = self.ruleset.match(exc_line)
            diagnosis = m.rule.diagnosis if m is not None and m.rule.kind is Kind.CRASH else "traceback"
        else:
            summary = "Traceback with no exception line" + where
            diagnosis = "traceback"
        first = Event(
            kind=Kind.CRASH,
            rule_id="traceback",
            summary=summary,
            line_no=block.start_no,
            text=block.lines[0] if block.lines else block.head,
            ranks=frozenset({block.rank}) if block.rank is not None else frozenset(),
            block=tuple(block.lines),
            diagnosis=diagnosis,
            key=f"traceback:{summary}",
            ts=block.ts,
        )
        return self._merge(first)

    def _merge(self, ev: Event) -> Event:
        old = self._merged.get(ev.key)
        if old is None:
            self._merged[ev.key] = ev
            return ev
        new = replace(old, count=old.count + 1, ranks=old.ranks | ev.ranks)
        self._merged[ev.key] = new
        return new

    def _on_match(self, no: int, plain: str, text: str, m: RuleMatch, *, defer: bool = True) -> list[Event]:
        rule = m.rule
        if defer and rule.id == "hit_exception" and not plain[m.match.end():].strip(" :"):
            self._pending = (no, plain, text, m)  # the traceback follows on the next line
            return []
        if rule.id in NEW_RUN_RULES and (self._merged or self._open):
            # A new launch appended to the same log: its errors are not merged with the last run's.
            self._merged.clear()
            self._open.clear()
        pre = split_prefix(plain)
        if pre.dialect and self.dialect is None:
            self.dialect = pre.dialect
        if rule.dialect:
            self.dialect = rule.dialect
        kind = rule.kind
        phase = rule.phase
        if kind is Kind.READY and rule.unless_dialect and self.dialect == rule.unless_dialect:
            kind = Kind.PHASE  # e.g. uvicorn's "Application startup complete." in an SGLang log
        ranks = frozenset({pre.rank}) if pre.rank is not None else frozenset()
        if kind in (Kind.CRASH, Kind.WARNING):
            body = _clip(pre.body)
            ev = Event(kind, rule.id, body, no, text, phase=phase, ranks=ranks, diagnosis=rule.diagnosis,
                       key=f"{rule.id}:{body}", ts=pre.ts)
            return [self._merge(ev)]
        progress = m.progress() if kind is Kind.PROGRESS else None
        summary = rule.summary if kind is not Kind.READY or not rule.user else _clip(pre.body)
        return [Event(kind, rule.id, summary, no, text, phase=phase, progress=progress, ranks=ranks,
                      diagnosis=rule.diagnosis, key=rule.id, ts=pre.ts, ends=rule.ends)]


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]
