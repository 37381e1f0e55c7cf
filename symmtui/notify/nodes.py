"""Notifications for a ``[[nodes]]`` profile: the aggregate's verdict (READY, CRASHED on a node, STALLED on
a node, TIMED OUT) told through the same channels as one Session's, once per change of its state."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, TextIO

from symmtui.core.readiness import State
from symmtui.notify.config import NotifyConfig
from symmtui.notify.message import WORDS, VerdictNote, note_of
from symmtui.notify.notifier import Notifier

if TYPE_CHECKING:
    from symmtui.session.nodes import NodeSet, NodesUpdate, NodesVerdict


def nodes_note(verdict: NodesVerdict, *, name: str, log_path: str | None = None) -> VerdictNote | None:
    """The note of an aggregate verdict: the named node's own note (the head's for READY), its headline
    saying the node (``CRASHED on node1 after 14.1 s: ...``), then every node's phase."""
    if verdict.state not in WORDS:
        return None
    about = verdict.view(verdict.node) if verdict.node is not None else None
    about = about if about is not None else verdict.nodes[0]
    snap = about.snapshot
    if snap.state is not verdict.state:  # the node behind may read STARTING while the aggregate is STALLED
        snap = replace(snap, state=verdict.state)
    note = note_of(snap, name=name, host=about.name, log_path=log_path)
    if note is None:
        return None
    word = WORDS[verdict.state]
    headline = note.headline
    if verdict.node is not None and headline.startswith(word):
        headline = f"{word} on {verdict.node}{headline[len(word):]}"
    lines = list(note.lines)
    if verdict.state is State.STALLED and about.ranks is not None and about.ranks.text:
        lines.append(f"{about.name}: {about.ranks.text}")
    lines.append("nodes: " + ", ".join(f"{v.name} {v.phase_text}" for v in verdict.nodes))
    return replace(note, headline=headline, lines=tuple(lines))


class NodesNotes:
    """A NodeSet observer: each aggregate verdict, once per change of its state, to a Notifier."""

    def __init__(self, nodes: NodeSet, notifier: Notifier) -> None:
        self.nodes = nodes
        self.notifier = notifier
        self._lock = threading.Lock()
        self._told: State | None = None  # the verdict told last (None: the aggregate moved on since)

    def observe(self, update: NodesUpdate) -> None:
        verdict = update.verdict
        with self._lock:
            if verdict.state not in WORDS:  # starting again (a STALLED that resumed, a relaunch): news next time
                self._told = None
                return
            if verdict.state is self._told:
                return
            self._told = verdict.state
        node = self.nodes.node(verdict.node) if verdict.node is not None else self.nodes.head
        note = nodes_note(verdict, name=self.notifier.name, log_path=str(node.log) if node.log is not None else None)
        if note is not None:
            self.notifier.tell(note)


def attach_nodes(nodes: NodeSet, config: NotifyConfig | None, *, warn: Callable[[str], None] | None = None,
                 bell: Callable[[], str | None] | None = None) -> Notifier:
    """A Notifier on a NodeSet's aggregate (``config`` None: the defaults, no webhook); ``warn`` defaults
    to the head node's notices (the dashboard shows them)."""
    from symmtui.session.build import profile_name

    head = nodes.head.session
    notifier = Notifier(config or NotifyConfig(), name=profile_name(nodes.profile), host=nodes.head.spec.name,
                        warn=warn or (lambda text: head.notify(text, "warning")), bell=bell)
    nodes.observe(NodesNotes(nodes, notifier).observe)
    return notifier


def for_headless_nodes(nodes: NodeSet, config: NotifyConfig | None, *, asked: bool, err: TextIO) -> Notifier | None:
    """`wait --notify` / `launch --notify` of a ``[[nodes]]`` profile (or one with [notify]): warnings are
    ``symmtui: warning: ...`` lines on ``err``."""
    if not asked and config is None:
        return None
    from symmtui import clitext

    return attach_nodes(nodes, config, warn=lambda text: clitext.note(f"warning: {text}", err))
