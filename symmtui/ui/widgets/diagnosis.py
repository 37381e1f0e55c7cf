"""Diagnosis: for each crash or warning the Board lists, the cause in plain words and the action to take; then
what changed since the last READY launch (the Board's ``changes``)."""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widgets import Static

from symmtui.judge.board import Said
from symmtui.judge.verdict import Changes
from symmtui.textsafe import visible

INTENT_KEYS = {"patch": "p", "relaunch": "r"}


def render_changes(changes: Changes) -> Content:
    """``◆ changed since the last READY launch, ...`` and one line per difference, the culprit first (without
    differences: why, ``◆ no READY launch of this profile to compare with``)."""
    said = (("changed ", "bold"),) if changes.lines else ()
    head = Content.assemble(("◆ ", "bold $warning"), *said, (visible(changes.since), "$muted"))
    return Content("\n").join([head, *(Content.assemble(("  · ", "$muted"), visible(t)) for t in changes.lines)])


def render_diagnoses(items: Sequence[Said], changes: Changes | None = None) -> Content:
    """One block per item: the headline (with where), the action, the cause; then what changed."""
    if not items:
        quiet = Content.styled("No crashes or warnings.", "$muted")
        return quiet if changes is None else Content("\n").join([quiet, render_changes(changes)])
    blocks: list[Content] = []
    for said in items:
        icon, style = ("✖ ", "bold $error") if said.crash else ("▲ ", "bold $warning")
        meta = ", ".join(x for x in (said.where, said.event.where()) if x)
        lines = [
            Content.assemble((icon, style), (visible(said.event.summary), style),
                             (f"  ({visible(meta)})" if meta else "", "$muted")),
            Content.assemble(("  → ", "bold $diag-action"), (visible(said.action or ""), "bold $diag-action")),
            Content.assemble(("  cause: ", "$muted"), (visible(said.cause or ""), "$diag-cause")),
        ]
        blocks.append(Content("\n").join(lines))
    if changes is not None:
        blocks.append(render_changes(changes))
    return Content("\n").join(blocks)


class DiagnosisView(Static):
    """Cause and action for what the shown node's Board lists (the cause first, then warnings), and what
    changed since the last READY launch."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Content.styled("No crashes or warnings.", "$muted"), id=id)
        self.border_title = "Diagnosis"
        self.items: tuple[Said, ...] = ()
        self.changes: Changes | None = None

    def show(self, items: Sequence[Said], changes: Changes | None = None) -> None:
        """The diagnoses, and ``changes`` (what changed since the last READY launch) under them."""
        items = tuple(items)
        if items == self.items and changes == self.changes:
            return
        self.items, self.changes = items, changes
        self.set_class(any(s.crash for s in items), "-crash")
        self.set_class(bool(items) or changes is not None, "-some")
        self.update(render_diagnoses(items, changes))
