"""The headless wait loop (shared by `symmtui wait` and `symmtui launch`): phase lines, then one verdict."""

from __future__ import annotations

import os
import queue
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from symmtui import clitext
from symmtui.clitext import stamp as _stamp
from symmtui.core.diagnose import PortOwner, diagnose
from symmtui.core.engine import Bringup, EngineUpdate
from symmtui.core.events import Event
from symmtui.core.follow import Numbering
from symmtui.core.ranks import RankSummary
from symmtui.core.readiness import ReadinessConfig, Snapshot, State
from symmtui.core.rules import RuleSet

EXIT_READY = 0
EXIT_CRASHED = 1
EXIT_TIMED_OUT = 124
EXIT_CODES = {State.READY: EXIT_READY, State.CRASHED: EXIT_CRASHED, State.TIMED_OUT: EXIT_TIMED_OUT,
              State.STOPPED: EXIT_CRASHED}
SETTLE_QUIET = 0.2  # after a crash, wait for the log to be quiet this long (other ranks' copies) ...
SETTLE_MAX = 1.0  # ... but no longer than this
MAX_BLOCK_PRINT = 60
FINAL_GRACE = 0.5  # the state is final but its update has not come: wait this long for it
LINE_COUNT_WAIT = 2.0  # attached partway into a huge log: wait this long for its lines to be counted


@dataclass(frozen=True)
class WaitResult:
    """The verdict ``wait`` printed, its exit code and the final snapshot."""

    state: State
    exit_code: int
    snapshot: Snapshot


class _Printer:
    def __init__(self, out: TextIO, port_owner: PortOwner | None = None,
                 on_stall: Callable[[], list[str]] | None = None) -> None:
        self.out = out
        self.port_owner = port_owner
        self.spans_printed = 0
        self.state = State.WAITING
        self.notices: set[tuple[str, str]] = set()
        self.writer = clitext.Writer(out)
        self.numbering = Numbering()
        self.ranks: RankSummary | None = None
        self.on_stall = on_stall

    def line(self, text: str) -> None:
        # Log text (blocks, last lines, headlines) is sanitised there; a gone reader is not an error:
        # waiting goes on, so the exit code still tells the verdict.
        self.writer.line(text)

    def update(self, up: EngineUpdate, elapsed: float) -> None:
        snap = up.snapshot
        for notice in up.notices:
            if notice.kind == "opened":
                continue
            key = (notice.kind, notice.message)
            if key in self.notices:
                continue
            self.notices.add(key)
            self.line(f"{_stamp(elapsed)} log {notice.kind}: {notice.message}")
        self.ranks = up.ranks
        self.progress(snap)

    def progress(self, snap: Snapshot) -> None:
        spans = snap.phases
        for span in spans[self.spans_printed :]:
            if span.name == "ready":
                continue
            self.line(f"{_stamp(span.start)} {span.name}")
        self.spans_printed = len(spans)
        if snap.state is State.STALLED and self.state is not State.STALLED:
            limit = "" if snap.remaining_timeout is None else f"; still waiting, {snap.remaining_timeout:.0f} s to the timeout"
            self.line(f"{_stamp(snap.elapsed)} STALLED: {snap.detail}{limit}")
            if self.ranks is not None and self.ranks.text:
                self.line(f"  ranks: {self.ranks.text}")
            if self.on_stall is not None:
                for text in self.on_stall():
                    self.line(f"  {text}")
        elif self.state is State.STALLED and snap.state is State.STARTING:
            self.line(f"{_stamp(snap.elapsed)} moving again ({snap.phase or 'starting'})")
        self.state = snap.state

    def verdict(self, snap: Snapshot) -> None:
        after = snap.verdict_elapsed if snap.verdict_elapsed is not None else snap.elapsed
        if snap.run > 1:
            self.line(f"(the log holds {snap.run} launches; the verdict is about the last one)")
        if snap.state is State.READY:
            self.line(f"READY after {after:.1f} s")
            self.line(f"  evidence: {snap.detail}")
            if snap.log_span is not None and after < 1.0 and snap.log_span > after:
                self.line(f"  (already in the log: the server came up {snap.log_span:.1f} s after its first line)")
            for w in snap.warnings:
                self._warning(w)
            return
        if snap.state is State.CRASHED:
            cause = snap.cause
            head = cause.headline() if cause is not None else snap.detail
            self.line(f"CRASHED after {after:.1f} s: {head}")
            if cause is not None:
                self._block(cause)
                d = diagnose(cause, port_owner=self.port_owner)
                if d is not None:
                    self.line(clitext.detail("cause", d.cause))
                    self.line(clitext.detail("next", d.action))
                for other in snap.errors:
                    if other.key != cause.key:
                        where = f" ({self.label(other.line_no)})" if other.line_no else ""
                        self.line(clitext.detail("also", f"{other.headline()}{where}"))
            if snap.process_detail and (cause is None or cause.rule_id != "process_exit"):
                self.line(f"  process: {snap.process_detail}")
            for w in snap.warnings:
                self._warning(w)
            return
        if snap.state is State.TIMED_OUT:
            self.line(f"TIMED OUT after {after:.1f} s")
            phase = snap.phase or "no phase seen"
            if snap.progress is not None:
                phase += f" ({snap.progress * 100:.0f}%)"
            self.line(f"  last phase: {phase}")
            if snap.since_activity is not None:
                self.line(f"  last log line: {snap.since_activity:.1f} s ago")
            if self.ranks is not None and self.ranks.text:
                self.line(f"  ranks: {self.ranks.text}")
            if snap.probe_detail:
                self.line(f"  health: {snap.probe_detail}")
            if snap.last_lines:
                self.line("  last lines:")
                for text in snap.last_lines:
                    self.line(f"    {text}")
            return
        self.line(f"STOPPED after {after:.1f} s: {snap.detail}")

    def _block(self, ev: Event) -> None:
        if ev.rule_id == "process_exit":
            return  # the headline already says how the process ended; the log had no error line
        lines = ev.block or ((ev.text,) if ev.text and ev.text != ev.summary else ())
        if not lines:
            return
        where = f" ({self.label(ev.line_no)})" if ev.line_no else ""
        self.line(f"  --- first error{where} ---")
        shown = lines if len(lines) <= MAX_BLOCK_PRINT else (*lines[:10], "...", *lines[-(MAX_BLOCK_PRINT - 11) :])
        for text in shown:
            self.line(f"  | {text}")
        self.line("  ---")

    def label(self, no: int) -> str:
        """``line N`` in the file's own numbering (``line ~N`` if the lines before an attach point
        could not be counted in time)."""
        return self.numbering.label(no, LINE_COUNT_WAIT)

    def _warning(self, w: Event) -> None:
        self.line(f"  warning: {w.headline()}")
        d = diagnose(w, port_owner=self.port_owner)
        if d is not None:
            self.line(f"           {d.cause}; {d.action}")


def report(bringup: Bringup, updates: queue.Queue[EngineUpdate], out: TextIO,
           clock: Callable[[], float] = time.monotonic, *, port_owner: PortOwner | None = None,
           on_stall: Callable[[], list[str]] | None = None) -> WaitResult:
    """Print phase lines from ``updates`` until the bring-up's verdict, then the verdict. Stops ``bringup``.

    ``port_owner`` lets the diagnosis name the process holding a port (the launcher passes it).
    ``on_stall`` gives lines to print under the STALLED line (the stacks summary), once per stall.
    """
    printer = _Printer(out, port_owner, on_stall)
    t0 = clock()
    final_at: float | None = None  # the engine's state went final before its update reached us
    try:
        while True:
            try:
                up = updates.get(timeout=0.5 if final_at is None else 0.05)
            except queue.Empty:
                snap = bringup.snapshot()
                if snap.state.final:
                    # The update carrying it (and its notices) is on its way: take it, briefly.
                    final_at = clock() if final_at is None else final_at
                    if clock() - final_at >= FINAL_GRACE:
                        printer.progress(snap)
                        break
                    continue
                printer.ranks = bringup.ranks()
                printer.progress(snap)
                continue
            printer.update(up, clock() - t0)
            if up.snapshot.state.final:
                break
        snap = bringup.snapshot()
        if snap.state is State.CRASHED:
            # Let the other ranks' copies of the same error arrive (they are written within ms).
            start = last = clock()
            while clock() - start < SETTLE_MAX and clock() - last < SETTLE_QUIET:
                try:
                    up = updates.get(timeout=SETTLE_QUIET / 2)
                except queue.Empty:
                    continue
                if up.lines or up.events:
                    last = clock()
            snap = bringup.snapshot()
    finally:
        bringup.stop()
    printer.numbering = bringup.numbering()
    printer.ranks = bringup.ranks()
    printer.progress(snap)
    printer.verdict(snap)
    return WaitResult(snap.state, EXIT_CODES.get(snap.state, EXIT_CRASHED), snap)


def wait_for(
    log_path: str | os.PathLike[str] | None,
    *,
    url: str | None = None,
    pid: int | None = None,
    ruleset: RuleSet | None = None,
    config: ReadinessConfig | None = None,
    new_only: bool = False,
    out: TextIO | None = None,
    probe_timeout: float = 2.0,
    last_launch: bool = True,
) -> WaitResult:
    """Watch a bring-up until READY / CRASHED / TIMED OUT, printing as `symmtui wait` does.

    Exit codes in the result: 0 ready, 1 crashed, 124 timed out. ``last_launch=False`` judges an
    existing log from its start (the old path; the benchmark's baseline).
    """
    updates: queue.Queue[EngineUpdate] = queue.Queue()
    bringup = Bringup(log_path, ruleset=ruleset, config=config, url=url, pid=pid, new_only=new_only,
                      tail_lines=None, last_launch=last_launch, on_update=updates.put, probe_timeout=probe_timeout)
    bringup.start()
    return report(bringup, updates, out if out is not None else sys.stdout)
