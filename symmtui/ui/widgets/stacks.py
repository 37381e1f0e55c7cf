"""Stacks: where every process of the server is (symmtui.stacks), collapsed per rank, with what to try."""

from __future__ import annotations

import time

from textual.content import Content
from textual.widgets import Static

from symmtui.core.readiness import State
from symmtui.session.messages import StacksTaken
from symmtui.stacks.collapse import group_line
from symmtui.textsafe import visible


def render_stacks(taken: StacksTaken, moved_on: State | None = None) -> Content:
    """The groups, the largest first; the others (the odd ranks) stand out; then the hints. ``moved_on``: the
    state the bring-up is in now that it is no longer stalled: the dump is of the past, and what it said of
    the hang (the GPUs' reading, what to try) is left out."""
    rep = taken.report
    if rep is None:
        return Content.styled(visible(taken.error or "no stacks"), "bold $error")
    lines: list[Content] = []
    if moved_on is not None:
        when = time.strftime("%H:%M:%S", time.localtime(rep.taken_at))
        now = "READY" if moved_on is State.READY else moved_on.value
        note = f"taken at {when}, while stalled; the server is {now} now (s: a fresh dump)"
        if moved_on is State.READY:
            return Content.styled(note, "$muted")
        lines.append(Content.styled(note, "$muted"))
    if rep.ranks_text:
        lines.append(Content.assemble(("ranks: ", "$muted"), (visible(rep.ranks_text), "bold $warning")))
    for i, g in enumerate(rep.groups):
        style = "" if i == 0 and len(rep.groups) > 1 else "bold $warning"
        lines.append(Content.styled(visible(group_line(g)), style))
    if rep.gpus and moved_on is None:
        lines.append(Content.styled(visible(rep.gpus), "$muted"))
    for h in rep.hints() if moved_on is None else ():
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
        self.moved_on: State | None = None

    def show(self, taken: StacksTaken, named: bool = False) -> None:
        """Show a dump (``named``: say whose node's it is, a server of several nodes)."""
        self.taken = taken
        when = time.strftime("%H:%M:%S", time.localtime(taken.report.taken_at)) if taken.report else ""
        how = "on STALLED" if taken.auto else "on s"
        if named:
            how = f"{taken.node} {how}"
        self.border_subtitle = f"{when} {how}".strip()
        self.moved_on = None
        self.update(render_stacks(taken))
        self.display = True

    def clear(self) -> None:
        """Hide the panel: its dump was of another node, or of the launch before a relaunch."""
        self.taken = None
        self.display = False

    def show_state(self, state: State) -> None:
        """The bring-up's state now: a dump taken while stalled says so once the server moved on (READY: one
        line, no "the hang is in the host's code" under a server that came up)."""
        taken = self.taken
        if taken is None or not taken.auto and state is not State.READY:
            return
        moved_on = state if state in (State.READY, State.STARTING) else None
        if moved_on != self.moved_on:
            self.moved_on = moved_on
            self.update(render_stacks(taken, moved_on))
