"""Records to events: rule matches, tracebacks assembled per writing process (from a header or a first frame to the
exception and its detail lines, chains kept as one), the same error from N ranks merged, each occurrence's span kept.

A physical line holds one record, or several where concurrent writers joined them (``logs.lineparts``). Each
record names its source (the prefix's key: "TP3", "rank3", "pid123"; None when unprefixed). A traceback is
assembled per source: its lines are the source's own, or unprefixed lines that follow (SGLang logs a traceback
as one record whose first line alone carries the prefix). Its event is emitted at the exception line and
re-emitted (the same key: readers replace it) as detail lines (NCCL's ``Last error:``, CUDA's "might be
asynchronously reported", a hard-wrapped message) and chained tracebacks arrive; the diagnosis comes from the
most specific of its exceptions and details (a specific catalogue entry over a generic one; the innermost
exception of a chain over its wrappers).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate
from typing import TYPE_CHECKING, ClassVar, Protocol

from msgspec import Struct, field
from msgspec.structs import replace

from symmtui.aside import Aside
from symmtui.judge import dialects
from symmtui.judge import tracebacks as tb
from symmtui.judge.dialects import dialect as dialect_of
from symmtui.judge.rules import (
    PHASE_HTTP,
    PHASE_ORDER,
    Kind,
    Rule,
    RuleMatch,
    RuleSet,
    mask_quoted,
    message_part,
)
from symmtui.logs.decode import strip_ansi
from symmtui.logs.lineparts import Prefix as Prefix
from symmtui.logs.lineparts import has_prefix, records
from symmtui.logs.lineparts import split_prefix as split_prefix

if TYPE_CHECKING:  # the batch prefilter (Hyperscan) is imported by the first batch that uses it
    from symmtui.judge import litscan

MAX_SUMMARY = 200
BATCH_MIN = 64  # feed_many prefilters batches at least this long as one buffer
FIRST_BATCH_MIN = 512
"""...and a builder's first batch only from this long: setting up the prefilter (Hyperscan: its import
and database, ~5 ms) costs more than judging a short log line by line (a `wait` on a finished log)."""
RETUNE_BYTES = 1 << 20  # the byte prefilter is tuned again on the first batch this big
MAX_BLOCK_LINES = 400  # a traceback longer than this is closed as incomplete
STALE_AFTER_LINES = 300  # an open traceback that got no line for this many lines is closed as incomplete
MAX_SPANS = 64  # occurrences of one event whose line spans are kept (its count goes on)
TRACEBACK = "traceback"  # the rule id of traceback events (the catalogue entry for the header line)
BARE_EXCEPTION = "exception"  # the rule id of a record that is only an exception line
PROCESS_EXIT = "process_exit"  # the rule id of the event the readiness machine makes when the process ends
_TB_HEAD = tb.HEADER
_NUMBERS = re.compile(r"\d+(?:\.\d+)?")
# The phases before the HTTP server starts: seeing one means the log's start is there.
_BEFORE_HTTP = frozenset(PHASE_ORDER[: PHASE_ORDER.index(PHASE_HTTP)])


class Event(Aside, Struct, frozen=True):
    """Something a log record (or a traceback of several lines) means.

    ``diagnosis`` is the id of the catalogue entry that names it (``entry``), ``facts`` the values its
    pattern captured (e.g. ``cap``), ``roles`` the entry's roles ("wrapper", "fatal", "new_run", "generic") and
    the builder's ("fatal" for a worker process's traceback: it ends a server even after READY).
    ``key`` identifies the event across updates: the same traceback or warning from another rank, or the same
    traceback grown by detail lines, is re-emitted as an updated Event with the same key (a larger ``count``
    and more ``ranks`` for another occurrence); consumers replace the older one. ``spans`` holds the first
    and last line of each occurrence (at most MAX_SPANS), ``source`` the writing process of the first
    (the prefix key, None when unprefixed). ``ts`` is the log's own timestamp (epoch seconds, naive times read
    as UTC) when the line carries one. ``ends`` names the phase a phase-end marker closes.
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
    entry: Rule | None = None
    """The catalogue entry that made it, for its diagnosis: aside from the value (not compared, not recorded)."""
    source: str | None = None
    spans: tuple[tuple[int, int], ...] = ()
    offset: int = -1
    """The byte offset in the log file of the line ``line_no`` names (-1: not known, a line fed without one)."""
    offsets: tuple[tuple[int, int], ...] = ()
    """Parallel to ``spans``: the byte offsets of each occurrence's first and last line. Line numbers may count
    from where the engine attached to a big log; offsets are always the file's (the log pane places rows by them)."""

    ASIDE: ClassVar[tuple[str, ...]] = ("entry",)

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
    """What the builder reads from a follower line (``symmtui.logs.follow.LogLine`` fits; ``offset``, the
    line's byte offset in the file, is read where the line has one)."""

    @property
    def no(self) -> int: ...

    @property
    def text(self) -> str: ...

    @property
    def plain(self) -> str: ...


def _offset(line: LineLike) -> int:
    """The line's byte offset in its file, -1 where it has none (a test's plain line)."""
    off = getattr(line, "offset", -1)
    return off if isinstance(off, int) else -1


def _clip(s: str, n: int = MAX_SUMMARY) -> str:
    s = s.strip()
    return s if len(s) <= n else s[: n - 1] + "…"


def _worker(pre: Prefix) -> bool:
    """Whether the record comes from a server process whose crash ends the server (a rank, an engine core, a
    worker), not from a front process (the engine table's ``front``: vLLM's API server answers requests, a
    request's traceback is the request's) or an unprefixed writer (uvicorn, the launcher)."""
    return pre.key is not None and (pre.proc is None or pre.proc not in dialects.front_processes())


_FRAMES, _EXC, _CHAIN = 0, 1, 2  # a block collects frames; its exception came (details may follow); a chain marker came


class _Section(Struct):
    """One traceback of a chain: its innermost frame, its exception line and the lines continuing it."""

    frame: str | None = None
    frames: int = 0
    exc: str | None = None
    details: list[str] = field(default_factory=list)


class _Block(Struct):
    key: str | None
    rank: int | None
    start_no: int
    start_off: int
    ts: float | None
    head: str
    lines: list[str]
    serial: int
    end_no: int = 0
    end_off: int = -1
    last_fed: int = 0
    prefix: str | None = None  # the shape of an unknown prefix learned from the header line
    lead: str | None = None  # exception text printed before the header on its line
    head_rule: Rule | None = None  # what the header line itself says ("warmup error:")
    headless: bool = False  # opened by a frame line: the log starts inside a traceback
    worker: bool = False  # written by a server process whose crash ends the server (see _worker)
    per_line: bool = False  # every line of it carries the source's prefix (vLLM, torchrun), not the header alone
    state: int = _FRAMES
    exc_key: str | None = None  # the source of its exception line: detail lines come from the same one
    sections: list[_Section] = field(default_factory=lambda: [_Section()])
    emitted: str | None = None  # the merged key its event went under (later versions replace it)

    @property
    def frames(self) -> int:
        return sum(s.frames for s in self.sections)

    def add(self, no: int, off: int, text: str, fed: int) -> None:
        self.lines.append(text)
        self.end_no = no
        self.end_off = off
        self.last_fed = fed


class _Death(Struct):
    """A death's block (catalogue entries with ``follow``): its line, the lines after it that belong to it."""

    rule: Rule
    match: RuleMatch
    no: int
    off: int
    text: str
    message: str
    pre: Prefix
    serial: int
    key: str
    lines: list[str]
    follows: list[re.Pattern[str]]
    end_no: int
    end_off: int
    detail: str | None = None
    expect_detail: bool = False
    blanks: int = 0
    dirty: bool = False  # lines joined since its event was last emitted


class _Tally(Struct):
    """One keyed event's occurrences: the first one's event (as it last grew) and the count, ranks and spans of all.
    A repeat is counted here, never rebuilt: the Event is made again only when a batch ends (``_drain``)."""

    shown: Event
    first: int
    count: int
    ranks: frozenset[int]
    roles: frozenset[str]
    kept: dict[int, tuple[tuple[int, int], tuple[int, int]]]


_SERVING = "\x00serving"  # the memo's answer for a serving line (see EventBuilder._memo)
MAX_MEMO = 4096  # lines whose judgement the builder remembers (a flood repeats its lines)


MAX_DEATH_BLANKS = 3  # blank lines in a row that a death's report may hold (a Go dump's goroutines are apart)


class EventBuilder:
    """Feed lines in order, get events. Tracebacks are assembled per source and merged across ranks.

    ``thin_serving`` (the live engine): of a run of lines a "serving" rule matches (every decode
    batch and 200 OK line of a serving log) with nothing else matched between, only the first whose
    judgement could still change anything is judged and can make an event; the later ones are neither
    matched nor marked. ``feed_many`` finds those lines with a few ``find`` calls per gap between other
    candidates, so a decode burst costs no Python per line.
    """

    def __init__(self, ruleset: RuleSet | None = None, *, thin_serving: bool = False) -> None:
        self.ruleset = ruleset if ruleset is not None else RuleSet()
        self.thin_serving = thin_serving
        self.dialect: str | None = None
        self._open: list[_Block] = []
        self._tallies: dict[str, _Tally] = {}
        self._dirty: dict[str, None] = {}  # keys repeated since the last drain (their updated Events are owed)
        # The judgement of a line seen before, when it depends on the line alone (a warning's or an error line's key
        # and ranks, a serving line) and nothing is open: a flood's repeated lines cost a lookup, not the rules.
        self._memo: dict[str, tuple[str, frozenset[int]] | str] = {}
        self._memo_line: str | None = None  # the physical line being judged, when it may be remembered
        self._serial = 0
        self._fed = 0
        self._scanner: litscan.LineFinder | None = None
        self._scanner_sample = 0
        # "Scheduler hit an exception:" with the traceback on the next line: held for one record
        self._pending: tuple[int, int, str, str, RuleMatch] | None = None
        self._started = False  # a bring-up phase of this run was seen (the log's start is there)
        self._warmed = False  # the engine's own warm-up request was answered (judge.dialects)
        self._serving_run = False  # a serving line was judged, nothing else matched since, and another can change nothing
        self._request_open = False  # a request record whose content goes on over the next unprefixed lines
        self._death: _Death | None = None  # a death's report being read (its what(), its stack, its dump)
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
        """True while a traceback is open (or announced), a death's report or a request's content goes on: every
        following line matters (scan stops skipping)."""
        return bool(self._open) or self._pending is not None or self._request_open or self._death is not None

    def reset(self) -> None:
        """Forget everything (a relaunch)."""
        self.dialect = None
        self._open.clear()
        self._tallies.clear()
        self._dirty.clear()
        self._memo.clear()
        self._fed = 0
        self._scanner = None
        self._scanner_sample = 0
        self._pending = None
        self._started = False
        self._warmed = False
        self._serving_run = False
        self._request_open = False
        self._death = None

    def feed(self, line: LineLike) -> list[Event]:
        """Events completed or updated by this line (usually none)."""
        return self.feed_plain(line.no, line.plain, line.text, _offset(line))

    def feed_deferred(self, no: int, plain: str, text: str | None = None, off: int = -1) -> list[Event]:
        """Like ``feed_plain``, but the updates of events seen before (a count, a rank more) are owed until
        ``drain`` or ``flush``: a flood of repeats costs a count each (``scan``)."""
        return self._line(no, plain, text, off)

    def drain(self) -> list[Event]:
        """The updated Event of each key repeated since the last drain (its count, ranks and spans)."""
        if not self._dirty:
            return []
        out = [self._shape(self._tallies[k]) for k in self._dirty if k in self._tallies]
        self._dirty.clear()
        return out

    def feed_many(self, lines: Sequence[LineLike], *, part_of: int = 0) -> list[Event]:
        """Like ``feed`` for each line in order, several times faster on big batches: the batch is
        prefiltered as one buffer (the same byte scanner ``scan`` uses) and only candidate lines (and
        every line of an open traceback) go through the rules. ``part_of``: the lines of the whole batch
        ``lines`` begins, when the caller feeds it in chunks (a first chunk of a long batch is prefiltered too:
        judged line by line, the first 64 KiB of a served log's last 0.5 MB took 34 ms, prefiltered 9)."""
        n = len(lines)
        if n < BATCH_MIN or (max(n, part_of) < FIRST_BATCH_MIN and self._scanner is None and self._fed == 0):
            out: list[Event] = []
            for line in lines:
                out.extend(self._line(line.no, line.plain, line.text, _offset(line)))
            return out + self.drain()
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
                out.extend(self._line(line.no, line.plain, line.text, _offset(line)))
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
                out.extend(self._line(line.no, line.plain, line.text, _offset(line)))
                pos = ci + 1
        return out + self.drain()

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
            out.extend(self._line(line.no, line.plain, line.text, _offset(line)))
            a = i + 1
        return a

    def feed_progress(self, line: LineLike) -> list[Event]:
        """A provisional carriage-return update (tqdm): only its progress counts; blocks and merged
        counts are left alone (the finished line comes later and is fed normally)."""
        m = self.ruleset.match(line.plain)
        if m is None or m.rule.kind is not Kind.PROGRESS:
            return []
        self._memo_line = None
        return self._on_match(line.no, _offset(line), line.plain, line.text, m)

    def _scanner_for(self, data: bytes) -> litscan.LineFinder:
        if self._scanner is None or (self._scanner_sample < RETUNE_BYTES <= len(data)):
            from symmtui.judge import litscan  # here: the literal scanner, for a long line only

            sample = data[:RETUNE_BYTES]
            self._scanner = litscan.finder(self._scan_rules, sample)
            self._scanner_sample = len(sample)
        return self._scanner

    def feed_plain(self, no: int, plain: str, text: str | None = None, off: int = -1) -> list[Event]:
        """Like ``feed`` for a line given as its number and ANSI-free text (one physical line: its records);
        ``off`` is its byte offset in the file (-1: unknown), carried into the events it makes."""
        out = self._line(no, plain, text, off)
        return out + self.drain() if self._dirty else out

    def remembered(self, plain: str, no: int, off: int) -> bool:
        """Whether ``plain`` is a line judged before whose judgement depends on it alone (see ``_memo``), nothing
        being open: then it is counted (its event's occurrence, or a serving line of the run) and needs no more."""
        if self._open or self._pending is not None or self._death is not None or self._request_open:
            return False
        hit = self._memo.get(plain)
        if hit is None:
            return False
        if isinstance(hit, str):  # _SERVING
            if not self._serving_run:
                return False
            self._fed += 1
            return True  # decided by the run's first serving line
        key = hit[0]
        tally = self._tallies.get(key)
        if tally is None:
            return False
        self._fed += 1
        tally.count += 1  # (inline: a flood's every line comes this way)
        if len(tally.kept) < MAX_SPANS:
            tally.kept[self._next_serial()] = ((no, no), (off, off))
        if not hit[1] <= tally.ranks:
            tally.ranks = tally.ranks | hit[1]
        self._dirty[key] = None
        return True

    def _line(self, no: int, plain: str, text: str | None, off: int) -> list[Event]:
        """One physical line: its records judged; the updates of repeated events owed (``drain``)."""
        if self.remembered(plain, no, off):
            return []
        quiet = not self._open and self._pending is None and self._death is None and not self._request_open
        shown = text if text is not None else plain
        if self._request_open:  # a request's content over several lines (a prompt with real newlines)
            if not has_prefix(plain):
                self._fed += 1
                return []
            self._request_open = False
        recs, self._request_open = records(plain)
        if len(recs) == 1:
            self._memo_line = plain if quiet and not self._request_open else None
            return self._feed_record(no, off, recs[0], shown)
        self._memo_line = None
        out: list[Event] = []
        for rec in recs:
            out.extend(self._feed_record(no, off, rec, rec))
        return out

    def _remember(self, answer: tuple[str, frozenset[int]] | str) -> None:
        """Remember the judgement of the line being judged (see ``_memo``)."""
        line = self._memo_line
        if line is None:
            return
        if len(self._memo) >= MAX_MEMO:
            self._memo.clear()
        self._memo[line] = answer

    def flush(self) -> list[Event]:
        """Close every open traceback (end of file, or the process is gone); the updates owed (``drain``)."""
        out: list[Event] = self._end_death()
        if self._pending is not None:
            no, off, plain, text, m = self._pending
            self._pending = None
            out.extend(self._on_match(no, off, plain, text, m, defer=False))
        for block in list(self._open):
            out.extend(self._close(block))
        return out + self.drain()

    # ------------------------------------------------------------------ one record
    def _feed_record(self, no: int, off: int, plain: str, text: str) -> list[Event]:
        self._fed += 1
        if self._death is not None:
            joined = self._death_line(no, off, plain, text)
            if joined is not None:
                return joined
            ended = self._end_death()
            return ended + self._feed_record_after(no, off, plain, text)
        return self._feed_record_after(no, off, plain, text)

    def _feed_record_after(self, no: int, off: int, plain: str, text: str) -> list[Event]:
        if not self._open and self._pending is None and _TB_HEAD not in plain and 'File "' not in plain:
            m = self.ruleset.match(plain)
            if m is None:
                return self._bare(no, off, plain, text)
            if self.thin_serving and "serving" in m.rule.roles:
                self._remember(_SERVING)
                if self._serving_run:
                    return []  # decided by the run's first serving line
                warmup = self._warmup_line(m.rule)  # (asked first: judging it may end the warm-up)
                out = self._on_match(no, off, plain, text, m)
                self._serving_run = bool(out) or not warmup
                return out
            self._serving_run = False
            return self._on_match(no, off, plain, text, m)
        self._serving_run = False
        return self._feed_slow(no, off, plain, text)

    def _warmup_line(self, rule: Rule) -> bool:
        """In a log whose start is there, before the engine's own warm-up request was answered, a line of this
        serving entry is the warm-up's (judge.dialects)."""
        return self._started and not self._warmed and rule.id in dialect_of(self.dialect).warmup_entries

    def _bare(self, no: int, off: int, plain: str, text: str) -> list[Event]:
        """A record that matched no rule: an event if it is nothing but an exception line (a worker's last
        words ``ValueError: Current node has no GPU available``, or the end of a traceback the excerpt cut)."""
        if "rror" not in plain and "xception" not in plain and "ailure" not in plain:
            return []
        pre = split_prefix(plain)
        body = pre.body.strip()
        if not tb.is_bare_exception(body):
            return []
        cm = self.ruleset.classify(body, plain)
        roles = (cm.rule.roles if cm is not None else frozenset({"generic"})) | {"bare"}
        if _worker(pre):
            roles |= {"fatal"}
        summary = _clip(body)
        ev = Event(Kind.CRASH, BARE_EXCEPTION, summary, no, text, ranks=_ranks(pre), key=f"exception:{summary}", offset=off,
                   ts=pre.ts, roles=roles, diagnosis=cm.rule.id if cm is not None else None, facts=_facts(cm),
                   entry=cm.rule if cm is not None else None, source=pre.key)
        return self._merge(ev, self._next_serial(), (no, no), (off, off))

    def _feed_slow(self, no: int, off: int, plain: str, text: str) -> list[Event]:
        out: list[Event] = []
        pre = split_prefix(plain)
        body = pre.body
        if self._pending is not None:
            hno, hoff, hplain, htext, hm = self._pending
            self._pending = None
            if _TB_HEAD in body and body.lstrip().startswith(_TB_HEAD):
                # the announced traceback: one block from the announcing line, with its rank
                hpre = split_prefix(hplain)
                block = self._open_block(hpre, hno, hoff, hpre.body, htext, head_rule=hm.rule)
                block.add(no, off, text, self._fed)
                return out
            out.extend(self._on_match(hno, hoff, hplain, htext, hm, defer=False))
        at = tb.header_at(mask_quoted(body)) if _TB_HEAD in body else -1
        if at >= 0:
            out.extend(self._header(no, off, plain, text, pre, at))
            return out
        target = self._target(pre, body)
        if target is None:
            out.extend(self._expire())
            if tb.is_frame(pre.body):  # a frame with no header before it: the log starts inside a traceback
                loc = tb.frame_location(pre.body)
                new = self._open_block(pre, no, off, "", text, headless=True)
                new.sections[0].frame, new.sections[0].frames = loc, 1
                return out
            out.extend(self._judge(no, off, plain, text))
            return out
        if target.prefix is not None:
            n = len(target.prefix)
            if tb.shape(plain[:n]) == target.prefix:
                body = plain[n:]
            else:
                target.prefix = None
        out.extend(self._grow(target, no, off, plain, text, pre, body))
        return out

    def _header(self, no: int, off: int, plain: str, text: str, pre: Prefix, at: int) -> list[Event]:
        """A ``Traceback (most recent call last):`` record: a chain's next traceback, a repeated header, or a new block."""
        out: list[Event] = []
        body = pre.body
        if pre.dialect:
            self.dialect = pre.dialect
        existing = self._block_for(pre.key) if pre.key is not None else self._chained()
        if existing is not None and existing.state == _CHAIN:
            existing.sections.append(_Section())
            existing.state = _FRAMES
            existing.add(no, off, text, self._fed)
            return out
        if existing is not None and existing.frames == 0 and not existing.headless and existing.state == _FRAMES:
            existing.add(no, off, text, self._fed)  # a repeated header ("Traceback" after "hit an exception")
            return out
        if existing is not None:
            out.extend(self._close(existing))
        before = body[:at]
        head_rule = None
        if before.strip():
            head_m = self.ruleset.match(plain)
            head_rule = head_m.rule if head_m is not None and head_m.rule.id != TRACEBACK else None
            if head_rule is not None and head_rule.dialect:
                self.dialect = head_rule.dialect
        lead = tb.lead_message(before)
        raw_before = plain[: len(plain) - len(body) + at]
        block = self._open_block(pre, no, off, body, text, head_rule=head_rule)
        block.lead = lead
        block.prefix = tb.shape(raw_before) if raw_before.strip() and lead is None and pre.key is None else None
        return out

    def _grow(self, block: _Block, no: int, off: int, plain: str, text: str, pre: Prefix, body: str) -> list[Event]:
        """The next record of an open block's source."""
        out: list[Event] = []
        stripped = body.strip()
        sec = block.sections[-1]
        if pre.key is not None and pre.key == block.key:
            block.per_line = True
        elif block.per_line and pre.key is None and stripped and block.state != _EXC:
            block.add(no, off, text, self._fed)  # the rest of a line a terminal wrapped (kubectl, a narrow pane)
            return out
        if block.state == _EXC:
            same = pre.key == block.exc_key
            if tb.is_chain(body) and same:
                block.state = _CHAIN
                block.add(no, off, text, self._fed)
                return out
            if same and tb.is_detail(body) and not self._own_record(plain):
                sec.details.append(stripped)
                block.add(no, off, text, self._fed)
                out.extend(self._emit(block))
                if len(sec.details) >= tb.MAX_DETAIL_LINES:
                    out.extend(self._close(block))
                return out
            out.extend(self._close(block))
            if stripped:
                out.extend(self._judge(no, off, plain, text))
            return out
        if not stripped:
            block.last_fed = self._fed
            return out  # blank lines inside a traceback carry nothing
        if block.state == _CHAIN:
            out.extend(self._close(block))  # a chain marker with no traceback after it
            out.extend(self._judge(no, off, plain, text))
            return out
        if tb.is_chain(body):
            block.state = _CHAIN  # the exception line was cut: the chain goes on
            block.add(no, off, text, self._fed)
            return out
        after_frame = bool(block.lines) and tb.is_frame(_body_of(block.lines[-1], block))
        if tb.is_continuation(body) or tb.is_frame(body) or tb.is_elision(body) or (
                after_frame and not tb.is_exception_line(stripped) and not self._own_record(plain)):
            # a frame, its source line (indented, or not: a pasted excerpt loses indentation), carets, "..."
            block.add(no, off, text, self._fed)
            loc = tb.frame_location(body) if tb.is_frame(body) else None
            if loc is not None:
                sec.frames += 1
                sec.frame = loc
            if len(block.lines) > MAX_BLOCK_LINES:
                out.extend(self._close(block))
            return out
        if block.frames == 0:
            # Not a traceback after all (a header line quoted in a message): close it and judge this
            # line on its own.
            out.extend(self._close(block, quoted=True))
            out.extend(self._judge(no, off, plain, text))
            return out
        exc = stripped if tb.is_exception_line(stripped) else tb.exception_inside(stripped)
        if exc is None:
            # The exception line is missing (cut, or another process's line came first): close the
            # block with what it has and judge this line on its own.
            out.extend(self._close(block))
            out.extend(self._judge(no, off, plain, text))
            return out
        sec.exc = exc
        block.state = _EXC
        block.exc_key = pre.key
        block.add(no, off, text, self._fed)
        out.extend(self._emit(block))
        out.extend(self._expire())
        return out

    def _own_record(self, plain: str) -> bool:
        """A line the catalogue names as a record of its own (a wrapper's "Killed", a phase, a death): no detail line,
        no frame's source line."""
        m = self.ruleset.match(plain)
        return m is not None and (m.rule.kind is not Kind.CRASH or bool(m.rule.roles & {"wrapper", "new_run", "fatal"}))

    def _judge(self, no: int, off: int, plain: str, text: str) -> list[Event]:
        """A record outside every traceback, judged by the rules."""
        if _TB_HEAD in plain:
            pre = split_prefix(plain)
            at = tb.header_at(mask_quoted(pre.body))
            if at >= 0:
                return self._header(no, off, plain, text, pre, at)
        m = self.ruleset.match(plain)
        if m is None:
            return self._bare(no, off, plain, text)
        if m.rule.id == TRACEBACK:
            return []
        return self._on_match(no, off, plain, text, m)

    def _open_block(self, pre: Prefix, no: int, off: int, head: str, text: str, *, head_rule: Rule | None = None,
                    headless: bool = False) -> _Block:
        worker = _worker(pre) or (head_rule is not None and "announce" in head_rule.roles)
        block = _Block(pre.key, pre.rank, no, off, pre.ts, head, [text], self._next_serial(), end_no=no, end_off=off,
                       last_fed=self._fed, head_rule=head_rule, headless=headless, worker=worker)
        self._open.append(block)
        return block

    def _next_serial(self) -> int:
        self._serial += 1
        return self._serial

    def _block_for(self, key: str) -> _Block | None:
        for block in self._open:
            if block.key == key:
                return block
        return None

    def _chained(self) -> _Block | None:
        """The open block waiting for its chain's next traceback (an unprefixed header continues it)."""
        best: _Block | None = None
        for block in self._open:
            if block.state == _CHAIN and (best is None or len(block.lines) < len(best.lines)):
                best = block
        return best

    def _target(self, pre: Prefix, body: str) -> _Block | None:
        if pre.key is not None:
            own = self._block_for(pre.key)
            if own is not None:
                return own
        # An unprefixed record (or one of a source with no block of its own): the open block it continues.
        # A frame goes to a block still collecting frames; a line after an exception to the block waiting for
        # its details. Among several, the one with the fewest lines (ties: the oldest): whole blocks printed
        # one after another and identical blocks interleaved line by line both come out right.
        frame = tb.is_frame(body) or tb.is_continuation(body)
        best: _Block | None = None
        for block in self._open:
            if pre.key is not None and block.key is not None:
                continue  # another source's block
            if frame and block.state == _EXC and block.exc_key is None:
                continue
            if best is None or (best.state == _EXC) > (block.state == _EXC) or (
                    (best.state == _EXC) == (block.state == _EXC) and len(block.lines) < len(best.lines)):
                best = block
        if best is not None and pre.key is not None and best.exc_key is not None:
            return None
        return best

    def _expire(self) -> list[Event]:
        out: list[Event] = []
        for block in list(self._open):
            if self._fed - block.last_fed > STALE_AFTER_LINES:
                out.extend(self._close(block))
        return out

    def _close(self, block: _Block, *, quoted: bool = False) -> list[Event]:
        """Close a block; its event if it never emitted one (no exception line: cut, or the process died). A
        header with no frames that another line followed (``quoted``: a header quoted in a message) or a stray
        frame makes none unless its line says more."""
        self._open.remove(block)
        if block.emitted is not None:
            return []
        if block.lead is None and _exception_in(block.lines[1:] if not block.headless else block.lines) is None:
            if block.headless or (quoted and (block.head_rule is None or not block.head_rule.diagnoses)):
                return []
        return self._emit(block)

    def _emit(self, block: _Block) -> list[Event]:
        """The block's event as it stands (its first version, or a later one under the same key)."""
        ev = self._event_of(block)
        key = block.emitted if block.emitted is not None else ev.key
        block.emitted = key
        end = (block.end_no, block.end_off) if block.end_no else (block.start_no, block.start_off)
        return self._merge(replace(ev, key=key), block.serial, (block.start_no, end[0]), (block.start_off, end[1]))

    def _event_of(self, block: _Block) -> Event:
        text_all = "\n".join(block.lines)
        chosen: tuple[_Section | None, str, RuleMatch | None] | None = None
        best = 4
        for sec in block.sections:  # innermost first: a chain prints its root cause first
            if sec.exc is None:
                continue
            message = " ".join([sec.exc, *sec.details]) if sec.details else sec.exc
            cm = self.ruleset.classify(message, text_all)
            rank = _specificity(cm)
            if rank < best:  # a specific entry over a wrapper (a failed command) over a generic one
                chosen, best = (sec, sec.exc, cm), rank
        if chosen is None:
            exc = block.lead or _exception_in(block.lines[1:] if not block.headless else block.lines)
            message = exc or "Traceback with no exception line"
            chosen = (None, message, self.ruleset.classify(message, text_all))
        picked, exc, cm = chosen
        frame = picked.frame if picked is not None and picked.frame else next(
            (s.frame for s in reversed(block.sections) if s.frame), None)
        where = f" at {frame}" if frame else ""
        summary = _clip(exc, MAX_SUMMARY - len(where)) + where
        head = block.head_rule
        if head is not None and head.diagnoses and (cm is None or "generic" in cm.rule.roles):
            # "Initialization failed. warmup error: Traceback ..." names the failure better than the
            # generic entry for its AssertionError does.
            hm = self.ruleset.classify(message_part(block.lines[0]), text_all)
            cm = hm if hm is not None and hm.rule is head else cm
        roles = cm.rule.roles if cm is not None else frozenset()
        if head is not None:
            roles = roles | (head.roles - {"announce", "new_run"})
        if block.worker:
            roles = roles | {"fatal"}
        return Event(
            kind=Kind.CRASH,
            rule_id=TRACEBACK,
            summary=summary,
            line_no=block.start_no,
            offset=block.start_off,
            text=block.lines[0] if block.lines else block.head,
            ranks=frozenset({block.rank}) if block.rank is not None else frozenset(),
            block=tuple(block.lines),
            diagnosis=cm.rule.id if cm is not None else None,
            key=f"traceback:{summary}",
            ts=block.ts,
            roles=roles,
            facts=_facts(cm),
            entry=cm.rule if cm is not None else None,
            source=block.key,
        )

    def _merge(self, ev: Event, serial: int, span: tuple[int, int], at: tuple[int, int]) -> list[Event]:
        """One occurrence (``serial``) of a keyed event, first or updated: occurrences are counted, the first one's
        lines are what the event shows, every occurrence's span (line numbers, ``span``, and byte offsets, ``at``)
        is kept (MAX_SPANS). A new occurrence of a key seen before is counted against its first one and its updated
        Event is owed (``drain``: once per batch, however many repeats); the first occurrence, or the shown one
        grown (detail lines, its chain), is the Event now."""
        tally = self._tallies.get(ev.key)
        if tally is None:
            tally = self._tallies[ev.key] = _Tally(ev, serial, 1, ev.ranks, ev.roles, {serial: (span, at)})
            return [self._shape(tally)]
        if serial not in tally.kept:
            tally.count += 1
            if len(tally.kept) < MAX_SPANS:
                tally.kept[serial] = (span, at)
            if not ev.ranks <= tally.ranks:
                tally.ranks = tally.ranks | ev.ranks
            if not ev.roles <= tally.roles:
                tally.roles = tally.roles | ev.roles
            self._dirty[ev.key] = None
            return []
        tally.kept[serial] = (span, at)
        tally.ranks, tally.roles = tally.ranks | ev.ranks, tally.roles | ev.roles
        if serial == tally.first:
            tally.shown = ev
        self._dirty.pop(ev.key, None)
        return [self._shape(tally)]

    @staticmethod
    def _shape(tally: _Tally) -> Event:
        kept = tally.kept.values()
        return replace(tally.shown, count=tally.count, ranks=tally.ranks, roles=tally.roles,
                       spans=tuple(s for s, _ in kept), offsets=tuple(a for _, a in kept))

    def _on_match(self, no: int, off: int, plain: str, text: str, m: RuleMatch, *, defer: bool = True) -> list[Event]:
        if "new_run" in m.rule.roles and self._dirty:
            owed = self.drain()  # the last run's updates, before the new run's first event
            return owed + self._on_match(no, off, plain, text, m, defer=defer)
        rule = m.rule
        if rule.id == TRACEBACK:
            return self._feed_slow(no, off, plain, text) if not self._open and tb.is_frame(split_prefix(plain).body) else []
        if defer and "announce" in rule.roles and not plain[plain.find(m.match.group(0)) + len(m.match.group(0)):].strip(" :"):
            self._pending = (no, off, plain, text, m)  # the traceback follows on the next line
            return []
        if "new_run" in rule.roles:
            self._started = False
            self._warmed = False
        if "new_run" in rule.roles and (self._tallies or self._open):
            # A new launch appended to the same log: its errors are not merged with the last run's.
            self._tallies.clear()
            self._dirty.clear()
            self._memo.clear()
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
        if kind is Kind.READY and "serving" in rule.roles and self._warmup_line(rule):
            if rule.id == dialect_of(self.dialect).warmup_answer:
                self._warmed = True  # the warm-up's answer: serving lines after it are the users'
            return []
        if kind is Kind.PHASE and (phase in _BEFORE_HTTP or rule.ends in _BEFORE_HTTP):
            self._started = True
        ranks = _ranks(pre)
        if kind is Kind.CRASH:
            dm = m if rule.follow is not None else self.ruleset.death_match(plain)
            if dm is not None:
                return self._open_death(no, off, plain, text, dm, pre)
        if kind in (Kind.CRASH, Kind.WARNING):
            body = _clip(pre.body)
            cm = self.ruleset.classify(pre.body, plain) if kind is Kind.CRASH or not rule.diagnoses else None
            if cm is None and rule.diagnoses:
                cm = m
            roles = rule.roles | (cm.rule.roles if cm is not None else frozenset())
            if kind is Kind.CRASH and _worker(pre) and tb.is_bare_exception(pre.body.strip()):
                roles |= {"fatal"}  # a worker's last words: its exception, printed alone
            # its key: the rule and the message without its numbers (a warning repeated with other figures is one)
            key = f"{rule.id}:{_NUMBERS.sub('#', body)}"
            ev = Event(kind, rule.id, body, no, text, phase=phase, ranks=ranks, offset=off,
                       diagnosis=cm.rule.id if cm is not None else None, key=key, ts=pre.ts,
                       roles=roles, facts=_facts(cm), entry=cm.rule if cm is not None else None, source=pre.key)
            out = self._merge(ev, self._next_serial(), (no, no), (off, off))
            if "announce" not in rule.roles and "new_run" not in rule.roles:
                self._remember((key, ranks))
            return out
        progress = m.progress() if kind is Kind.PROGRESS else None
        summary = rule.summary if kind is not Kind.READY or not rule.user else _clip(pre.body)
        return [Event(kind, rule.id, summary, no, text, phase=phase, progress=progress, ranks=ranks,
                      diagnosis=rule.id if rule.diagnoses else None, key=rule.id, ts=pre.ts, ends=rule.ends,
                      roles=rule.roles, facts=_facts(m) if rule.diagnoses else (),
                      entry=rule if rule.diagnoses else None, source=pre.key, spans=((no, no),), offset=off,
                      offsets=((off, off),))]


    # ------------------------------------------------------------------ deaths
    def _open_death(self, no: int, off: int, plain: str, text: str, m: RuleMatch, pre: Prefix) -> list[Event]:
        """A death line (a catalogue entry with ``follow``): its event now, its report's lines joined to it."""
        rule = m.rule
        body = pre.body.strip()
        death = _Death(rule, m, no, off, text, body, pre, self._next_serial(), f"{rule.id}:{_clip(body)}", [text],
                       [re.compile(rule.follow or "$^")], no, off)
        if rule.detail is not None:
            d = re.search(rule.detail, body)
            death.detail = d.group("detail") if d is not None else None
        death.expect_detail = rule.detail_after is not None and re.search(rule.detail_after, body) is not None
        self._death = death
        return self._death_event(death)

    def _death_line(self, no: int, off: int, plain: str, text: str) -> list[Event] | None:
        """The open death's next line: joined (its events, usually none) or None (the death's report ended)."""
        death = self._death
        assert death is not None
        body = split_prefix(plain).body
        stripped = body.strip()
        if not stripped:
            death.blanks += 1
            if death.blanks > MAX_DEATH_BLANKS:
                return None
            self._join_death(death, no, off, text)
            return []
        death.blanks = 0
        if death.expect_detail:
            death.expect_detail = False
            death.detail = stripped
            self._join_death(death, no, off, text)
            return self._death_event(death)
        if not any(rx.search(body) for rx in death.follows):
            m = self.ruleset.match(plain)
            if m is None or m.rule.kind is not Kind.CRASH or not (m.rule.follow is not None or {"fatal", "wrapper"} <= m.rule.roles):
                return None
            if m.rule.follow is not None:  # another death report of the same end (a native stack, then Python's)
                death.follows.append(re.compile(m.rule.follow))
        self._join_death(death, no, off, text)
        if death.detail is None and death.rule.detail is not None:
            d = re.search(death.rule.detail, body)
            if d is not None:
                death.detail = d.group("detail")
                return self._death_event(death)
        return []

    def _join_death(self, death: _Death, no: int, off: int, text: str) -> None:
        if len(death.lines) < MAX_BLOCK_LINES:
            death.lines.append(text)
        death.end_no, death.end_off = no, off
        death.dirty = True

    def _end_death(self) -> list[Event]:
        """Close the open death: its last version when lines joined it since it was emitted."""
        death, self._death = self._death, None
        if death is None or not death.dirty:
            return []
        return self._death_event(death)

    def _death_event(self, death: _Death) -> list[Event]:
        death.dirty = False
        message = death.detail or death.message
        text_all = "\n".join(death.lines)
        cm = self.ruleset.classify(message, text_all)
        if cm is None or "generic" in cm.rule.roles or cm.rule.id == TRACEBACK:
            cm = death.match  # its text names nothing more specific: the death's own entry
        roles = death.rule.roles | (cm.rule.roles - {"wrapper"}) | {"fatal"}
        pre = death.pre
        ev = Event(Kind.CRASH, death.rule.id, _clip(message), death.no, death.text, ranks=_ranks(pre), count=1,
                   block=tuple(death.lines), diagnosis=cm.rule.id if cm.rule.diagnoses else None, key=death.key,
                   ts=pre.ts, roles=roles, facts=_facts(cm), entry=cm.rule if cm.rule.diagnoses else None,
                   source=pre.key, offset=death.off)
        return self._merge(ev, death.serial, (death.no, death.end_no), (death.off, death.end_off))


def _specificity(cm: RuleMatch | None) -> int:
    """How well an entry names an exception: 0 a specific entry, 1 a wrapper (a failed command, a child that
    died), 2 a generic one (any exception of a class), 3 none."""
    if cm is None:
        return 3
    if "generic" in cm.rule.roles:
        return 2
    return 1 if "wrapper" in cm.rule.roles else 0


def _ranks(pre: Prefix) -> frozenset[int]:
    return frozenset({pre.rank}) if pre.rank is not None else frozenset()


def _body_of(text: str, block: _Block) -> str:
    """A block line's message part (its prefix, if the block's source prints one on every line, cut off)."""
    plain = strip_ansi(text)
    if block.key is not None:
        return split_prefix(plain).body
    return plain


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
