"""The dashboard's clock in the log's own time where that is the truer one: a finished log opened in the
dashboard says READY 8m01s after its first line (as `scan` does), not 00:00 of watching; attaching to a
running launch shows the time since its first line, not since the attach.

    times = LogTimes(first=..., last=..., seen=...)  # the log pane's stamps (``LogView.log_times``)
    elapsed(snapshot, times, now)                    # seconds to show as "elapsed"
    verdict_after(snapshot)                          # (seconds, "after its first line") or (seconds, "")

The log's stamps are naive local times read as UTC (``logs.lineparts``), so they are only ever compared
with each other, never with the wall clock: the time since the launch's first line is the log time from it
to the latest stamped line plus the engine-clock seconds since that line arrived.
"""

from __future__ import annotations

from msgspec import Struct

from symmtui.clitext import duration
from symmtui.judge.readiness import Snapshot
from symmtui.judge.verdict import AHEAD, verdict_after

__all__ = ["LogTimes", "elapsed", "verdict_after", "words"]



class LogTimes(Struct, frozen=True):
    """The log pane's stamps: its first and latest stamped line (log time), and when the latest arrived
    (the engine's clock: the snapshot's ``started_at + elapsed`` scale, i.e. time.monotonic())."""

    first: float | None
    last: float | None
    seen: float | None


def _launch_start(snap: Snapshot, times: LogTimes | None) -> float | None:
    """The log time of the launch's first line: its first phase's stamp, else the pane's first stamp."""
    for span in snap.phases:
        if span.log_start is not None:
            return span.log_start
    return times.first if times is not None else None


def elapsed(snap: Snapshot, times: LogTimes | None, now: float) -> float:
    """Seconds since the launch began: the engine's (since watching) or, when the log says it began
    earlier (an attach), since its first line; frozen at the verdict."""
    after, _ = verdict_after(snap)
    if snap.state.final and after is not None:
        return after
    shown = snap.elapsed
    start = _launch_start(snap, times)
    if times is not None and start is not None and times.last is not None and times.seen is not None:
        since = (times.last - start) + max(0.0, now - times.seen)
        if since > shown + AHEAD:
            shown = since
    return shown


def words(seconds: float) -> str:
    """``8m01s``, ``14.0 s``, ``1h02m``: as `scan` says durations."""
    return duration(seconds)
