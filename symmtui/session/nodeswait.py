"""`wait` and `launch` for a multi-node profile: each node's phase lines (prefixed with its name), then the aggregate verdict."""

from __future__ import annotations

import queue
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TextIO

from symmtui import clitext
from symmtui.core.diagnose import diagnose
from symmtui.core.events import PROCESS_EXIT
from symmtui.core.readiness import State
from symmtui.core.waiting import EXIT_CODES, EXIT_CRASHED, WaitResult
from symmtui.session.messages import EngineBatch, Notice
from symmtui.session.nodes import NodeMessage, NodeSet, NodesUpdate, NodesVerdict

TICK = 0.5  # seconds between fresh looks at the engines when no batch comes (stall, timeout)
LAST_LINES = 3
SETTLE = 0.3  # after a crash, this long for the other nodes' last lines


class _NodesPrinter:
    def __init__(self, nodes: NodeSet, out: TextIO, err: TextIO) -> None:
        self.writer = clitext.Writer(out)
        self.err = err
        self.spans: dict[str, int] = {n.spec.name: 0 for n in nodes.nodes}
        self.notices: set[tuple[str, str, str]] = set()
        self.state = State.WAITING
        self.about: str | None = None
        self.width = max(len(n.spec.name) for n in nodes.nodes)

    def prefix(self, node: str) -> str:
        return node.ljust(self.width)

    def batch(self, node: str, batch: EngineBatch) -> None:
        for notice in batch.notices:
            key = (node, notice.kind, notice.message)
            if notice.kind == "opened" or key in self.notices:
                continue
            self.notices.add(key)
            self.writer.line(f"{self.prefix(node)} "
                             + clitext.phase_line(batch.snapshot.elapsed, f"log {notice.kind}: {notice.message}"))
        spans = batch.snapshot.phases
        if batch.restarted:
            self.spans[node] = 0
        for span in spans[self.spans[node]:]:
            self.writer.line(f"{self.prefix(node)} {clitext.phase_line(span.start, span.name)}")
        self.spans[node] = len(spans)

    def aggregate(self, verdict: NodesVerdict) -> None:
        """A line when the aggregate becomes STALLED (naming the node behind) or moves on from it."""
        if verdict.state is State.STALLED and (self.state is not State.STALLED or verdict.node != self.about):
            behind = verdict.view(verdict.node or "")
            elapsed = behind.snapshot.elapsed if behind is not None else 0.0
            self.writer.line(f"{'nodes'.ljust(self.width)} {clitext.phase_line(elapsed, verdict.text)}")
        elif self.state is State.STALLED and verdict.state is State.STARTING:
            self.writer.line(f"{'nodes'.ljust(self.width)} moving again: {verdict.text}")
        self.state, self.about = verdict.state, verdict.node

    def verdict(self, nodes: NodeSet, verdict: NodesVerdict) -> None:
        """The aggregate verdict block: the deciding node's own block, named, then every node's phase."""
        about = verdict.view(verdict.node) if verdict.node is not None else verdict.view(nodes.head.spec.name)
        assert about is not None
        shown = about.snapshot
        if shown.state is not verdict.state:  # the node behind, still STALLED when another timed out
            shown = replace(shown, state=verdict.state)
        lines = clitext.verdict_lines(shown, diagnose=lambda ev: diagnose(ev),
                                      ranks=about.ranks.text if about.ranks is not None and about.ranks.text else None)
        if lines and verdict.node is not None:
            word = verdict.state.value.upper()
            lines = [ln.replace(word, f"{word} on {verdict.node}", 1) if ln.startswith(word) else ln for ln in lines]
        if verdict.state is State.STALLED:  # only at an interrupt: STALLED is no verdict
            lines = [verdict.text]
        snap = about.snapshot
        if snap.state is State.CRASHED and (snap.cause is None or snap.cause.rule_id == PROCESS_EXIT):
            tail = [ln for ln in snap.last_lines if ln.strip()][-LAST_LINES:]
            if tail:  # what the node said last (ssh's own reason when it could not reach the node)
                lines.append(f"  last lines of {about.name}'s log:")
                lines += [f"    {ln}" for ln in tail]
        for text in lines:
            self.writer.line(text)
        self.writer.line("  nodes: " + ", ".join(f"{v.name} {v.phase_text}" for v in verdict.nodes))


def report_nodes(nodes: NodeSet, items: queue.Queue[NodeMessage | NodesUpdate], out: TextIO,
                 err: TextIO | None = None, clock: Callable[[], float] = time.monotonic) -> WaitResult:
    """Print every node's phase lines and the aggregate's STALLED lines until the aggregate's verdict,
    then the verdict. Closes every node's Session."""
    printer = _NodesPrinter(nodes, out, err if err is not None else sys.stderr)
    verdict: NodesVerdict | None = None
    try:
        while True:
            try:
                item = items.get(timeout=TICK)
            except queue.Empty:
                verdict = nodes.verdict_now()
                printer.aggregate(verdict)
                if verdict.state.final:
                    break
                continue
            if isinstance(item, NodesUpdate):
                verdict = item.verdict
                printer.aggregate(verdict)
                if verdict.state.final:
                    break
            elif isinstance(item.message, EngineBatch):
                printer.batch(item.node, item.message)
            elif isinstance(item.message, Notice):
                clitext.note(f"{item.node}: {item.message.severity}: {item.message.text}", printer.err)
        if verdict.state is State.CRASHED:
            end = clock() + SETTLE
            while clock() < end:  # the other nodes' lines of the same moment
                try:
                    item = items.get(timeout=max(0.0, end - clock()))
                except queue.Empty:
                    break
                if isinstance(item, NodeMessage) and isinstance(item.message, EngineBatch):
                    printer.batch(item.node, item.message)
            verdict = nodes.verdict_now()
    finally:
        nodes.close()
    printer.verdict(nodes, verdict)
    snap = (verdict.view(verdict.node) or verdict.nodes[0]).snapshot if verdict.node else verdict.nodes[0].snapshot
    return WaitResult(verdict.state, EXIT_CODES.get(verdict.state, EXIT_CRASHED), snap)


class NodesHeadless:
    """Attach to a NodeSet without a screen: its messages queue up for :meth:`verdict`."""

    def __init__(self, nodes: NodeSet, err: TextIO | None = None) -> None:
        self.nodes = nodes
        self.err = err if err is not None else sys.stderr
        self.items: queue.Queue[NodeMessage | NodesUpdate] = queue.Queue()
        nodes.attach(self.items.put)

    def verdict(self, out: TextIO | None = None) -> WaitResult:
        return report_nodes(self.nodes, self.items, out if out is not None else sys.stdout, self.err)
