"""Plain-text output of the launch/stop verbs: progress lines and the stop report."""

from __future__ import annotations

from typing import TextIO

from symmtui import clitext
from symmtui.launch.report import Progress, Step, StopReport


class ProgressPrinter:
    """Prints a progress line when the step or the set of remaining processes changes (not every tick)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._last: tuple[str, Step, tuple[int, ...]] | None = None

    def __call__(self, p: Progress) -> None:
        if p.step in (Step.DONE, Step.LAUNCH):  # the verb prints the outcome itself
            return
        if p.step is Step.SCAN and not p.remaining and p.message.startswith("finding"):
            return  # the scan's result line follows at once
        key = (p.node, p.step, p.remaining)
        if key == self._last:
            return
        self._last = key
        clitext.note(p.message, self.out)


def print_report(report: StopReport, out: TextIO, prefix: str = "") -> None:
    """The stop's outcome: one summary line, then one line per stranger with how to end it (``prefix``:
    the node's name, a server of several nodes)."""
    w = clitext.Writer(out)  # strangers' command lines are anybody's text: sanitised
    w.line(prefix + report.summary())
    for note in report.notes:
        w.line(f"{prefix}note: {note}")
    for s in report.strangers:
        how = f"; to end it: symmtui stop --kill-pid {s.pid}" if s.pid is not None else ""
        w.line(f"{prefix}not started by symmtui: {s.describe()}{how}")
