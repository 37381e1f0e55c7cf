"""User patterns (catalogue entries of the user's, --ready/--crash, the log pane's filters and search), run by RE2.

A regex a user typed or wrote in a file is compiled here, and only here, by RE2 (``google-re2``): its matching
time is linear in the text by construction, whatever the pattern's shape, so no pattern can freeze a verb or
the screen (Python's ``re`` backtracks: ``(a+){10}$`` on a long line of ``a`` takes for ever). RE2 refuses
what it cannot run in linear time (back-references, look-arounds): the error says so in one line.

Linear is not free: ``(.*a){1000}`` costs about a second on a 64 KiB line of ``a``. RE2 gives up the GIL while
it matches, so a verb's other threads (its deadline, its signals) go on meanwhile; the engine matches outside
the lock its verdict is judged under (bringup/engine.py). Patterns are compiled without numbered groups
(``never_capture``: nothing reads them, and capturing costs most of a long match); named groups stay.

The shipped catalogue is ours and keeps Python's ``re`` (it uses look-arounds, and its patterns are tested).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar, Literal, Protocol

import re2
from msgspec import Struct

from symmtui.aside import Aside
from symmtui.errors import UserError

MAX_PATTERN = 4096
"""Characters a user pattern may have (one option value: boundary.MAX_VALUE_CHARS)."""
MAX_MEM = 8 << 20  # a pattern whose program needs more than this is refused, not run (its compile: < 0.1 s)
MAX_PROGRAM = 2_000_000  # RE2 instructions a file's user patterns may compile to, together (about 1 s to compile)
MAX_REPEAT = 1000  # RE2's own limit on a counted repeat; one past it RE2 reads as literal text
CACHE = 256  # compiled patterns kept (a catalogue's pattern is compiled by the loader, the rule, the prefilter)
_REPEAT = re.compile(r"(?<!\\)\{(\d+)(?:,(\d*))?\}")
_BUDGET: ContextVar[list[int] | None] = ContextVar("symmtui_pattern_budget", default=None)


@contextmanager
def budget(instructions: int) -> Iterator[None]:
    """The patterns compiled inside together get at most ``instructions`` of RE2 program (a catalogue file:
    each pattern's compile costs about its program's size, so a file of a thousand costly entries cannot hold
    a verb for minutes before it even starts)."""
    token = _BUDGET.set([instructions])
    try:
        yield
    finally:
        _BUDGET.reset(token)
EVERY_LINE_PROBES = ("x", "0", "ok", "Load weight begin.")  # unrelated lines: a pattern matching all of them is not specific


def _options(ignore_case: bool, lines: bool, literal: bool) -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 prints parse errors to stderr itself otherwise
    options.max_mem = MAX_MEM
    options.never_capture = True  # numbered groups are never read; named groups are kept (RE2 1.1)
    options.case_sensitive = not ignore_case
    options.never_nl = lines  # a match never spans two lines of a text of many
    options.literal = literal
    return options


_OPTIONS = {(ci, lines, lit): _options(ci, lines, lit) for ci in (False, True) for lines in (False, True)
            for lit in (False, True)}


class PatternError(UserError):
    """A user pattern RE2 cannot compile (bad syntax, a back-reference or look-around, too large)."""


class Match(Protocol):
    """What a search finds (RE2's match object has this shape, as ``re.Match`` does)."""

    def group(self, group: Literal[0] = 0, /) -> str: ...  # the whole match (read named groups with groupdict)

    def groupdict(self) -> Mapping[str, str | None]: ...

    def span(self, group: int | str = 0, /) -> tuple[int, int]: ...

    def start(self, group: int | str = 0, /) -> int: ...

    def end(self, group: int | str = 0, /) -> int: ...


class UserPattern(Aside, Struct, frozen=True):
    """A compiled user pattern: ``search``/``finditer`` as ``re.Pattern``'s, in time linear in the text."""

    source: str
    ignore_case: bool = False
    _rx: object = None
    ASIDE: ClassVar[tuple[str, ...]] = ("_rx",)  # the compiled program: two compiles of one pattern are equal

    @property
    def pattern(self) -> str:
        """The pattern as the user wrote it (``re.Pattern.pattern``'s name)."""
        return self.source

    def search(self, text: str, pos: int = 0) -> Match | None:
        return self._rx.search(text, pos)  # type: ignore[attr-defined, no-any-return]

    def finditer(self, text: str) -> Iterator[Match]:
        return self._rx.finditer(text)  # type: ignore[attr-defined, no-any-return]

    def line_hits(self, data: bytes) -> Iterator[int]:
        """The byte offset of the first match in each line of UTF-8 ``data`` that holds one (the log pane counts
        rows; bytes spare the offsets' conversion to characters)."""
        line_end = -1  # where the line of the last hit ends
        for m in self._rx.finditer(data):  # type: ignore[attr-defined]
            at: int = m.start()
            if at > line_end:
                yield at
                line_end = data.find(b"\n", at)
                if line_end < 0:
                    return

    @property
    def groupindex(self) -> dict[str, int]:
        return dict(self._rx.groupindex)  # type: ignore[attr-defined]

    def lines(self) -> LinesPattern:
        """The same pattern over many lines joined by newlines (``^`` and ``$`` at each line's ends), for a
        buffer of lines searched at once (str or UTF-8 bytes: offsets are then bytes)."""
        return LinesPattern(re2.compile("(?m)" + self.source, _OPTIONS[(self.ignore_case, False, False)]))


class LinesPattern(Struct, frozen=True):
    """A user pattern in multi-line mode: ``finditer`` over a buffer of lines."""

    _rx: object

    def finditer(self, text: str | bytes) -> Iterator[Match]:
        return self._rx.finditer(text)  # type: ignore[attr-defined, no-any-return]


def _reason(exc: Exception) -> str:
    text = exc.args[0] if exc.args else str(exc)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return str(text)


_PYTHON_ONLY = {
    "(?=": "look-aheads", "(?!": "look-aheads", "(?<=": "look-behinds", "(?<!": "look-behinds",
    "(?P=": "back-references", "\\1": "back-references", "\\2": "back-references", "(?x": "verbose mode (?x)",
    "\\Z": "\\Z (write \\z or $)",
}


def compile_user(pattern: str, *, what: str = "pattern", ignore_case: bool = False,
                 limit: int | None = MAX_PATTERN, lines: bool = False, literal: bool = False) -> UserPattern:
    """Compile a user's ``pattern`` (``what`` names it in the error: "filter", "--ready pattern", ...).

    PatternError (one line: the pattern, RE2's reason and what to do) when RE2 cannot run it. ``limit``: the
    characters it may have (None: no cap, for one entry's patterns joined into one). ``lines``: the text
    searched holds many lines (``^``/``$`` match at each, no match spans two); ``literal``: ``pattern`` is
    plain text, not a regex."""
    if limit is not None and len(pattern) > limit:
        raise PatternError(f"{what} is {len(pattern)} characters long: at most {limit}")
    bad = next((c for c in pattern if "\ud800" <= c <= "\udfff"), None)
    if bad is not None:  # a byte the shell passed that is not UTF-8 (Python keeps it as a lone surrogate)
        raw = f"\\x{ord(bad) - 0xDC00:02x}" if ord(bad) >= 0xDC80 else f"U+{ord(bad):04X}"
        raise PatternError(f"bad {what} {_cut(pattern)!r}: it holds {raw}, which is not UTF-8 text; "
                           "type the pattern in UTF-8")
    if not literal:
        big = next((int(n) for m in _REPEAT.finditer(pattern) for n in m.groups() if n and int(n) > MAX_REPEAT), None)
        if big is not None:
            raise PatternError(f"bad {what} {_cut(pattern)!r}: a repeat counts at most {MAX_REPEAT} ({{{big}}} given)")
    source = f"(?m){pattern}" if lines and not literal else pattern
    key = (source, ignore_case, lines, literal)
    rx = _CACHE.get(key)
    try:
        if rx is None:
            rx = re2.compile(source, _OPTIONS[(ignore_case, lines, literal)])
    except re2.error as exc:
        why = _reason(exc).replace(source, pattern)  # the pattern as typed, without the "(?m)" of ``lines``
        hint = next((f" ({name} are not supported: RE2 runs a user pattern in time linear in the line, and "
                     "these cannot be; match the text itself instead)" for mark, name in _PYTHON_ONLY.items()
                     if mark in why), "")
        if "too large" in why or "too big" in why:
            hint = " (its program is too large for RE2: make the pattern smaller or split it in several)"
        raise PatternError(f"bad {what} {_cut(pattern)!r}: {why}{hint}") from None
    names = _GROUP_NAME.findall(pattern)
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:  # RE2 takes it, and one of them would be lost: say so, as Python's re does
        raise PatternError(f"{what} {_cut(pattern)!r} names the group {twice!r} twice: give each group its own name")
    left = _BUDGET.get()
    if left is not None:
        left[0] -= int(rx.programsize)
        if left[0] < 0:
            raise PatternError(f"{what} {_cut(pattern)!r}: the patterns of this file compile to more RE2 program "
                               "than symmtui runs on every line (a counted repeat of a wide class, {n} of [\\w\\s], "
                               "multiplies it): use fewer or smaller repeats")
    _CACHE[key] = rx
    _CACHE.move_to_end(key)
    if len(_CACHE) > CACHE:
        _CACHE.popitem(last=False)
    return UserPattern(pattern, ignore_case, rx)


_CACHE: OrderedDict[tuple[str, bool, bool, bool], Any] = OrderedDict()
_GROUP_NAME = re.compile(r"\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>")


def _cut(pattern: str) -> str:
    return pattern if len(pattern) <= 80 else pattern[:77] + "..."


def matches_every_line(rx: UserPattern) -> bool:
    """A pattern no line escapes: it matches the empty string, or each of a few unrelated short lines
    (``\\S``, ``\\b``, ``x?``): as a crash pattern it would make every log CRASHED."""
    return rx.search("") is not None or all(rx.search(p) is not None for p in EVERY_LINE_PROBES)


_START_ANCHOR = re.compile(r"(?<!\[)\^|\\A")


def starts_anchored(source: str) -> bool:
    """Whether a pattern may hold a start-of-line anchor (``^``, ``\\A``; conservatively: any caret but a
    class's ``[^``). Rules match a line's message, after its prefix: such a pattern may match the message and
    not the whole line, so a search of whole lines cannot preselect the lines it matches."""
    return _START_ANCHOR.search(source) is not None
