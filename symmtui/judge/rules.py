"""The line rules: one table of data (ready, phase, progress, crash, warning) and a fast matcher over it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from msgspec import Struct, field

from symmtui.errors import UserError
from symmtui.judge.litmask import literal_mask
from symmtui.logs.decode import strip_ansi as strip_ansi  # the follower's ANSI rule, re-exported
from symmtui.logs.lineparts import split_prefix
from symmtui.patterns import (
    LinesPattern,
    Match,
    UserPattern,
    compile_user,
    matches_every_line,
    starts_anchored,
)
from symmtui.tables.catalogue import builtin_entries, user_entries
from symmtui.tables.ruletypes import ACTION_TYPES as ACTION_TYPES
from symmtui.tables.ruletypes import HANG_COMPILE as HANG_COMPILE
from symmtui.tables.ruletypes import HANG_GRAPHS as HANG_GRAPHS
from symmtui.tables.ruletypes import HANG_NCCL_INIT as HANG_NCCL_INIT
from symmtui.tables.ruletypes import HANG_PEERS as HANG_PEERS
from symmtui.tables.ruletypes import HANG_PHASES as HANG_PHASES
from symmtui.tables.ruletypes import HANG_WARMUP as HANG_WARMUP
from symmtui.tables.ruletypes import HANG_WEIGHTS as HANG_WEIGHTS
from symmtui.tables.ruletypes import PHASE_GRAPHS as PHASE_GRAPHS
from symmtui.tables.ruletypes import PHASE_HTTP as PHASE_HTTP
from symmtui.tables.ruletypes import PHASE_INIT_DIST as PHASE_INIT_DIST
from symmtui.tables.ruletypes import PHASE_KV as PHASE_KV
from symmtui.tables.ruletypes import PHASE_LOADING as PHASE_LOADING
from symmtui.tables.ruletypes import PHASE_ORDER as PHASE_ORDER
from symmtui.tables.ruletypes import PHASE_READY as PHASE_READY
from symmtui.tables.ruletypes import PHASE_STARTING as PHASE_STARTING
from symmtui.tables.ruletypes import PHASE_WARMUP as PHASE_WARMUP
from symmtui.tables.ruletypes import ROLES as ROLES
from symmtui.tables.ruletypes import SCOPES as SCOPES
from symmtui.tables.ruletypes import Action as Action

# The rules' data lives in tables/ruletypes.py (the catalogue loader builds it); re-exported here.
from symmtui.tables.ruletypes import Kind as Kind
from symmtui.tables.ruletypes import Rule as Rule
from symmtui.tables.ruletypes import RuleMatch as RuleMatch
from symmtui.tables.ruletypes import required_literal as required_literal

if TYPE_CHECKING:  # built after MASK_AFTER lines: a short `wait` never imports Hyperscan for it
    from symmtui.judge.litmask import LiteralMask


def user_ruleset(ready: Sequence[str] = (), crash: Sequence[str] = (),
                 profile_entries: Sequence[Rule] = ()) -> RuleSet:
    """The shipped catalogue with the user's entries first: a profile's, the XDG file's, then the
    ready/crash patterns given on the command line or in a profile."""
    return RuleSet().with_user(ready=ready, crash=crash, entries=user_entries(profile_entries))


def builtin_rules() -> tuple[Rule, ...]:
    """The catalogue shipped in the package (symmtui/catalogue/*.toml), read once."""
    return builtin_entries()


# Quoted values in repr'd argument lists (SGLang's server_args=ServerArgs(...), vLLM's non-default args:
# {...}, Namespace(...)): a string after "=", after a dict key, or an item of a list/tuple/set. Their text is
# the user's, never a marker. (An exception's own quote, "KeyError: '120a'", follows a plain word: kept.)
_QUOTED_VALUE = re.compile(r"""(?:(?<==)|(?<=['"]: )|(?<=[\[({])|(?<=['"], ))(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


def mask_quoted(body: str) -> str:
    """``body`` with the insides of quoted argument values blanked (same length: offsets stay)."""
    if "'" not in body and '"' not in body:
        return body
    return _QUOTED_VALUE.sub(lambda m: m.group(0)[0] + "_" * (len(m.group(0)) - 2) + m.group(0)[-1], body)


# Traceback fragments outside a recognised block: source code, not a message.
_CODE = re.compile(r"\s*(?:raise\b|File \")")


def message_part(plain: str) -> str:
    """The part of a line rules match: the prefix (ranks, time, logger) cut off, quoted values blanked."""
    return mask_quoted(split_prefix(plain).body)


Searcher = re.Pattern[str] | UserPattern
"""A compiled rule pattern: Python's ``re`` for the shipped catalogue, RE2 for the user's (symmtui.patterns)."""


class LazyRegex:
    """A regex compiled at its first search: ``search`` is then the compiled pattern's own method
    (no extra call on the hot path). Compiling twice from two threads at once is harmless. ``user``: a
    user's pattern, compiled by RE2 (``patterns.compile_user``: linear in the line, whatever its shape)."""

    __slots__ = ("pattern", "search", "user")

    def __init__(self, pattern: str, user: bool = False) -> None:
        self.pattern = pattern
        self.user = user
        self.search: Callable[[str], Match | None] = self._first_search

    @property
    def is_compiled(self) -> bool:
        """Whether it has been compiled (searched once, or ``compiled()`` called)."""
        return self.search != self._first_search

    def compiled(self) -> Searcher:
        """The compiled pattern (compiled now if it was not yet; ``re`` caches it)."""
        rx: Searcher = compile_user(self.pattern, limit=None) if self.user else re.compile(self.pattern)
        self.search = rx.search
        return rx

    def _first_search(self, text: str) -> Match | None:
        return self.compiled().search(text)


class _EveryLine:
    """The stand-in search of a user rule no whole-line search can preselect (``starts_anchored``): every line
    is a candidate for it, and its own pattern then judges the line's message."""

    pattern = ""

    def search(self, text: str) -> object:
        return self


EVERY_LINE = _EveryLine()


MASK_AFTER = 256
"""A rule set judges this many lines by testing each literal before it builds a LiteralMask (Hyperscan: its
import and database cost ~5 ms, more than a short log's lines)."""


class RuleSet:
    """An ordered rule table with a literal prefilter: most lines are rejected by a few substring tests.

    Line rules (scope "line") name log lines; every entry with a cause also names events
    (``classify``: a traceback's exception, a crash line) and process exits (``classify_exit``).
    """

    def __init__(self, rules: Iterable[Rule] | None = None) -> None:
        given = tuple(rules) if rules is not None else builtin_rules()
        self.rules: tuple[Rule, ...] = tuple(r for r in given if r.kind is not Kind.HANG)
        self.hangs: tuple[Rule, ...] = tuple(r for r in given if r.kind is Kind.HANG)
        """The hang hints (kind "hang": keyed by phase, never matched against lines), the user's first."""
        # Regexes compile at their first search (LazyRegex): the literal prefilter keeps most rules
        # from ever running on a log, and a start compiled ~200 of them (~7 ms) for nothing.
        self._compiled: list[tuple[Rule, LazyRegex, tuple[str, ...], LazyRegex | None]] = []
        self._diagnosing: list[tuple[Rule, LazyRegex, LazyRegex | None, tuple[str, ...]]] = []
        self._exits: list[tuple[Rule, LazyRegex]] = []
        self._by_id: dict[str, Rule] = {}
        lits: set[str] = set()
        unanchored: list[tuple[Rule, Searcher | _EveryLine]] = []
        for rule in self.rules:
            self._by_id.setdefault(rule.id, rule)
            rx = LazyRegex(rule.pattern, rule.user)
            ctx = LazyRegex(rule.context, rule.user) if rule.context else None
            if rule.scope == "exit":
                self._exits.append((rule, rx))
                continue
            if rule.scope != "line":
                if rule.diagnoses:
                    self._diagnosing.append((rule, rx, ctx, ()))
                continue
            keys = rule.literals
            if not keys:
                derived = required_literal(rule.pattern)  # none for a pattern that ignores case
                keys = (derived,) if derived else ()
                if not keys:  # keyless: its regex preselects the lines, or (a user's anchored one) every line does
                    unanchored.append((rule, EVERY_LINE if rule.user and starts_anchored(rule.pattern)
                                       else rx.compiled()))
            if rule.diagnoses:  # its keys spare ``classify`` its regex (and its compiling) on a message without them
                self._diagnosing.append((rule, rx, ctx, keys if "(?i" not in rule.pattern else ()))
            self._compiled.append((rule, rx, keys, ctx))
            lits.update(keys)
        self.unanchored: tuple[tuple[Rule, Searcher | _EveryLine], ...] = tuple(unanchored)
        """The keyless line rules and what preselects their lines (``EVERY_LINE``: nothing can)."""
        # Longest first: no literal is tested twice for the same line.
        self.literals: tuple[str, ...] = tuple(sorted(lits, key=lambda s: (-len(s), s)))
        self._prefilter: LazyRegex | None = (
            LazyRegex("|".join(re.escape(x) for x in self.literals)) if self.literals else None
        )
        self._unanchored_rx = tuple(rx for _, rx in unanchored)
        # Which rules a line's literals select, as bits of a table-order index: a candidate line then
        # tries only the rules whose keys it holds (a burst of "Decode batch" lines is all candidates;
        # walking the whole table for each cost ~20 us a line).
        self._entries = tuple((rule, rx, ctx) for rule, rx, _, ctx in self._compiled)
        bits: dict[str, int] = {}
        keyless = 0
        for i, (_, _, keys, _) in enumerate(self._compiled):
            for k in keys:
                bits[k] = bits.get(k, 0) | (1 << i)
            if not keys:
                keyless |= 1 << i
        self._lit_bits: tuple[tuple[str, int], ...] = tuple((k, bits[k]) for k in self.literals)
        self._keyless = keyless
        self._asked = 0  # lines _selected has judged; after MASK_AFTER of them it asks a LiteralMask
        self._mask: LiteralMask | None = None
        # Deaths (entries with ``follow``) name a line before any other entry that also matches it: a CUDA error
        # ggml reports from native code is the process's death, whatever entry names the error.
        self._deaths = tuple((rule, rx, keys) for rule, rx, keys, _ in self._compiled if rule.follow is not None)

    def compile_all(self) -> RuleSet:
        """Compile every regex now (they otherwise compile at their first search); returns the set."""
        for rx in self.regexes():
            rx.compiled()
        return self

    def regexes(self) -> Iterator[LazyRegex]:
        """Every regex of the set (patterns, contexts, the literal prefilter), compiled yet or not."""
        for _, rx, ctx in (*self._entries, *((r, x, c) for r, x, c, _ in self._diagnosing)):
            yield rx
            if ctx is not None:
                yield ctx
        for _, rx in self._exits:
            yield rx
        if self._prefilter is not None:
            yield self._prefilter

    def with_user(self, ready: Sequence[str] = (), crash: Sequence[str] = (),
                  entries: Sequence[Rule] = ()) -> RuleSet:
        """A new set with the user's entries and ready/crash regexes first (they win over built-ins); this one
        when there are none.

        A pattern that does not compile raises UserError naming the pattern and the regex error.
        """
        extra: list[Rule] = list(entries)
        for kind, pats in ((Kind.READY, ready), (Kind.CRASH, crash)):
            already = sum(1 for r in self.rules if r.user and r.kind is kind and r.id.startswith("user-"))
            for n, pat in enumerate(pats, already + 1):
                rx = compile_user(pat, what=f"{kind.value} pattern")  # RE2: one line when it cannot run it
                if matches_every_line(rx):
                    raise UserError(f"{kind.value} pattern {pat!r} matches every line (even an empty or a one-letter one): "
                                    "make it specific")
                crash_kind = kind is Kind.CRASH
                extra.append(
                    Rule(f"user-{kind.value}-{n}", kind, pat, f"user {kind.value} pattern {pat!r}",
                         phase=PHASE_READY if kind is Kind.READY else None, user=True,
                         cause="your crash pattern matched: {summary}" if crash_kind else "",
                         action=Action("investigate", "see the lines around it") if crash_kind else None,
                         roles=frozenset({"fatal"}) if crash_kind else frozenset(), origin="command line or profile")
                )
        if not extra:
            return self  # nothing of the user's: this set (building its tables again cost ~5 ms of every start)
        return RuleSet((*extra, *self.rules, *self.hangs))

    def hang_hints(self, phase: str | None, engine: str | None = None) -> tuple[Rule, ...]:
        """The hang entries for ``phase`` (one of HANG_PHASES), the user's first; an entry of another
        engine than ``engine`` (None: not known) is left out."""
        if not phase:
            return ()
        return tuple(r for r in self.hangs if r.phase == phase
                     and (r.engine == "any" or engine is None or r.engine == engine))

    def by_id(self, rule_id: str) -> Rule | None:
        """The first entry with this id (user entries shadow built-in ones)."""
        return self._by_id.get(rule_id)

    def candidate(self, plain: str) -> bool:
        """Whether any rule could match (the prefilter)."""
        if self._prefilter is not None and self._prefilter.search(plain) is not None:
            return True
        return any(rx.search(plain) is not None for rx in self._unanchored_rx)

    def match(self, plain: str) -> RuleMatch | None:
        """The first line rule (table order) whose pattern matches the message part of ``plain``, or None."""
        return next(self._matches(plain), None)

    def match_all(self, plain: str) -> list[RuleMatch]:
        """Every line rule that matches the message part of ``plain``, in table order."""
        return list(self._matches(plain))

    def _selected(self, plain: str) -> int:
        """The rules (bits of table-order indexes) worth trying on ``plain``: those whose keys it
        holds, and the keyless ones when anything could match (the prefilter's answer). A set that judges
        many lines asks a LiteralMask (one Hyperscan scan of the line, judge.litmask) instead of each key."""
        finder = self._mask
        if finder is None and self._asked < MASK_AFTER:
            self._asked += 1
            if self._asked == MASK_AFTER:
                finder = self._mask = literal_mask([k for k, _ in self._lit_bits], [b for _, b in self._lit_bits])
        if finder is not None:
            mask = finder.mask(plain)
        else:
            mask = 0
            for k, b in self._lit_bits:
                if k in plain:
                    mask |= b
        if mask == 0 and not any(rx.search(plain) is not None for rx in self._unanchored_rx):
            return 0
        return mask | self._keyless

    def _matches(self, plain: str) -> Iterator[RuleMatch]:
        mask = self._selected(plain)
        message: str | None = None
        code = False
        entries = self._entries
        while mask:
            low = mask & -mask
            mask ^= low
            rule, rx, ctx = entries[low.bit_length() - 1]
            if message is None:
                message = message_part(plain)
                code = _CODE.match(message) is not None
            if code and rule.kind in (Kind.CRASH, Kind.WARNING):
                continue  # a traceback's source line ("raise RuntimeError(f'NCCL error ...')") is code
            m = rx.search(message)
            if m is not None and (ctx is None or ctx.search(plain) is not None):
                yield RuleMatch(rule, m)

    def death_match(self, plain: str) -> RuleMatch | None:
        """The first death entry (one with ``follow``) whose pattern matches the message part of ``plain``."""
        message: str | None = None
        for rule, rx, keys in self._deaths:
            if keys and not any(k in plain for k in keys):
                continue
            if message is None:
                message = message_part(plain)
            m = rx.search(message)
            if m is not None:
                return RuleMatch(rule, m)
        return None

    def classify(self, message: str, text: str = "") -> RuleMatch | None:
        """The first entry with a cause whose pattern matches ``message`` (an exception line or a
        crash line's message) and whose context, if any, matches ``text`` (the whole event)."""
        for rule, rx, ctx, keys in self._diagnosing:
            if keys and not any(k in message for k in keys):
                continue
            m = rx.search(message)
            if m is not None and (ctx is None or ctx.search(text or message) is not None):
                return RuleMatch(rule, m)
        return None

    def classify_exit(self, description: str) -> RuleMatch | None:
        """The first exit entry matching how a process ended (``process killed by signal 9 (SIGKILL) ...``)."""
        for rule, rx in self._exits:
            m = rx.search(description)
            if m is not None:
                return RuleMatch(rule, m)
        return None


class ByteScanner(Struct):
    """Finds candidate lines in a big bytes buffer fast (``scan``): rare-byte anchors + memchr.

    For each literal it picks the byte that is rarest in a sample of the file; memchr (bytes.find
    of one byte) runs at many GB/s, and only at anchor hits is the literal compared. Literals whose
    rarest byte is still common fall back to ``bytes.find`` of the whole literal. Rules with no
    literal are searched with their regex over the whole buffer.
    """

    ruleset: RuleSet
    sample: bytes = b""
    extra: tuple[str, ...] = ()
    """Literals that make a line a candidate besides the rules' (a request line whose content goes on)."""
    marked: frozenset[str] = frozenset()
    """Literals whose lines ``marked_starts`` names."""
    anchors: dict[int, list[tuple[bytes, int]]] = field(default_factory=dict)
    whole: list[bytes] = field(default_factory=list)
    regexes: list[re.Pattern[str] | LinesPattern] = field(default_factory=list)
    every_line: bool = False

    def __post_init__(self) -> None:
        self.tune(self.sample)

    def tune(self, sample: bytes) -> None:
        """Choose, per literal, memchr on its rarest byte or bytes.find of the literal, by estimated cost.

        Costs in ns per haystack byte, calibrated on CPython 3.11: an anchor hit costs ~250 ns of
        Python; bytes.find of a needle of 6+ bytes (the two-way search) runs at ~0.32 GB/s times the
        needle's average shift, estimated from the sample's byte classes (the search table is
        indexed by ``byte & 63``).
        """
        self.anchors = {}
        self.whole = []
        size = max(len(sample), 1)
        counts = [sample.count(bytes((b,))) for b in range(256)] if sample else [0] * 256
        classes = [0.0] * 64
        for b in range(256):
            classes[b & 63] += counts[b] / size
        chosen_whole: list[bytes] = []
        # A NUL or an escape byte inside a marker is dropped by the decoder: such lines are always
        # candidates, so `scan` judges the same text as the follower does.
        for lit in (*self.ruleset.literals, *self.extra, "\x00", "\x1b"):
            data = lit.encode("utf-8")
            best_i = min(range(len(data)), key=lambda i: counts[data[i]])
            anchor_cost = 0.05 + counts[data[best_i]] / size * 250.0
            whole_cost = _find_cost(data, classes) if len(data) >= 6 else 1.0
            if anchor_cost <= whole_cost:
                self.anchors.setdefault(data[best_i], []).append((data, best_i))
            else:
                chosen_whole.append(data)
        self.whole = _merge_needles(chosen_whole)
        self.every_line = any(rx is EVERY_LINE for _, rx in self.ruleset.unanchored)
        self.regexes = [rx.lines() if isinstance(rx, UserPattern) else re.compile(rx.pattern, rx.flags | re.MULTILINE)
                        for _, rx in self.ruleset.unanchored if isinstance(rx, UserPattern | re.Pattern)]

    def candidate_starts(self, buf: bytes | bytearray, end: int) -> list[int]:
        """Sorted start offsets of lines in ``buf[:end]`` that contain some literal (or match a free regex)."""
        starts: set[int] = set()
        find = buf.find
        rfind = buf.rfind
        for byte, lits in self.anchors.items():
            needle = bytes((byte,))
            i = find(needle, 0, end)
            while i != -1:
                for data, off in lits:
                    s = i - off
                    if s >= 0 and buf.startswith(data, s) and s + len(data) <= end:
                        starts.add(rfind(b"\n", 0, s) + 1)
                        break
                i = find(needle, i + 1, end)
        for data in self.whole:
            i = find(data, 0, end)
            while i != -1:
                ls = rfind(b"\n", 0, i) + 1
                starts.add(ls)
                nl = find(b"\n", i, end)
                if nl == -1:
                    break
                i = find(data, nl + 1, end)
        if self.regexes or self.every_line:
            starts.update(self.regex_starts(buf, end))
        return sorted(starts)

    def marked_starts(self, buf: bytes | bytearray, end: int) -> tuple[list[int], set[int]]:
        """``candidate_starts``, and the starts of the lines that hold one of the ``marked`` literals."""
        starts = self.candidate_starts(buf, end)
        if not self.marked:
            return starts, set()
        return starts, set(ByteScanner(RuleSet(()), b"", tuple(self.marked)).candidate_starts(buf, end))

    def regex_starts(self, buf: bytes | bytearray, end: int) -> set[int]:
        """Line starts where a literal-free rule matches (decoded text: same newlines as the bytes); every line
        start when a rule's lines cannot be preselected (``EVERY_LINE``)."""
        if self.every_line:
            every = {0}
            i = buf.find(b"\n", 0, end)
            while i != -1 and i + 1 < end:
                every.add(i + 1)
                i = buf.find(b"\n", i + 1, end)
            return every
        text = buf[:end].decode("utf-8", "replace")
        idx: set[int] = set()
        for rx in self.regexes:
            line, pos = 0, 0
            for m in rx.finditer(text):
                line += text.count("\n", pos, m.start())
                pos = m.start()
                idx.add(line)
        out: set[int] = set()
        line, off = 0, 0
        for want in sorted(idx):
            while line < want:
                off = buf.find(b"\n", off, end) + 1
                line += 1
            out.add(off)
        return out


def _find_cost(needle: bytes, classes: list[float]) -> float:
    """Estimated ns per haystack byte of ``bytes.find(needle)`` (two-way search, 64 byte classes)."""
    m = len(needle)
    shift: dict[int, int] = {}  # the classes the needle holds; every other class shifts by m
    for i, c in enumerate(needle):
        shift[c & 63] = m - 1 - i
    avg = sum(classes) * m - sum(classes[c] * (m - s) for c, s in shift.items()) or float(m)
    return 1.0 / (0.32 * max(avg, 0.5))


def _merge_needles(needles: list[bytes], min_common: int = 14) -> list[bytes]:
    """Needles that share a long common piece are searched once, by that piece."""
    out: list[bytes] = []
    pieces: list[set[bytes]] = []  # each kept needle's pieces of min_common bytes
    for n in sorted(set(needles), key=len, reverse=True):
        mine = _pieces(n, min_common)
        for i, o in enumerate(out):
            if mine & pieces[i]:  # a common piece this long exists: find the longest one
                out[i] = _longest_common(n, o)
                pieces[i] = _pieces(out[i], min_common)
                break
        else:
            out.append(n)
            pieces.append(mine)
    return out


def _pieces(data: bytes, size: int) -> set[bytes]:
    return {data[i:i + size] for i in range(len(data) - size + 1)}


def _longest_common(a: bytes, b: bytes) -> bytes:
    best = b""
    for i in range(len(a)):
        for j in range(i + len(best) + 1, len(a) + 1):
            if a[i:j] in b:
                best = a[i:j]
            else:
                break
    return best
