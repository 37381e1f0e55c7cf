"""Diagnosis: for each crash or warning event, the cause in plain words and the action to take; then what
changed since the last READY launch (the verdict's ``changes``)."""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widgets import Static

from symmtui.core.diagnose import Diagnosis
from symmtui.core.events import Event
from symmtui.core.rules import Kind
from symmtui.core.verdict import Changes, NodeView
from symmtui.textsafe import visible

INTENT_KEYS = {"patch": "p", "relaunch": "r"}
MAX_DIAGNOSES = 3


def shown_diagnoses(view: NodeView) -> list[tuple[Event, Diagnosis]]:
    """What the pane lists of a node's findings: the cause (or, without one, every error), then the
    warnings; one block per distinct diagnosis, at most MAX_DIAGNOSES; a cause no entry names still says
    where to read."""
    cause = view.snapshot.cause
    out: list[tuple[Event, Diagnosis]] = []
    seen: set[str] = set()
    for found in view.findings:
        event, diag = found.event, found.diagnosis
        if cause is not None and event.key != cause.key and event.kind is not Kind.WARNING:
            continue
        if diag is None or diag.cause in seen:
            continue
        seen.add(diag.cause)
        out.append((event, diag))
        if len(out) >= MAX_DIAGNOSES:
            break
    if not out and cause is not None:
        out.append((cause, Diagnosis(cause.headline(), f"read the log at line {cause.line_no} (n)")))
    return out


def render_changes(changes: Changes) -> Content:
    """``◆ changed since the last READY launch, ...`` and one line per difference, the culprit first (without
    differences: why, ``◆ no READY launch of this profile to compare with``)."""
    said = (("changed ", "bold"),) if changes.lines else ()
    head = Content.assemble(("◆ ", "bold $warning"), *said, (visible(changes.since), "$muted"))
    return Content("\n").join([head, *(Content.assemble(("  · ", "$muted"), visible(t)) for t in changes.lines)])


def render_diagnoses(items: Sequence[tuple[Event, Diagnosis]], changes: Changes | None = None) -> Content:
    """One block per event: the summary (with ranks and count), the cause, the action; then what changed."""
    if not items:
        quiet = Content.styled("No crashes or warnings.", "$muted")
        return quiet if changes is None else Content("\n").join([quiet, render_changes(changes)])
    blocks: list[Content] = []
    for event, diag in items:
        crash = event.kind == Kind.CRASH
        icon, style = ("✖ ", "bold $error") if crash else ("▲ ", "bold $warning")
        where = f"line {event.line_no}" if event.line_no else ""
        meta = ", ".join(x for x in (where, event.where()) if x)
        lines = [
            Content.assemble((icon, style), (visible(event.summary), style),
                             (f"  ({visible(meta)})" if meta else "", "$muted")),
            Content.assemble(("  → ", "bold $diag-action"), (visible(diag.action), "bold $diag-action")),
            Content.assemble(("  cause: ", "$muted"), (visible(diag.cause), "$diag-cause")),
        ]
        blocks.append(Content("\n").join(lines))
    if changes is not None:
        blocks.append(render_changes(changes))
    return Content("\n").join(blocks)


class DiagnosisView(Static):
    """Cause and action for the events the readiness snapshot carries (errors first, then warnings)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Content.styled("No crashes or warnings.", "$muted"), id=id)
        self.border_title = "Diagnosis"
        self.items: tuple[tuple[Event, Diagnosis], ...] = ()
        self.changes: Changes | None = None

    def show(self, items: Sequence[tuple[Event, Diagnosis]], changes: Changes | None = None) -> None:
        """The diagnoses, and ``changes`` (what changed since the last READY launch) under them."""
        items = tuple(items)
        if items == self.items and changes == self.changes:
            return
        self.items, self.changes = items, changes
        self.set_class(any(e.kind == Kind.CRASH for e, _ in items), "-crash")
        self.set_class(bool(items) or changes is not None, "-some")
        self.update(render_diagnoses(items, changes))
