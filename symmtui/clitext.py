"""The command-line text conventions of every verb: one writer, every string through the sanitiser.

Conventions (every verb):
- ``[  12.3s] phase``: a timestamped progress line (``stamp``; ``phase_line``); ``mm:ss`` times (``mmss``),
  durations ``7m10s`` (``duration``).
- a verdict block (``verbs.printer`` makes it of these pieces): ``READY after 12.3 s`` / ``CRASHED after
  ...: headline`` / ``TIMED OUT after ...`` / ``STALLED ...``, then indented detail lines ``  cause: ...``,
  ``  next:  ...``, ``  also:  ...`` (``detail``).
- ``symmtui: error: ...``: one line on stderr, what went wrong and what to do (``error_line``).
- ``symmtui: ...``: one progress line of launch/stop on stderr (``note_line``).
Whatever text is written, log bytes included, goes through :func:`symmtui.textsafe.visible`.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import TextIO

from symmtui.errors import UserError
from symmtui.textsafe import shorten, visible

MAX_ERROR_CHARS = 1000  # a `symmtui: error:` line never grows past this, whatever the user passed
DETAIL_WIDTH = 7  # "cause: ", "next:  ", "also:  " line up


def stamp(seconds: float) -> str:
    """``[  12.3s]``: the time column of progress lines."""
    return f"[{seconds:6.1f}s]"


def phase_line(seconds: float, text: str) -> str:
    """``[  12.3s] text``."""
    return f"{stamp(seconds)} {text}"


def mmss(seconds: float | None) -> str:
    """Seconds as mm:ss (h:mm:ss past an hour); '--:--' when unknown."""
    if seconds is None or seconds != seconds:  # None or NaN
        return "--:--"
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def duration(seconds: float | None) -> str:
    """``7.0 s``, ``7m10s``, ``1h02m``: a duration as `scan` and the READY words say it; '?' when unknown."""
    if seconds is None:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"


_PRESS = re.compile(r"\bpress (\S+) to ([^(;]*?) ?\((?:or )?(`[^`]+`)\)")  # "press KEY to DO (or `COMMAND`)"


def headless(action: str) -> str:
    """A catalogue action as a headless verb says it: the dashboard's key replaced by the command the text
    names (``press p to apply the SM120 patch (or `symmtui patch apply`), then relaunch`` -> ``run `symmtui
    patch apply` to apply the SM120 patch, then relaunch``). The one place this form is made: the
    catalogue's texts say both, "press KEY to DO (or `COMMAND`)" or "press KEY to DO (`COMMAND`)"."""
    if "press " not in action:
        return action
    return _PRESS.sub(lambda m: f"run {m.group(3)} to {m.group(2)}", action)


def headless_json(doc: object, key: str = "") -> object:
    """``doc`` with every diagnosis's ``action`` and its fix's ``text`` in their headless form (``scan --json``)."""
    if isinstance(doc, dict):
        said = ("action",) if key != "fix" else ("action", "text")
        return {k: headless(v) if k in said and isinstance(v, str) else headless_json(v, k) for k, v in doc.items()}
    if isinstance(doc, list):
        return [headless_json(v, key) for v in doc]
    return doc


def detail(label: str, text: str, indent: str = "  ") -> str:
    """``  cause: ...`` / ``  next:  ...`` / ``  also:  ...``: a verdict's detail line, labels aligned."""
    return f"{indent}{(label + ':').ljust(DETAIL_WIDTH)}{text}"


def stalled_line(elapsed: float, detail: str, remaining: float | None) -> str:
    """``[  12.3s] STALLED: detail; still waiting, N s to the timeout``."""
    limit = "" if remaining is None else f"; still waiting, {remaining:.0f} s to the timeout"
    return phase_line(elapsed, f"STALLED: {detail}{limit}")


def error_line(message: str) -> str:
    """``symmtui: error: message`` on one line, at most MAX_ERROR_CHARS, nothing a terminal obeys."""
    one = visible(message.replace("\r\n", " ").replace("\n", " "))
    return shorten(f"symmtui: error: {one}", MAX_ERROR_CHARS)


def bundle_line(path: str) -> str:
    """Where this run's bundle is, printed under its verdict (a ``note``)."""
    return f"bundle: {path} (symmtui report, symmtui replay)"


def note_line(message: str) -> str:
    """``symmtui: message``: a progress or summary line of launch / stop (stderr)."""
    return f"symmtui: {message}"


def drop_stream(stream: TextIO) -> None:
    """The reader of ``stream`` went away (``| head``, ``| true``): send the rest to /dev/null, so
    neither a later write nor the interpreter's last flush fails."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class Writer:
    """Writes lines to one stream: sanitised, flushed, and quiet once the reader is gone."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.closed = False

    def line(self, text: str = "") -> None:
        """Write one line (sanitised); after a broken pipe, drop the rest."""
        self.raw(visible(text) + "\n")

    def raw(self, text: str) -> None:
        """Write text symmtui made itself (a diff, a JSON document); the caller sanitised any log text."""
        if self.closed:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except BrokenPipeError:
            self.closed = True
            if self.out in (sys.stdout, sys.stderr):
                drop_stream(self.out)


def emit(text: str, out: TextIO | None = None) -> None:
    """Sanitised text to ``out`` (stdout by default), one line per line of ``text``; a gone reader is
    not an error."""
    w = Writer(out)
    for line in text.split("\n"):
        w.line(line)


def note(message: str, err: TextIO | None = None) -> None:
    """``symmtui: message`` (sanitised) on stderr: a progress or summary line of launch / stop."""
    Writer(err if err is not None else sys.stderr).line(note_line(message))


def print_error(message: str, err: TextIO | None = None) -> None:
    """Print ``symmtui: error: ...`` (one line) to stderr."""
    Writer(err if err is not None else sys.stderr).raw(error_line(message) + "\n")


class PipeSafe:
    """A stand-in for sys.stdout / sys.stderr: once the reader is gone (EPIPE), the rest goes to
    /dev/null, so no verb dies of a BrokenPipeError half-way (``symmtui patch check | true``) and
    its exit code still tells its result. Any other write failure (``> /dev/full``: ENOSPC, EIO)
    is one UserError line, and the stream goes to /dev/null so the interpreter's last flush is quiet."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            self._failed(exc)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        self.gone = True
        drop_stream(self._stream)
        with contextlib.suppress(OSError):  # the stream is /dev/null now: what was buffered goes there
            self._stream.flush()
        if not isinstance(exc, BrokenPipeError):
            name = "standard error" if self._stream is sys.__stderr__ else "standard output"
            raise UserError(f"cannot write to {name} ({exc.strerror or exc}); check where it goes "
                            "(a full disk?)") from None

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def guard_streams() -> tuple[object, object]:
    """Make sys.stdout and sys.stderr survive a reader that goes away (see :class:`PipeSafe`); a
    closed one (``>&-``) becomes /dev/null. Returns the streams it replaced, for :func:`restore_streams`."""
    saved = (sys.stdout, sys.stderr)
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
        if not isinstance(stream, PipeSafe):
            setattr(sys, name, PipeSafe(stream))
    return saved


def restore_streams(saved: tuple[object, object]) -> None:
    """Put back what :func:`guard_streams` replaced."""
    sys.stdout, sys.stderr = saved
