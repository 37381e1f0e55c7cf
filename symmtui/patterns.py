"""User patterns (catalogue entries of the user's, --ready/--crash, the log pane's filters and search), run by RE2.

A regex a user typed or wrote in a file is compiled here, and only here, by RE2 (``google-re2``): its matching
time is linear in the text by construction, whatever the pattern's shape, so no pattern can freeze a verb or
the screen (Python's ``re`` backtracks: ``(a+){10}$`` on a long line of ``a`` takes for ever). RE2 refuses
what it cannot run in linear time (back-references, look-arounds): the error says so in one line.

The shipped catalogue is ours and keeps Python's ``re`` (it uses look-arounds, and its patterns are tested).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import re2

from symmtui.errors import UserError

MAX_PATTERN = 2000
"""Characters a user pattern may have."""
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 prints parse errors to stderr itself otherwise
_OPTIONS.max_mem = 32 << 20  # a pattern whose program needs more than this is refused, not run
_FLAGS_CI = re2.Options()
_FLAGS_CI.log_errors = False
_FLAGS_CI.max_mem = 32 << 20
_FLAGS_CI.case_sensitive = False


class PatternError(UserError):
    """A user pattern RE2 cannot compile (bad syntax, a back-reference or look-around, too large)."""


class Match(Protocol):
    """What a search finds (RE2's match object has this shape, as ``re.Match`` does)."""

    def group(self, *args: int | str) -> str: ...

    def groupdict(self) -> dict[str, str | None]: ...

    def span(self, group: int | str = 0) -> tuple[int, int]: ...

    def start(self, group: int | str = 0) -> int: ...

    def end(self, group: int | str = 0) -> int: ...


@dataclass(frozen=True)
class UserPattern:
    """A compiled user pattern: ``search``/``finditer`` as ``re.Pattern``'s, in time linear in the text."""

    source: str
    ignore_case: bool = False
    _rx: object = field(default=None, compare=False, repr=False)

    def search(self, text: str, pos: int = 0) -> Match | None:
        return self._rx.search(text, pos)  # type: ignore[attr-defined, no-any-return]

    def finditer(self, text: str) -> Iterator[Match]:
        return self._rx.finditer(text)  # type: ignore[attr-defined, no-any-return]

    @property
    def groupindex(self) -> dict[str, int]:
        return dict(self._rx.groupindex)  # type: ignore[attr-defined]


def _reason(exc: Exception) -> str:
    text = exc.args[0] if exc.args else str(exc)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return str(text)


def compile_user(pattern: str, *, what: str = "pattern", ignore_case: bool = False) -> UserPattern:
    """Compile a user's ``pattern`` (``what`` names it in the error: "filter", "--ready pattern", ...).

    PatternError (one line: the pattern, RE2's reason and what to do) when RE2 cannot run it."""
    if len(pattern) > MAX_PATTERN:
        raise PatternError(f"{what} is {len(pattern)} characters long: at most {MAX_PATTERN}")
    try:
        rx = re2.compile(pattern, _FLAGS_CI if ignore_case else _OPTIONS)
    except re2.error as exc:
        why = _reason(exc)
        hint = ""
        if "(?!" in why or "(?=" in why or "(?<" in why or "\\1" in why or "escape sequence" in why:
            hint = " (look-arounds and back-references are not supported: they cannot run in linear time)"
        raise PatternError(f"{what} {pattern!r} is not a usable regex: {why}{hint}") from None
    return UserPattern(pattern, ignore_case, rx)
