"""Stacks: where every process of the server is (symmtui.stacks), collapsed per rank, with what to try."""

from __future__ import annotations

import time

from textual.content import Content
from textual.widgets import Static

from symmtui.session.messages import StacksTaken
from symmtui.stacks.collapse import group_line
from symmtui.textsafe import visible


def render_stacks(taken: StacksTaken) -> Content:
    """The groups, the largest first; the others (the odd ranks) stand out; then the hints."""
    rep = taken.report
    if rep is None:
        return Content.styled(visible(taken.error or "no stacks"), "bold $error")
    lines: list[Content] = []
    if rep.ranks_text:
        lines.append(Content.assemble(("ranks: ", "$muted"), (visible(rep.ranks_text), "bold $warning")))
    for i, g in enumerate(rep.groups):
        style = "" if i == 0 and len(rep.groups) > 1 else "bold $warning"
        lines.append(Content.styled(visible(group_line(g)), style))
    if rep.gpus:
        lines.append(Content.styled(visible(rep.gpus), "$muted"))
    for h in rep.hints():
        lines.append(Content.assemble(("  → ", "bold $diag-action"), (visible(h), "$diag-action")))
    for d in rep.unread:
        lines.append(Content.styled(visible(f"{d.label()} (pid {d.pid}) not read: {d.detail}"), "$muted"))
    if not rep.groups:
        lines.append(Content.styled("no Python process of the server could be read", "$muted"))
    return Content("\n").join(lines)


class StacksView(Static):
    """The last stacks dump (the `s` key, or once when the state became STALLED); hidden until the first."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.border_title = "Stacks (s)"
        self.taken: StacksTaken | None = None
        self.display = False

    def show(self, taken: StacksTaken, named: bool = False) -> None:
        """Show a dump (``named``: say whose node's it is, a server of several nodes)."""
        self.taken = taken
        when = time.strftime("%H:%M:%S", time.localtime(taken.report.taken_at)) if taken.report else ""
        how = "on STALLED" if taken.auto else "on s"
        if named:
            how = f"{taken.node} {how}"
        self.border_subtitle = f"{when} {how}".strip()
        self.update(render_stacks(taken))
        self.display = True

    def clear(self) -> None:
        """Hide the panel: its dump was of another node, or of the launch before a relaunch."""
        self.taken = None
        self.display = False
