"""The one traceback classifier: which lines of a log open, continue, chain and end a Python traceback, and which
lines after its exception still belong to it (the exception's message continued: NCCL's ``Last error:``)."""

from __future__ import annotations

import re

HEADER = "Traceback (most recent call last):"
CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
# An exception line: a (dotted) name, then ": message" or nothing ("AssertionError").
_EXC_LINE = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?::|\s*$)")
# A logger's own header is not an exception line ("INFO:     127.0.0.1 ...", "WARNING: ...").
_LEVEL = re.compile(r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b")
# An exception named inside other text (run together with it, or cut): "...x1b[0mKeyError: 12".
# Not inside source code: "raise RuntimeError(f'NCCL error: ...')" names a class, it is not the message.
_EXC_INSIDE = re.compile(
    r"(?<![\w.])(?<!raise )((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure)(?::\s*\S.*|\s*$))"
)
_DIGITS = re.compile(r"\d")
_NAMES_AN_ERROR = re.compile(r"(?i)error|exception|timeout|exit|interrupt")
# A frame line, indented or not (a pasted excerpt loses its indentation): `File "x.py", line 3, in f`.
_FRAME_LINE = re.compile(r'\s*File "[^"]+", line \d+')
# A record of its own, not the exception's message continued: a logger's header (`INFO:`, `INFO 10-29 ...`,
# `[W1201 12:00:00.000 ProcessGroupNCCL.cpp:1] ...`, glog `I1201 12:00:00.000`), a date, a launcher's banner.
_RECORD_HEAD = re.compile(
    r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b|\[?[IWEF]\d{4} \d\d:\d\d:\d\d|\d{4}-\d\d-\d\d[ T]\d\d:"
    r"|\[\d{4}-\d\d-\d\d|\*{3}|={5}|-{5}|Traceback \(most recent call last\):"
)
# A record that is nothing but an exception line: `ValueError: Current node has no GPU available` (a
# worker's last words, or the end of a traceback whose frames the excerpt does not hold).
_BARE = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Failure)(?::\s*\S.*)?\s*$")
_ELISION = frozenset({"...", "…", "[...]", "(...)", "<...>"})
MAX_DETAIL_LINES = 8  # lines after the exception line that can continue its message


def header_at(body: str) -> int:
    """Where the traceback header starts in ``body``, or -1."""
    return body.find(HEADER)


def is_continuation(body: str) -> bool:
    """An indented line: a frame, its source, or the carets under it."""
    return body[:1] in (" ", "\t")


def is_frame(body: str) -> bool:
    """A frame line (``  File "/x/file.py", line 12, in f``), indented or not."""
    return _FRAME_LINE.match(body) is not None


def is_elision(body: str) -> bool:
    """``...`` (a pasted excerpt's cut) inside a traceback: part of it, saying nothing."""
    return body.strip() in _ELISION


def is_detail(body: str) -> bool:
    """Whether a line after an exception line can continue the exception's message (``Last error:``,
    ``ncclInvalidUsage: ...``, CUDA's "might be asynchronously reported", a hard-wrapped message), rather than
    being a record of its own (a logger's header, a date, a new traceback, a frame) or a blank line."""
    stripped = body.strip()
    return bool(stripped) and not is_frame(body) and _RECORD_HEAD.match(stripped) is None


def is_bare_exception(body: str) -> bool:
    """A record that is only an exception line (``ValueError: ...``), not a logger's line that names one."""
    return _BARE.match(body) is not None and _LEVEL.match(body) is None


def frame_location(body: str) -> str | None:
    """``file.py:12`` for a frame line (``  File "/x/file.py", line 12, in f``), else None."""
    m = _FRAME.search(body)
    if m is None:
        return None
    return f"{m.group(1).replace(chr(92), '/').rsplit('/', 1)[-1]}:{m.group(2)}"


def is_chain(body: str) -> bool:
    """``During handling of the above exception...`` / ``The above exception was the direct cause...``."""
    return body.lstrip().startswith(CHAIN)


def is_exception_line(body: str) -> bool:
    """Whether the first unindented line after the frames is the exception (not a logger's next line, nor the rest
    of a frame line a terminal wrapped: an exception's class name is CapWords, or names an error, timeout, exit)."""
    stripped = body.strip()
    if not stripped or _LEVEL.match(stripped) is not None or _EXC_LINE.match(stripped) is None:
        return False
    name = stripped.split(":", 1)[0].strip().rsplit(".", 1)[-1]
    return name[:1].isupper() or _NAMES_AN_ERROR.search(name) is not None


def exception_inside(text: str) -> str | None:
    """An exception named inside ``text`` (not in source code), from its name on; else None."""
    m = _EXC_INSIDE.search(text)
    return m.group(1).strip() if m is not None else None


def lead_message(before_header: str) -> str | None:
    """The exception text printed before a header on the same line, when it is one.

    ``Exception in worker ... while processing method init_device: NCCL error: unhandled system
    error (...), Traceback (most recent call last):`` carries its exception before the header; a
    label (``Scheduler hit an exception:``, ``warmup error:``) does not.
    """
    text = before_header.strip().rstrip(",").strip()
    if not text or text.endswith(":"):
        return None
    inside = exception_inside(text)
    if inside is not None:
        return inside
    if ":" in text and re.search(r"(?i)error|exception|fail", text):
        return text.split(": ", 1)[1] if ": " in text else text
    return None


def shape(prefix: str) -> str:
    """A prefix with its digits folded (timestamps differ from line to line, their shape does not)."""
    return _DIGITS.sub("0", prefix)
