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
from symmtui.core.diagnose import Diagnosis, PortOwner, diagnose
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


@dataclass(frozen=True)
class WaitResult:
    """The verdict ``wait`` printed, its exit code and the final snapshot."""

    state: State
    exit_code: int
    snapshot: Snapshot


class _Printer:
    def __init__(self, out: TextIO, port_owner: PortOwner | None = None,
                 on_stall: Callable[[], list[str]] | None = None,
                 on_ready: Callable[[], list[str]] | None = None) -> None:
        self.out = out
        self.port_owner = port_owner
        self.spans_printed = 0
        self.state = State.WAITING
        self.notices: set[tuple[str, str]] = set()
        self.writer = clitext.Writer(out)
        self.numbering = Numbering()
        self.ranks: RankSummary | None = None
        self.on_stall = on_stall
        self.on_ready = on_ready

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
            self.line(clitext.phase_line(elapsed, f"log {notice.kind}: {notice.message}"))
        self.ranks = up.ranks
        self.progress(snap)

    def progress(self, snap: Snapshot) -> None:
        spans = snap.phases
        for span in spans[self.spans_printed :]:
            if span.name == "ready":
                continue
            self.line(clitext.phase_line(span.start, span.name))
        self.spans_printed = len(spans)
        if snap.state is State.STALLED and self.state is not State.STALLED:
            self.line(clitext.stalled_line(snap.elapsed, snap.detail, snap.remaining_timeout))
            if self.ranks is not None and self.ranks.text:
                self.line(f"  ranks: {self.ranks.text}")
            if self.on_stall is not None:
                for text in self.on_stall():
                    self.line(f"  {text}")
        elif self.state is State.STALLED and snap.state is State.STARTING:
            self.line(clitext.phase_line(snap.elapsed, f"moving again ({snap.phase or 'starting'})"))
        self.state = snap.state

    def verdict(self, snap: Snapshot) -> None:
        ranks = self.ranks.text if self.ranks is not None and self.ranks.text else None
        for text in clitext.verdict_lines(snap, diagnose=self._diagnose, label=self.label, ranks=ranks,
                                          max_block=MAX_BLOCK_PRINT):
            self.line(text)
        if snap.state is State.READY and self.on_ready is not None:
            for text in self.on_ready():
                self.line(f"  {text}")

    def _diagnose(self, ev: Event) -> Diagnosis | None:
        return diagnose(ev, port_owner=self.port_owner)

    def label(self, no: int) -> str:
        """``line N`` in the file's own numbering (``line ~N`` past an attach point too far in to count)."""
        return self.numbering.label(no)


def _decided(snap: Snapshot, caught_up: bool) -> bool:
    """A verdict `wait` can exit on: final, and for READY only once the log's backlog is judged (a log that
    already holds a crash after its READY is CRASHED; followed live, READY exits at once)."""
    return snap.state.final and (caught_up or snap.state is not State.READY)


def report(bringup: Bringup, updates: queue.Queue[EngineUpdate], out: TextIO,
           clock: Callable[[], float] = time.monotonic, *, port_owner: PortOwner | None = None,
           on_stall: Callable[[], list[str]] | None = None,
           on_ready: Callable[[], list[str]] | None = None) -> WaitResult:
    """Print phase lines from ``updates`` until the bring-up's verdict, then the verdict. Stops ``bringup``.

    ``port_owner`` lets the diagnosis name the process holding a port (the launcher passes it).
    ``on_stall`` gives lines to print under the STALLED line (the stacks summary), once per stall.
    ``on_ready`` gives lines to add to the READY block (the phases against earlier launches); it is asked
    after the engine stopped, so every observer of the verdict has run.
    """
    printer = _Printer(out, port_owner, on_stall, on_ready)
    t0 = clock()
    final_at: float | None = None  # the engine's state went final before its update reached us
    try:
        while True:
            try:
                up = updates.get(timeout=0.5 if final_at is None else 0.05)
            except queue.Empty:
                snap = bringup.snapshot()
                if _decided(snap, bringup.caught_up):
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
            if _decided(up.snapshot, up.caught_up):
                break
        snap = bringup.snapshot()
        if snap.state is State.CRASHED:
            _settle(bringup, updates, clock)
            snap = bringup.snapshot()
    finally:
        bringup.stop()
    if snap.state is State.CRASHED:
        snap = bringup.snapshot()  # with the lines the follower had in hand when it stopped
    printer.numbering = bringup.numbering()
    printer.ranks = bringup.ranks()
    printer.progress(snap)
    printer.verdict(snap)
    return WaitResult(snap.state, EXIT_CODES.get(snap.state, EXIT_CRASHED), snap)


def _settle(bringup: Bringup, updates: queue.Queue[EngineUpdate], clock: Callable[[], float]) -> None:
    """After a crash, let the other ranks' copies of the same error arrive (written within ms).

    A log file nobody has written to for SETTLE_QUIET holds them already: wait only until the follower
    has read it to its end (``report`` then stops the engine, which judges what it read). Otherwise
    wait for the log to be quiet for SETTLE_QUIET, at most SETTLE_MAX."""
    start = last = clock()
    path = bringup.log_path
    if path is not None and bringup.log_command is None:
        try:
            idle = time.time() - os.stat(path).st_mtime >= SETTLE_QUIET
        except OSError:
            idle = False
        while idle and clock() - start < SETTLE_MAX:
            read = bringup.numbering()
            try:
                if read.skipped + read.read_bytes >= os.stat(path).st_size:
                    return
            except OSError:
                return
            time.sleep(0.005)
    while clock() - start < SETTLE_MAX and clock() - last < SETTLE_QUIET:
        try:
            up = updates.get(timeout=SETTLE_QUIET / 2)
        except queue.Empty:
            continue
        if up.lines or up.events:
            last = clock()


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
