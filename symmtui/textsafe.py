"""The one sanitiser for text that reaches a terminal: control bytes and escape sequences shown, not obeyed.

Server logs carry request text, and other processes' command lines are anybody's: an OSC title
change (``ESC ] 0 ; ... BEL``), an OSC 52 clipboard write or a clear-screen inside them would act
on the user's terminal if printed raw. ``visible(text)`` turns every C0 control (but tab), DEL,
every C1 control and the Unicode line/paragraph separators and bidi overrides into visible
escapes (``\\x1b``, ``\\x07``, ``\\x9b``, ``\\u202e``; a lone surrogate from undecodable bytes, ``\\udcff``), so ``ESC]0;title BEL`` prints as
``\\x1b]0;title\\x07``. ``visible_keep_sgr(text)`` does the same but keeps SGR colour sequences
(``ESC [ ... m``) for the log pane, which renders colours itself.
"""

from __future__ import annotations

import re

# C0 but tab, DEL, C1; U+2028/2029 (line/paragraph separators); bidi embeddings/overrides/isolates.
# Lone surrogates too: they stand for bytes that were not UTF-8 (a path's surrogateescape) and
# would make a strict UTF-8 stream fail.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# SGR only (colours, bold, ...): digits, ';' and ':' parameters, final 'm'.
_SGR = re.compile(r"\x1b\[[0-9;:]*m")


# CSI (colours, cursor moves), OSC (titles, hyperlinks: ended by BEL or ST), DCS/SOS/PM/APC strings, and
# two-byte escapes. None of them may swallow a newline, so a whole block can be stripped at once.
ANSI = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[PX^_][^\x1b\n]*(?:\x1b\\)?|[ -/]*[0-~])?"
)


def strip_ansi(text: str) -> str:
    """`text` without ANSI escape sequences (fast when there are none): the follower's rule, and the redactor's."""
    return ANSI.sub("", text) if "\x1b" in text else text


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character and escape sequence made visible (nothing a terminal obeys)."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(_escape, text)


def visible_keep_sgr(text: str) -> str:
    """Like :func:`visible`, but SGR colour sequences (``ESC[...m``) stay for a renderer that parses them."""
    if _CONTROL.search(text) is None:
        return text
    out: list[str] = []
    pos = 0
    for m in _SGR.finditer(text):
        out.append(_CONTROL.sub(_escape, text[pos : m.start()]))
        out.append(m.group())
        pos = m.end()
    out.append(_CONTROL.sub(_escape, text[pos:]))
    return "".join(out)


def is_safe(text: str) -> bool:
    """True when ``text`` holds nothing a terminal would obey (no control character, no ESC)."""
    return _CONTROL.search(text) is None


def shorten(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, the middle elided with how much was left out."""
    if len(text) <= limit:
        return text
    keep = max(limit - 40, 8)
    head, tail = keep * 2 // 3, keep // 3
    return f"{text[:head]}...[{len(text) - head - tail} characters left out]...{text[len(text) - tail:]}"


MAX_LABEL = 200  # characters of one outside name (an exporter's label) kept


def outside(text: str, limit: int = MAX_LABEL) -> str:
    """A name from outside (an exporter's label, a server's field) as it may be kept and shown: one line,
    every control visible, at most about ``limit`` characters."""
    return shorten(visible(text), limit)


MAX_SHOWN = 80  # characters of a user's value quoted back in an error


def shown(value: object) -> str:
    """A user's value as it may appear in a one-line error: quoted, visible, at most ~MAX_SHOWN chars."""
    text = value if isinstance(value, str) else str(value)
    return repr(shorten(visible(text), MAX_SHOWN))
