"""Lines to events: rule matches, Traceback blocks grouped per rank, and the same error from N ranks merged."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import TYPE_CHECKING, Protocol

from symmtui.core import tracebacks as tb
from symmtui.core.decode import strip_ansi
from symmtui.core.lineparts import Prefix as Prefix
from symmtui.core.lineparts import split_prefix as split_prefix
from symmtui.core.rules import (
    PHASE_HTTP,
    PHASE_ORDER,
    Kind,
    Rule,
    RuleMatch,
    RuleSet,
    mask_quoted,
    message_part,
)

if TYPE_CHECKING:  # the batch prefilter (Hyperscan) is imported by the first batch that uses it
    from symmtui.core import litscan

MAX_SUMMARY = 200
BATCH_MIN = 64  # feed_many prefilters batches at least this long as one buffer
FIRST_BATCH_MIN = 512
"""...and a builder's first batch only from this long: setting up the prefilter (Hyperscan: its import
and database, ~5 ms) costs more than judging a short log line by line (a `wait` on a finished log)."""
RETUNE_BYTES = 1 << 20  # the byte prefilter is tuned again on the first batch this big
MAX_BLOCK_LINES = 400  # a traceback longer than this is closed as incomplete
STALE_AFTER_LINES = 300  # an open traceback that got no line for this many lines is closed as incomplete
TRACEBACK = "traceback"  # the rule id of traceback events (the catalogue entry for the header line)
PROCESS_EXIT = "process_exit"  # the rule id of the event the readiness machine makes when the process ends
_TB_HEAD = tb.HEADER
# The phases before the HTTP server starts: seeing one means the log's start is there.
_BEFORE_HTTP = frozenset(PHASE_ORDER[: PHASE_ORDER.index(PHASE_HTTP)])


@dataclass(frozen=True)
class Event:
    """Something a log line (or a block of lines) means.

    ``diagnosis`` is the id of the catalogue entry that names it (``entry``), ``facts`` the values its
    pattern captured (e.g. ``cap``), ``roles`` the entry's roles ("wrapper", "fatal", "new_run").
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
    roles: frozenset[str] = frozenset()
    facts: tuple[tuple[str, str], ...] = ()
    entry: Rule | None = field(default=None, compare=False, repr=False)

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
    prefix: str | None = None  # the shape of an unknown prefix learned from the header line
    lead: str | None = None  # exception text printed before the header on its line
    head_rule: Rule | None = None  # what the header line itself says ("warmup error:")
    headless: bool = False  # opened by a frame line: the log starts inside a traceback


class EventBuilder:
    """Feed lines in order, get events. Traceback blocks are collected per rank prefix and merged.

    ``thin_serving`` (the live engine): of a run of lines a "serving" rule matches (every decode
    batch and 200 OK line of a serving log) with nothing else matched between, only the first is
    judged and can make an event. The builder's state does not change within such a run, so the
    first one decides what every later one would (READY, or SGLang's warm-up request); the later
    ones are neither matched nor marked. ``feed_many`` finds that first line with a few ``find``
    calls per gap between other candidates, so a decode burst costs no Python per line.
    """

    def __init__(self, ruleset: RuleSet | None = None, *, thin_serving: bool = False) -> None:
        self.ruleset = ruleset if ruleset is not None else RuleSet()
        self.thin_serving = thin_serving
        self.dialect: str | None = None
        self._open: list[_Block] = []
        self._merged: dict[str, Event] = {}
        self._fed = 0
        self._scanner: litscan.LineFinder | None = None
        self._scanner_sample = 0
        # "Scheduler hit an exception:" with the traceback on the next line: held for one line
        self._pending: tuple[int, str, str, RuleMatch] | None = None
        self._started = False  # a bring-up phase of this run was seen (the log's start is there)
        self._serving_run = False  # a serving line was judged and nothing else matched since
        serving = RuleSet(r for r in self.ruleset.rules if "serving" in r.roles) if thin_serving else None
        # Serving lines are found by their literals in feed_many; a serving rule without one: judged one by one.
        self._serving_lits: tuple[str, ...] = ()
        self._scan_rules = self.ruleset
        if serving is not None and serving.rules and serving.literals and not serving.unanchored:
            self._serving_lits = serving.literals
            self._scan_rules = RuleSet(r for r in self.ruleset.rules if "serving" not in r.roles)

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
        self._started = False
        self._serving_run = False

    def feed(self, line: LineLike) -> list[Event]:
        """Events completed or updated by this line (usually none)."""
        return self.feed_plain(line.no, line.plain, line.text)

    def feed_many(self, lines: Sequence[LineLike]) -> list[Event]:
        """Like ``feed`` for each line in order, several times faster on big batches: the batch is
        prefiltered as one buffer (the same byte scanner ``scan`` uses) and only candidate lines (and
        every line of an open traceback) go through the rules."""
        n = len(lines)
        if n < BATCH_MIN or (n < FIRST_BATCH_MIN and self._scanner is None and self._fed == 0):
            out: list[Event] = []
            for line in lines:
                out.extend(self.feed_plain(line.no, line.plain, line.text))
            return out
        plains = [ln.plain for ln in lines]
        text = "\n".join(plains) + "\n"
        data = text.encode("utf-8", "replace")
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
        offs: list[int] | None = None  # where each line starts in ``text``, for the serving lines' search
        for ci in idxs:
            while pos < ci and self.in_block:
                line = lines[pos]
                out.extend(self.feed_plain(line.no, line.plain, line.text))
                pos += 1
            if pos < ci and self._serving_lits and not self._serving_run:
                if offs is None:
                    offs = [0, *accumulate(len(p) + 1 for p in plains)]
                pos = self._first_serving(lines, text, offs, pos, ci, out)
            if pos < ci:
                self._fed += ci - pos
                pos = ci
            if ci < n and pos == ci:
                line = lines[ci]
                out.extend(self.feed_plain(line.no, line.plain, line.text))
                pos = ci + 1
        return out

    def _first_serving(self, lines: Sequence[LineLike], text: str, offs: list[int], a: int, b: int,
                       out: list[Event]) -> int:
        """Judge lines ``[a, b)`` (no other candidate among them) up to the first one a serving rule
        matches; the index after the last line judged (the others are skipped as not candidates)."""
        while a < b and not self._serving_run:
            lo, hi = offs[a], offs[b]
            at = -1
            for lit in self._serving_lits:  # the nearest hit; each search stops at the best so far
                i = text.find(lit, lo, hi if at < 0 else min(hi, at + len(lit) - 1))
                if i >= 0:
                    at = i
            if at < 0:
                return a
            i = bisect_right(offs, at) - 1
            self._fed += i - a
            line = lines[i]
            out.extend(self.feed_plain(line.no, line.plain, line.text))
            a = i + 1
        return a

    def feed_progress(self, line: LineLike) -> list[Event]:
        """A provisional carriage-return update (tqdm): only its progress counts; blocks and merged
        counts are left alone (the finished line comes later and is fed normally)."""
        m = self.ruleset.match(line.plain)
        if m is None or m.rule.kind is not Kind.PROGRESS:
            return []
        return self._on_match(line.no, line.plain, line.text, m)

    def _scanner_for(self, data: bytes) -> litscan.LineFinder:
        if self._scanner is None or (self._scanner_sample < RETUNE_BYTES <= len(data)):
            from symmtui.core import litscan

            sample = data[:RETUNE_BYTES]
            self._scanner = litscan.finder(self._scan_rules, sample)
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
                if self.thin_serving and "serving" in m.rule.roles:
                    if self._serving_run:
                        return []  # decided by the run's first serving line
                    self._serving_run = True
                else:
                    self._serving_run = False
                return self._on_match(no, plain, text if text is not None else plain, m)
        self._serving_run = False
        return self._feed_slow(no, plain, text if text is not None else plain)

    def flush(self) -> list[Event]:
        """Close every open traceback (end of file, or the process is gone)."""
        out: list[Event] = []
        if self._pending is not None:
            no, plain, text, m = self._pending
            self._pending = None
            out.extend(self._on_match(no, plain, text, m, defer=False))
        for block in list(self._open):
            out.extend(self._close(block, None))
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
                    _Block(hpre.key, hpre.rank, hno, hpre.ts, hpre.body, [htext, text], last_fed=self._fed,
                           head_rule=hm.rule)
                )
                return out
            out.extend(self._on_match(hno, hplain, htext, hm, defer=False))
            if not self._open:
                if _TB_HEAD not in plain:
                    m = self.ruleset.match(plain)
                    if m is not None:
                        out.extend(self._on_match(no, plain, text, m))
                    return out
        at = tb.header_at(mask_quoted(body)) if _TB_HEAD in body else -1
        if at >= 0:
            if pre.dialect:
                self.dialect = pre.dialect
            existing = self._block_for(pre.key) if pre.key is not None else None
            if existing is not None and existing.frames == 0 and not existing.headless:
                existing.lines.append(text)  # a repeated header ("Traceback" after "hit an exception")
                existing.last_fed = self._fed
                return out
            if existing is not None:
                out.extend(self._close(existing, None))
            before = body[:at]
            head_rule = None
            if before.strip():
                head_m = self.ruleset.match(plain)
                head_rule = head_m.rule if head_m is not None and head_m.rule.id != TRACEBACK else None
                if head_rule is not None and head_rule.dialect:
                    self.dialect = head_rule.dialect
            lead = tb.lead_message(before)
            raw_before = plain[: len(plain) - len(body) + at]
            prefix = tb.shape(raw_before) if raw_before.strip() and lead is None else None
            self._open.append(_Block(pre.key, pre.rank, no, pre.ts, body, [text], last_fed=self._fed,
                                     prefix=prefix, lead=lead, head_rule=head_rule))
            return out
        block = self._target(pre)
        if block is None:
            out.extend(self._expire())
            m = self.ruleset.match(plain)
            if m is not None:
                out.extend(self._on_match(no, plain, text, m))
            return out
        if block.prefix is not None:
            n = len(block.prefix)
            if tb.shape(plain[:n]) == block.prefix:
                body = plain[n:]
            else:
                block.prefix = None
        block.last_fed = self._fed
        stripped = body.strip()
        if not stripped:
            return out  # blank lines inside a traceback carry nothing
        if tb.is_continuation(body):
            block.lines.append(text)
            loc = tb.frame_location(body)
            if loc is not None:
                block.frames += 1
                block.frame = loc
            if len(block.lines) > MAX_BLOCK_LINES:
                out.extend(self._close(block, None))
            return out
        if block.frames == 0:
            # Not a traceback after all (a header line quoted in a message): close it and judge this
            # line on its own.
            out.extend(self._close(block, None, quoted=True))
            m = self.ruleset.match(plain)
            if m is not None:
                out.extend(self._on_match(no, plain, text, m))
            return out
        exc = stripped if tb.is_exception_line(stripped) else tb.exception_inside(stripped)
        if exc is None:
            # The exception line is missing (cut, or another process's line came first): close the
            # block with what it has and judge this line on its own.
            out.extend(self._close(block, None))
            m = self.ruleset.match(plain)
            if m is not None:
                out.extend(self._on_match(no, plain, text, m))
            return out
        block.lines.append(text)
        out.extend(self._close(block, exc))
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
                out.extend(self._close(block, None))
        return out

    def _close(self, block: _Block, exc_line: str | None, *, quoted: bool = False) -> list[Event]:
        """The event of a finished block. ``quoted``: a header with no frames that another line
        followed (a header quoted in a message, not a traceback): no event unless its line says more."""
        self._open.remove(block)
        where = f" at {block.frame}" if block.frame else ""
        exc = exc_line
        if exc is None:
            exc = block.lead or _exception_in(block.lines[1:] if not block.headless else block.lines)
        if exc is None and (block.headless or quoted):
            if block.headless or block.head_rule is None or not block.head_rule.diagnoses:
                return []  # a quoted header or a stray frame line, not a traceback
        summary = (_clip(exc, MAX_SUMMARY - len(where)) if exc else "Traceback with no exception line") + where
        text_all = "\n".join(block.lines)
        cm = self.ruleset.classify(exc or summary, text_all)
        head = block.head_rule
        if head is not None and head.diagnoses and (cm is None or "generic" in cm.rule.roles):
            # "Initialization failed. warmup error: Traceback ..." names the failure better than the
            # generic entry for its AssertionError does.
            hm = self.ruleset.classify(message_part(block.lines[0]), text_all)
            cm = hm if hm is not None and hm.rule is head else cm
        roles = cm.rule.roles if cm is not None else frozenset()
        if head is not None:
            roles = roles | (head.roles - {"announce", "new_run"})
        first = Event(
            kind=Kind.CRASH,
            rule_id=TRACEBACK,
            summary=summary,
            line_no=block.start_no,
            text=block.lines[0] if block.lines else block.head,
            ranks=frozenset({block.rank}) if block.rank is not None else frozenset(),
            block=tuple(block.lines),
            diagnosis=cm.rule.id if cm is not None else None,
            key=f"traceback:{summary}",
            ts=block.ts,
            roles=roles,
            facts=_facts(cm),
            entry=cm.rule if cm is not None else None,
        )
        return [self._merge(first)]

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
        if rule.id == TRACEBACK:
            pre = split_prefix(plain)
            if tb.frame_location(pre.body) is not None and tb.is_continuation(pre.body):
                # A frame line with no header before it: the log starts inside a traceback.
                loc = tb.frame_location(pre.body)
                self._open.append(_Block(pre.key, pre.rank, no, pre.ts, "", [text], frame=loc, frames=1,
                                         last_fed=self._fed, headless=True))
            return []
        if defer and "announce" in rule.roles and not plain[plain.find(m.match.group(0)) + len(m.match.group(0)):].strip(" :"):
            self._pending = (no, plain, text, m)  # the traceback follows on the next line
            return []
        if "new_run" in rule.roles:
            self._started = False
        if "new_run" in rule.roles and (self._merged or self._open):
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
        if kind is Kind.READY and "serving" in rule.roles and self.dialect == "sglang" and self._started:
            return []  # SGLang's own warm-up request: its "fired up" line is the marker
        if kind is Kind.PHASE and (phase in _BEFORE_HTTP or rule.ends in _BEFORE_HTTP):
            self._started = True
        ranks = frozenset({pre.rank}) if pre.rank is not None else frozenset()
        if kind in (Kind.CRASH, Kind.WARNING):
            body = _clip(pre.body)
            cm = self.ruleset.classify(pre.body, plain) if kind is Kind.CRASH or not rule.diagnoses else None
            if cm is None and rule.diagnoses:
                cm = m
            roles = rule.roles | (cm.rule.roles if cm is not None else frozenset())
            ev = Event(kind, rule.id, body, no, text, phase=phase, ranks=ranks,
                       diagnosis=cm.rule.id if cm is not None else None, key=f"{rule.id}:{body}", ts=pre.ts,
                       roles=roles, facts=_facts(cm), entry=cm.rule if cm is not None else None)
            return [self._merge(ev)]
        progress = m.progress() if kind is Kind.PROGRESS else None
        summary = rule.summary if kind is not Kind.READY or not rule.user else _clip(pre.body)
        return [Event(kind, rule.id, summary, no, text, phase=phase, progress=progress, ranks=ranks,
                      diagnosis=rule.id if rule.diagnoses else None, key=rule.id, ts=pre.ts, ends=rule.ends,
                      roles=rule.roles, facts=_facts(m) if rule.diagnoses else (),
                      entry=rule if rule.diagnoses else None)]


def _facts(m: RuleMatch | None) -> tuple[tuple[str, str], ...]:
    if m is None:
        return ()
    return tuple((k, v) for k, v in m.match.groupdict().items() if v is not None)


def _exception_in(lines: Sequence[str]) -> str | None:
    """The last exception named in a block's lines (the exception line was cut or run together)."""
    for line in reversed(lines):
        body = split_prefix(strip_ansi(line)).body.strip()
        if tb.frame_location(body) is not None and body.startswith("File "):
            continue
        found = tb.exception_inside(body)
        if found is not None:
            return found
    return None
