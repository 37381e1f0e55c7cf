"""All command-line text of the verbs: one convention, one writer, every string through the sanitiser.

Conventions (every verb):
- ``[  12.3s] phase``: a timestamped progress line (``stamp``; ``phase_line``).
- a verdict block: ``READY after 12.3 s`` / ``CRASHED after ...: headline`` / ``TIMED OUT after ...`` /
  ``STALLED ...``, then indented detail lines ``  cause: ...``, ``  next:  ...``, ``  also:  ...``.
- ``symmtui: error: ...``: one line on stderr, what went wrong and what to do (``error_line``).
- ``symmtui: ...``: one progress line of launch/stop on stderr (``note_line``).
Whatever text is written, log bytes included, goes through :func:`symmtui.textsafe.visible`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from symmtui.textsafe import shorten, visible

if TYPE_CHECKING:  # the core is imported lazily: clitext is loaded by every verb, even `--help`
    from symmtui.core.diagnose import Diagnosis
    from symmtui.core.events import Event
    from symmtui.core.readiness import Snapshot

_PROCESS_EXIT = "process_exit"  # the rule id of the event a process's exit makes (core.readiness)
MAX_ERROR_CHARS = 1000  # a `symmtui: error:` line never grows past this, whatever the user passed
DETAIL_WIDTH = 7  # "cause: ", "next:  ", "also:  " line up


def stamp(seconds: float) -> str:
    """``[  12.3s]``: the time column of progress lines."""
    return f"[{seconds:6.1f}s]"


def phase_line(seconds: float, text: str) -> str:
    """``[  12.3s] text``."""
    return f"{stamp(seconds)} {text}"


def detail(label: str, text: str, indent: str = "  ") -> str:
    """``  cause: ...`` / ``  next:  ...`` / ``  also:  ...``: a verdict's detail line, labels aligned."""
    return f"{indent}{(label + ':').ljust(DETAIL_WIDTH)}{text}"


def stalled_line(elapsed: float, detail: str, remaining: float | None) -> str:
    """``[  12.3s] STALLED: detail; still waiting, N s to the timeout``."""
    limit = "" if remaining is None else f"; still waiting, {remaining:.0f} s to the timeout"
    return phase_line(elapsed, f"STALLED: {detail}{limit}")


def verdict_lines(snap: Snapshot, *, diagnose: Callable[[Event], Diagnosis | None],
                  label: Callable[[int], str] = lambda no: f"line {no}", ranks: str | None = None,
                  max_block: int = 60) -> list[str]:
    """The verdict block of `wait` and `launch`: READY / CRASHED (first error block, cause, next,
    also) / TIMED OUT (last phase, last lines) / STOPPED. ``label`` names a line number."""
    from symmtui.core.readiness import State

    out: list[str] = []
    after = snap.verdict_elapsed if snap.verdict_elapsed is not None else snap.elapsed
    if snap.run > 1:
        out.append(f"(the log holds {snap.run} launches; the verdict is about the last one)")
    if snap.state is State.READY:
        out.append(f"READY after {after:.1f} s")
        out.append(f"  evidence: {snap.detail}")
        if snap.log_span is not None and after < 1.0 and snap.log_span > after:
            out.append(f"  (already in the log: the server came up {snap.log_span:.1f} s after its first line)")
    elif snap.state is State.CRASHED:
        cause = snap.cause
        head = cause.headline() if cause is not None else snap.detail
        out.append(f"CRASHED after {after:.1f} s: {head}")
        if snap.ready_after is not None:
            out.append(f"  (it had been READY: it crashed {snap.ready_after:.1f} s after READY)")
        if cause is not None:
            out += _first_error(cause, label, max_block)
            d = diagnose(cause)
            if d is not None:
                out += [detail("cause", d.cause), detail("next", d.action)]
            for other in snap.errors:
                if other.key != cause.key:
                    where = f" ({label(other.line_no)})" if other.line_no else ""
                    out.append(detail("also", f"{other.headline()}{where}"))
        if snap.process_detail and (cause is None or cause.rule_id != _PROCESS_EXIT):
            out.append(f"  process: {snap.process_detail}")
    elif snap.state is State.TIMED_OUT:
        out.append(f"TIMED OUT after {after:.1f} s")
        phase = snap.phase or "no phase seen"
        if snap.progress is not None:
            phase += f" ({snap.progress * 100:.0f}%)"
        out.append(f"  last phase: {phase}")
        if snap.since_activity is not None:
            out.append(f"  last log line: {snap.since_activity:.1f} s ago")
        if ranks:
            out.append(f"  ranks: {ranks}")
        if snap.probe_detail:
            out.append(f"  health: {snap.probe_detail}")
        if snap.last_lines:
            out.append("  last lines:")
            out += [f"    {text}" for text in snap.last_lines]
        return out
    else:
        out.append(f"STOPPED after {after:.1f} s: {snap.detail}")
        if snap.ready_after is not None:
            out.append(f"  (it had been READY: stopped {snap.ready_after:.1f} s after READY)")
        return out
    for w in snap.warnings:  # READY and CRASHED
        out.append(f"  warning: {w.headline()}")
        d = diagnose(w)
        if d is not None:
            out.append(f"           {d.cause}; {d.action}")
    return out


def _first_error(ev: Event, label: Callable[[int], str], max_block: int) -> list[str]:
    """``  --- first error (line N) ---`` / ``  | ...`` / ``  ---``: the cause's block, long ones cut."""
    if ev.rule_id == _PROCESS_EXIT:
        return []  # the headline already says how the process ended; the log had no error line
    lines = ev.block or ((ev.text,) if ev.text and ev.text != ev.summary else ())
    if not lines:
        return []
    where = f" ({label(ev.line_no)})" if ev.line_no else ""
    shown = lines if len(lines) <= max_block else (*lines[:10], "...", *lines[-(max_block - 11) :])
    return [f"  --- first error{where} ---", *(f"  | {text}" for text in shown), "  ---"]


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
            from symmtui.errors import UserError

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
