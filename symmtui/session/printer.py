"""The command-line front end of a Session (`wait`, `launch`): phase lines, then one verdict block.

One printer for any number of nodes: with several, each node's lines lead with its name (the node
column) and the verdict block names the node it is about. It only formats what the Session posts
(the verdict view carries the diagnosis, the patch state and the timings).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from symmtui import clitext
from symmtui.core.events import PROCESS_EXIT, Event
from symmtui.core.readiness import State
from symmtui.core.verdict import Verdict
from symmtui.session.messages import EngineBatch, Notice, StacksTaken
from symmtui.session.protocol import SessionLike

EXIT_READY = 0
EXIT_CRASHED = 1
EXIT_TIMED_OUT = 124
EXIT_CODES = {State.READY: EXIT_READY, State.CRASHED: EXIT_CRASHED, State.TIMED_OUT: EXIT_TIMED_OUT,
              State.STOPPED: EXIT_CRASHED}
SETTLE_QUIET = 0.2  # after a crash, wait for the log to be quiet this long (other ranks' copies) ...
SETTLE_MAX = 1.0  # ... but no longer than this
MAX_BLOCK_PRINT = 60
LAST_LINES = 3  # a process that died without an error line: this many of its last log lines
TICK = 0.5  # the mailbox is looked at at least this often (a session closed under us)


@dataclass(frozen=True)
class WaitResult:
    """The verdict the printer printed, its exit code and the verdict view."""

    state: State
    exit_code: int
    verdict: Verdict


def stacks_lines(taken: StacksTaken) -> list[str]:
    """A dump's collapsed summary (`wait`'s lines under STALLED), or the one line why there is none."""
    if taken.report is None:
        return [f"stacks: {taken.error}"]
    lines = [f"stacks: {ln}" if i == 0 else f"        {ln}" for i, ln in enumerate(taken.report.summary())]
    if taken.saved:
        lines.append(f"        (saved {taken.saved})")
    return lines


def changed_lines(verdict: Verdict) -> list[str]:
    """``  changed: since the last READY launch, ...`` and the differences under it, culprit first (none when
    the verdict was not compared: READY, no history)."""
    changes = verdict.changes
    if changes is None:
        return []
    return [f"  changed: {changes.since}", *(f"    {text}" for text in changes.lines)]


def verdict_lines(verdict: Verdict, *, label: Callable[[int], str] = lambda no: f"line {no}",
                  max_block: int = MAX_BLOCK_PRINT) -> list[str]:
    """The verdict block: READY / CRASHED (first error block, cause, next, what changed since the last READY
    launch, also) / TIMED OUT (last phase, what changed, last lines) / STOPPED; ``label`` names a line
    number. Names the node with several nodes."""
    snap = verdict.snapshot
    out: list[str] = []
    after = snap.verdict_elapsed if snap.verdict_elapsed is not None else snap.elapsed
    word = verdict.label
    if snap.run > 1:
        out.append(f"(the log holds {snap.run} launches; the verdict is about the last one)")
    if verdict.state is State.READY:
        out.append(f"READY after {after:.1f} s")
        out.append(f"  evidence: {snap.detail}")
        if snap.log_span is not None and after < 1.0 and snap.log_span > after:
            out.append(f"  (already in the log: the server came up {snap.log_span:.1f} s after its first line)")
        out += [f"  {text}" for text in verdict.timings]
    elif verdict.state is State.CRASHED:
        cause = snap.cause
        out.append(f"{word} after {after:.1f} s: {cause.headline() if cause is not None else snap.detail}")
        if snap.ready_after is not None:
            out.append(f"  (it had been READY: it crashed {snap.ready_after:.1f} s after READY)")
        if cause is not None:
            out += _first_error(cause, label, max_block)
            found = verdict.about.finding(cause)
            if found is not None and found.diagnosis is not None:
                out += [clitext.detail("cause", found.diagnosis.cause), clitext.detail("next", clitext.headless(found.diagnosis.action))]
        out += changed_lines(verdict)
        if cause is not None:
            for other in snap.errors:
                if other.key != cause.key:
                    where = f" ({label(other.line_no)})" if other.line_no else ""
                    out.append(clitext.detail("also", f"{other.headline()}{where}"))
        if snap.process_detail and (cause is None or cause.rule_id != PROCESS_EXIT):
            out.append(f"  process: {snap.process_detail}")
        if cause is None or cause.rule_id == PROCESS_EXIT:
            tail = [ln for ln in snap.last_lines if ln.strip()][-LAST_LINES:]
            if tail:  # what it said last (ssh's own reason when it could not reach the node)
                out.append(f"  last lines of {verdict.node}'s log:" if verdict.named else "  last lines of the log:")
                out += [f"    {ln}" for ln in tail]
    elif verdict.state is State.TIMED_OUT:
        out.append(f"{word} after {after:.1f} s")
        phase = snap.phase or "no phase seen"
        if snap.progress is not None:
            phase += f" ({snap.progress * 100:.0f}%)"
        out.append(f"  last phase: {phase}")
        out += changed_lines(verdict)
        if snap.since_activity is not None:
            out.append(f"  last log line: {snap.since_activity:.1f} s ago")
        if verdict.ranks is not None and verdict.ranks.text:
            out.append(f"  ranks: {verdict.ranks.text}")
        if snap.probe_detail:
            out.append(f"  health: {snap.probe_detail}")
        if snap.last_lines:
            out.append("  last lines:")
            out += [f"    {text}" for text in snap.last_lines]
    else:
        out.append(f"{word} after {after:.1f} s: {verdict.detail}")
        if snap.ready_after is not None:
            out.append(f"  (it had been READY: stopped {snap.ready_after:.1f} s after READY)")
    if verdict.state in (State.READY, State.CRASHED):
        for w in snap.warnings:
            out.append(f"  warning: {w.headline()}")
            found = verdict.about.finding(w)
            if found is not None and found.diagnosis is not None:
                out.append(f"           {found.diagnosis.cause}; {clitext.headless(found.diagnosis.action)}")
    if verdict.nodes_line is not None:
        out.append(f"  {verdict.nodes_line}")
    return out


def _first_error(ev: Event, label: Callable[[int], str], max_block: int) -> list[str]:
    """``  --- first error (line N) ---`` / ``  | ...`` / ``  ---``: the cause's block, long ones cut."""
    if ev.rule_id == PROCESS_EXIT:
        return []  # the headline already says how the process ended; the log had no error line
    lines = ev.block or ((ev.text,) if ev.text and ev.text != ev.summary else ())
    if not lines:
        return []
    where = f" ({label(ev.line_no)})" if ev.line_no else ""
    shown = lines if len(lines) <= max_block else (*lines[:10], "...", *lines[-(max_block - 11):])
    return [f"  --- first error{where} ---", *(f"  | {text}" for text in shown), "  ---"]


class Printer:
    """Attach to ``session`` without a screen and print as `symmtui wait` does (see :meth:`run`).

    ``stacks``: when the verdict becomes STALLED, dump the processes of the node it names once and print
    the collapsed summary under the STALLED line (saved next to its log).
    """

    def __init__(self, session: SessionLike, out: TextIO | None = None, err: TextIO | None = None, *,
                 stacks: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self.session = session
        self.writer = clitext.Writer(out if out is not None else sys.stdout)
        self.err = err if err is not None else sys.stderr
        self.stacks = stacks
        self.clock = clock
        self.width = max(len(n) for n in session.nodes)
        self.spans: dict[str, int] = {}
        self.notices: set[tuple[str, str, str]] = set()
        self.shown: tuple[State, str] | None = None  # the STALLED verdict printed last (state, node)
        self.verdict: Verdict | None = None
        self.caught_up: dict[str, bool] = {}  # each node's last batch: its log's backlog was judged
        self.mailbox = session.attach(lambda: None)  # read with wait(): no loop to wake

    def _line(self, node: str | None, text: str) -> None:
        # A gone reader is not an error: waiting goes on, so the exit code still tells the verdict.
        prefix = f"{(node or '').ljust(self.width)} " if self.session.named else ""
        self.writer.line(prefix + text)

    def _batch(self, batch: EngineBatch) -> None:
        node, snap = batch.node, batch.snapshot
        for notice in batch.notices:
            key = (node, notice.kind, notice.message)
            if notice.kind == "opened" or key in self.notices:
                continue
            self.notices.add(key)
            self._line(node, clitext.phase_line(snap.elapsed, f"log {notice.kind}: {notice.message}"))
        self.caught_up[node] = batch.update.caught_up
        if batch.restarted:
            self.spans[node] = 0
        spans = snap.phases
        for span in spans[self.spans.get(node, 0):]:
            if span.name != "ready":
                self._line(node, clitext.phase_line(span.start, span.name))
        self.spans[node] = len(spans)
        self._judged(batch.verdict)

    def _judged(self, verdict: Verdict) -> None:
        """A STALLED line when the verdict becomes STALLED (or names another node), a line when it moves on."""
        self.verdict = verdict
        snap = verdict.snapshot
        if verdict.state is State.STALLED and self.shown != (State.STALLED, verdict.node):
            self.shown = (State.STALLED, verdict.node)
            self._line(None, clitext.stalled_line(snap.elapsed, verdict.detail, snap.remaining_timeout))
            ranks = verdict.ranks.text if verdict.ranks is not None else ""
            if ranks and ranks not in verdict.detail:
                self._line(None, f"  ranks: {ranks}")
            if self.stacks:
                for text in stacks_lines(self.session.take_stacks(verdict.node, auto=True)):
                    self._line(None, f"  {text}")
            for text in changed_lines(verdict):
                self._line(None, text)
        elif self.shown is not None and verdict.state is State.STARTING:
            self.shown = None
            self._line(None, clitext.phase_line(snap.elapsed, f"moving again ({snap.phase or 'starting'})"))

    def _take(self, timeout: float) -> bool:
        """Print what arrived within ``timeout``; True when lines or events came (the log is not quiet)."""
        if not self.mailbox.wait(timeout):
            return False
        busy = False
        for message in self.mailbox.take():
            if isinstance(message, EngineBatch):
                busy = busy or bool(message.lines or message.events)
                self._batch(message)
            elif isinstance(message, Notice):
                clitext.note(f"{message.severity}: {message.text}", self.err)
        return busy

    def _decided(self) -> bool:
        """A verdict `wait` can exit on: final, and for READY only once every node's backlog is judged (a log
        that already holds a crash after its READY is CRASHED; followed live, READY exits at once)."""
        verdict = self.verdict
        return verdict is not None and verdict.state.final and (
            verdict.state is not State.READY or all(self.caught_up.values()))

    def _settle(self, node: str) -> bool:
        """After a crash, let the other ranks' copies of the same error arrive (written within ms).

        A log file nobody has written to for SETTLE_QUIET holds them already: wait only until the engine
        has read it to its end (True: the verdict is then read from the engine, not from a batch still on
        its way). Otherwise wait for the log to be quiet for SETTLE_QUIET, at most SETTLE_MAX."""
        start = last = self.clock()
        while self.clock() - start < SETTLE_MAX:
            read = self.session.read_through(node, SETTLE_QUIET)
            if read is None:
                break
            if read:
                return True
            time.sleep(0.005)
        while self.clock() - start < SETTLE_MAX and self.clock() - last < SETTLE_QUIET:
            if self._take(SETTLE_QUIET / 2):
                last = self.clock()
        return False

    def _others_read(self, node: str) -> None:
        """With several nodes, the other nodes' backlogs printed before the verdict block (their phase lines
        under their names, as the block's "nodes:" line counts them), waiting at most SETTLE_MAX for them."""
        start = self.clock()
        while (not all(self.caught_up.get(n, False) for n in self.session.nodes if n != node)
               and self.clock() - start < SETTLE_MAX):
            self._take(0.05)

    def run(self) -> WaitResult:
        """Print phase lines until the verdict is decided (after a crash, a moment more for the other ranks'
        copies of the error), then the verdict block; the exit code of `wait`."""
        while not self._decided():
            if self.session.closed and not self.mailbox.wait(0):
                break
            self._take(TICK)
        verdict = self.verdict
        assert verdict is not None, "the session closed before its engine said anything"
        if verdict.state is State.CRASHED:
            read = self._settle(verdict.node)
            self._others_read(verdict.node)
            self._take(0)
            verdict = (self.session.verdict_now() if read else None) or self.verdict
        assert verdict is not None
        node = verdict.node
        for text in verdict_lines(verdict, label=lambda no: self.session.line_label(node, no)):
            self.writer.line(text)
        return WaitResult(verdict.state, EXIT_CODES.get(verdict.state, EXIT_CRASHED), verdict)
