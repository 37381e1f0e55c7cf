"""Stacks: where every process of the server is (symmtui.stacks), collapsed per rank, with its frames and what to try.

The panel says when and why each dump was taken: ``taken at 12:49:56 on s (the server was READY)`` or ``taken
at 12:49:56 because the state became STALLED``, and where it is saved. Under each group its call path (the
frames, innermost first, library runs folded). A dump taken because of a stall says so once the server moved
on; one taken on ``s`` keeps showing what it showed.
"""

from __future__ import annotations

import time

from textual.content import Content
from textual.widgets import Static

from symmtui.judge.readiness import State
from symmtui.judge.verdict import WORDS
from symmtui.session.messages import StacksTaken
from symmtui.stacks.collapse import group_line
from symmtui.textsafe import visible

MAX_FRAMES = 6  # frames shown under a group (the saved dump has them all)


def _when(taken: StacksTaken, state: State | None) -> str:
    """``taken at 12:49:56 on s (the server was READY)``, or ``... because the state became STALLED``."""
    rep = taken.report
    at = time.strftime("%H:%M:%S", time.localtime(rep.taken_at)) if rep is not None else time.strftime("%H:%M:%S")
    if taken.auto:
        return f"taken at {at} because the state became STALLED"
    return f"taken at {at} on s" + (f" (the server was {WORDS[state]})" if state is not None else "")


def render_stacks(taken: StacksTaken, state: State | None = None, moved_on: State | None = None) -> Content:
    """When and why it was taken, the groups (the largest first; the odd ranks stand out) with their frames, the
    hints, where it is saved. ``state``: the bring-up's state when it was taken; ``moved_on``: the state now of a
    dump taken at a stall that is over (what it said of the hang, the GPUs and what to try, is left out)."""
    rep = taken.report
    lines: list[Content] = [Content.styled(_when(taken, state), "$muted")]
    if rep is None:
        lines.append(Content.styled(visible(taken.error or "no stacks"), "bold $error"))
        return Content("\n").join(lines)
    if moved_on is not None:
        lines.append(Content.styled(f"the stall is over: the server is {WORDS[moved_on]} now (s: a fresh dump)",
                                    "$muted"))
        if moved_on is State.READY:  # a server that came up: nothing of the hang's reading is true now
            if taken.saved:
                lines.append(Content.styled(f"saved: {visible(taken.saved)}", "$muted"))
            return Content("\n").join(lines)
    if rep.ranks_text:
        lines.append(Content.assemble(("ranks: ", "$muted"), (visible(rep.ranks_text), "bold $warning")))
    for i, g in enumerate(rep.groups):
        style = "" if i == 0 and len(rep.groups) > 1 else "bold $warning"
        lines.append(Content.styled(visible(group_line(g)), style))
        path = list(g.path)
        for step in path[:MAX_FRAMES]:
            lines.append(Content.styled(f"  {visible(step)}", "$muted"))
        if len(path) > MAX_FRAMES:
            lines.append(Content.styled(f"  … {len(path) - MAX_FRAMES} more frames (in the saved dump)", "$muted"))
    if rep.gpus and moved_on is None:
        lines.append(Content.styled(visible(rep.gpus), "$muted"))
    for h in rep.hints() if moved_on is None else ():
        lines.append(Content.assemble(("  → ", "bold $diag-action"), (visible(h), "$diag-action")))
    for d in rep.unread:
        lines.append(Content.styled(visible(f"{d.label()} (pid {d.pid}) not read: {d.detail}"), "$muted"))
    if not rep.groups:
        lines.append(Content.styled("no Python process of the server could be read", "$muted"))
    if taken.saved:
        lines.append(Content.styled(f"saved: {visible(taken.saved)}", "$muted"))
    return Content("\n").join(lines)


class StacksView(Static):
    """The last stacks dump (the `s` key, or once when the state became STALLED); hidden until the first."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.border_title = "Stacks (s)"
        self.taken: StacksTaken | None = None
        self.display = False
        self.state: State | None = None  # the bring-up's state when the dump was taken
        self.moved_on: State | None = None

    def show(self, taken: StacksTaken, named: bool = False, state: State | None = None) -> None:
        """Show a dump (``named``: say whose node's it is, a server of several nodes; ``state``: the bring-up's
        state as it was taken)."""
        self.taken = taken
        self.state = state
        when = time.strftime("%H:%M:%S", time.localtime(taken.report.taken_at)) if taken.report else ""
        how = "on STALLED" if taken.auto else "on s"
        if named:
            how = f"{taken.node} {how}"
        self.border_subtitle = f"{when} {how}".strip()
        self.moved_on = None
        self.update(render_stacks(taken, state))
        self.display = True

    def clear(self) -> None:
        """Hide the panel: its dump was of another node, or of the launch before a relaunch."""
        self.taken = None
        self.display = False

    def show_state(self, state: State) -> None:
        """The bring-up's state now: a dump taken because of a stall says so once the server moved on."""
        taken = self.taken
        if taken is None or not taken.auto:
            return  # a dump taken on s shows what it showed, and when
        moved_on = state if state in (State.READY, State.STARTING) else None
        if moved_on != self.moved_on:
            self.moved_on = moved_on
            self.update(render_stacks(taken, self.state, moved_on))
