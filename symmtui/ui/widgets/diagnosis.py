"""Diagnosis: for each crash or warning the Board lists, the cause in plain words and the action to take."""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widgets import Static

from symmtui.core.board import Said
from symmtui.textsafe import visible

INTENT_KEYS = {"patch": "p", "relaunch": "r"}


def render_diagnoses(items: Sequence[Said]) -> Content:
    """One block per item: the headline (with where), the action, the cause."""
    if not items:
        return Content.styled("No crashes or warnings.", "$muted")
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
    return Content("\n").join(blocks)


class DiagnosisView(Static):
    """Cause and action for what the shown node's Board lists (the cause first, then warnings)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Content.styled("No crashes or warnings.", "$muted"), id=id)
        self.border_title = "Diagnosis"
        self.items: tuple[Said, ...] = ()

    def show(self, items: Sequence[Said]) -> None:
        items = tuple(items)
        if items == self.items:
            return
        self.items = items
        self.set_class(any(s.crash for s in items), "-crash")
        self.set_class(bool(items), "-some")
        self.update(render_diagnoses(items))
