"""The command-line front end of a Session (`wait`, `launch`): phase lines, then one verdict block.

One printer for any number of nodes: with several, each node's lines lead with its name (the node
column) and the verdict block names the node it is about. It only lays out the Boards the Session posts
(``judge.board``: the cause, its next step, the other errors and warnings are worded there); it prints
Boards until one is decided (``Board.decided``), and never asks the Session for anything.
"""

from __future__ import annotations

import sys
from typing import TextIO

from msgspec import Struct

from symmtui import clitext
from symmtui.judge.board import Board, Said
from symmtui.judge.events import PROCESS_EXIT
from symmtui.judge.readiness import State
from symmtui.session.messages import EngineBatch, Notice, StacksTaken
from symmtui.session.protocol import SessionLike

EXIT_READY = 0
EXIT_CRASHED = 1
EXIT_TIMED_OUT = 124
EXIT_CODES = {State.READY: EXIT_READY, State.CRASHED: EXIT_CRASHED, State.TIMED_OUT: EXIT_TIMED_OUT,
              State.STOPPED: EXIT_CRASHED}
MAX_BLOCK_PRINT = 60
LAST_LINES = 3  # a process that died without an error line: this many of its last log lines
TICK = 0.5  # the mailbox is looked at at least this often (a session closed under us)


class WaitResult(Struct, frozen=True):
    """The verdict the printer printed, its exit code and the Board it printed."""

    state: State
    exit_code: int
    board: Board


def stacks_lines(taken: StacksTaken) -> list[str]:
    """A dump's collapsed summary (`wait`'s lines under STALLED), or the one line why there is none."""
    if taken.report is None:
        return [f"stacks: {taken.error}"]
    lines = [f"stacks: {ln}" if i == 0 else f"        {ln}" for i, ln in enumerate(taken.report.summary())]
    if taken.saved:
        lines.append(f"        (saved {taken.saved})")
    return lines


def changed_lines(board: Board) -> list[str]:
    """``  changed: since the last READY launch, ...`` and the differences under it, culprit first (none when
    the Board was not compared: READY, no history)."""
    changes = board.changes
    if changes is None:
        return []
    return [f"  changed: {changes.since}", *(f"    {text}" for text in changes.lines)]


def _where(said: Said) -> str:
    return f" ({said.where})" if said.where else ""


def verdict_lines(board: Board, *, max_block: int = MAX_BLOCK_PRINT) -> list[str]:
    """The verdict block: READY / CRASHED (first error block, cause, next, what changed since the last READY
    launch, also) / TIMED OUT (last phase, what changed, last lines) / STOPPED. Names the node with several
    nodes."""
    snap = board.snapshot
    out: list[str] = []
    after = board.about.elapsed  # the Board's one figure (the notification and the bundle say the same)
    word = board.label
    cause = board.cause
    if snap.run > 1:
        out.append(f"(the log holds {snap.run} launches; the verdict is about the last one)")
    if board.state is State.READY:
        out.append(f"READY after {after:.1f} s")
        out.append(f"  evidence: {snap.detail}")
        if board.about.log_clock:
            out.append(f"  (on the log's clock: the server came up {after:.1f} s after its first line)")
        out += [f"  {text}" for text in board.timings]
    elif board.state is State.CRASHED:
        out.append(f"{word} after {after:.1f} s: {cause.headline if cause is not None else snap.detail}")
        if board.about.log_clock:
            out.append(f"  (on the log's clock: it crashed {after:.1f} s after its first line)")
        if snap.ready_after is not None:
            out.append(f"  (it had been READY: it crashed {snap.ready_after:.1f} s after READY)")
        if cause is not None:
            out += _first_error(cause, max_block)
            if cause.diagnosed:
                out += [clitext.detail("cause", cause.cause or ""), clitext.detail("next", cause.command or "")]
        out += changed_lines(board)
        if cause is not None:
            for other in board.about.errors:
                out.append(clitext.detail("also", f"{other.headline}{_where(other)}"))
        if snap.process_detail and (cause is None or cause.event.rule_id != PROCESS_EXIT):
            out.append(f"  process: {snap.process_detail}")
        if cause is None or cause.event.rule_id == PROCESS_EXIT:
            tail = [ln for ln in snap.last_lines if ln.strip()][-LAST_LINES:]
            if tail:  # what it said last (ssh's own reason when it could not reach the node)
                out.append(f"  last lines of {board.node}'s log:" if board.named else "  last lines of the log:")
                out += [f"    {ln}" for ln in tail]
    elif board.state is State.TIMED_OUT:
        out.append(f"{word} after {after:.1f} s")
        phase = snap.phase or "no phase seen"
        if snap.progress is not None:
            phase += f" ({snap.progress * 100:.0f}%)"
        out.append(f"  last phase: {phase}")
        out += changed_lines(board)
        if snap.since_activity is not None:
            out.append(f"  last log line: {snap.since_activity:.1f} s ago")
        if board.ranks is not None and board.ranks.text:
            out.append(f"  ranks: {board.ranks.text}")
        if snap.probe_detail:
            out.append(f"  health: {snap.probe_detail}")
        if snap.last_lines:
            out.append("  last lines:")
            out += [f"    {text}" for text in snap.last_lines]
    else:
        out.append(f"{word} after {after:.1f} s: {board.detail}")
        if snap.ready_after is not None:
            out.append(f"  (it had been READY: stopped {snap.ready_after:.1f} s after READY)")
    if board.state in (State.READY, State.CRASHED):
        for w in board.about.warnings:
            out.append(f"  warning: {w.headline}")
            if w.diagnosed:
                out.append(f"           {w.cause}; {w.command}")
    if board.nodes_line is not None:
        out.append(f"  {board.nodes_line}")
    return out


def _first_error(said: Said, max_block: int) -> list[str]:
    """``  --- first error (line N) ---`` / ``  | ...`` / ``  ---``: the cause's block, long ones cut."""
    ev = said.event
    if ev.rule_id == PROCESS_EXIT:
        return []  # the headline already says how the process ended; the log had no error line
    lines = ev.block or ((ev.text,) if ev.text and ev.text != ev.summary else ())
    if not any(text.strip() for text in lines):
        return []  # nothing to show: no empty excerpt
    shown = lines if len(lines) <= max_block else (*lines[:10], "...", *lines[-(max_block - 11):])
    return [f"  --- first error{_where(said)} ---", *(f"  | {text}" for text in shown), "  ---"]


class Printer:
    """Attach to ``session`` without a screen and print as `symmtui wait` does (see :meth:`run`).

    ``stacks``: print the dump the Session takes when the verdict becomes STALLED (its spec's
    ``auto_stacks``), under the STALLED line.
    """

    def __init__(self, session: SessionLike, out: TextIO | None = None, err: TextIO | None = None, *,
                 stacks: bool = False) -> None:
        self.session = session
        self.writer = clitext.Writer(out if out is not None else sys.stdout)
        self.err = err if err is not None else sys.stderr
        self.stacks = stacks
        self.width = max(len(n) for n in session.nodes)
        self.spans: dict[str, int] = {}
        self.notices: set[tuple[str, str, str]] = set()
        self.shown: tuple[State, str] | None = None  # the STALLED verdict printed last (state, node)
        self.board: Board | None = None
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
        if batch.restarted:
            self.spans[node] = 0
        # every node's new phases: a batch carries the newest Board, which holds every node's snapshot
        for view in batch.board.nodes:
            spans = view.snapshot.phases
            for span in spans[self.spans.get(view.name, 0):]:
                if span.name != "ready":
                    self._line(view.name, clitext.phase_line(span.start, span.name))
            self.spans[view.name] = len(spans)
        self._judged(batch.board)

    def _judged(self, board: Board) -> None:
        """A STALLED line when the verdict becomes STALLED (or names another node), a line when it moves on."""
        self.board = board
        snap = board.snapshot
        if board.state is State.STALLED and self.shown != (State.STALLED, board.node):
            self.shown = (State.STALLED, board.node)
            self._line(None, clitext.stalled_line(snap.elapsed, board.detail, snap.remaining_timeout))
            ranks = board.ranks.text if board.ranks is not None else ""
            if ranks and ranks not in board.detail:
                self._line(None, f"  ranks: {ranks}")
            for text in changed_lines(board):
                self._line(None, text)
        elif self.shown is not None and board.state is State.STARTING:
            self.shown = None
            self._line(None, clitext.phase_line(snap.elapsed, f"moving again ({snap.phase or 'starting'})"))

    def _take(self, timeout: float) -> None:
        """Print what arrived within ``timeout``."""
        if not self.mailbox.wait(timeout):
            return
        for message in self.mailbox.take():
            if isinstance(message, EngineBatch):
                self._batch(message)
            elif isinstance(message, StacksTaken) and self.stacks and message.auto:
                for text in stacks_lines(message):
                    self._line(None, f"  {text}")
            elif isinstance(message, Notice):
                clitext.note(f"{message.severity}: {message.text}", self.err)

    def run(self) -> WaitResult:
        """Print phase lines until a Board is decided, then its verdict block; the exit code of `wait`."""
        while self.board is None or not self.board.decided:
            if self.session.closed and not self.mailbox.wait(0):
                break
            self._take(TICK)
        board = self.board
        assert board is not None, "the session closed before its engine said anything"
        for text in verdict_lines(board):
            self.writer.line(text)
        return WaitResult(board.state, EXIT_CODES.get(board.state, EXIT_CRASHED), board)
