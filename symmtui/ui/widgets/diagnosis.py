"""Diagnosis: for each crash or warning event, the cause in plain words and the action to take."""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widgets import Static

from symmtui.core.diagnose import Diagnosis
from symmtui.core.events import Event
from symmtui.core.rules import Kind
from symmtui.textsafe import visible

INTENT_KEYS = {"patch": "p", "relaunch": "r"}


def render_diagnoses(items: Sequence[tuple[Event, Diagnosis]]) -> Content:
    """One block per event: the summary (with ranks and count), the cause, the action."""
    if not items:
        return Content.styled("No crashes or warnings.", "$muted")
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
    return Content("\n").join(blocks)


class DiagnosisView(Static):
    """Cause and action for the events the readiness snapshot carries (errors first, then warnings)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Content.styled("No crashes or warnings.", "$muted"), id=id)
        self.border_title = "Diagnosis"
        self.items: tuple[tuple[Event, Diagnosis], ...] = ()

    def show(self, items: Sequence[tuple[Event, Diagnosis]]) -> None:
        items = tuple(items)
        if items == self.items:
            return
        self.items = items
        self.set_class(any(e.kind == Kind.CRASH for e, _ in items), "-crash")
        self.set_class(bool(items), "-some")
        self.update(render_diagnoses(items))
