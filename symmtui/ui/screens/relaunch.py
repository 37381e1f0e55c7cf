"""Relaunch progress: signals sent, GPU memory draining, port free, the new launch; Escape hides it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from symmtui.launch.report import Progress, Step

STEP_WORDS: dict[Step, str] = {
    Step.SCAN: "finding processes",
    Step.TERM: "SIGTERM sent",
    Step.KILL: "SIGKILL sent",
    Step.GPU: "GPU memory draining",
    Step.PORT: "waiting for the port",
    Step.PREFLIGHT: "preflight",
    Step.LAUNCH: "launched",
    Step.DONE: "stopped",
}


class RelaunchScreen(ModalScreen[None]):
    """One line per step, the latest one live; closes itself when the new server has started."""

    BINDINGS = [Binding("escape,n,enter,y", "close", "Hide", priority=True)]

    def __init__(self) -> None:
        super().__init__(classes="dialog-screen")
        self.steps: list[Progress] = []
        self.finished = False

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="relaunch-dialog") as box:
            box.border_title = "Relaunch"
            yield Static(Content.styled("stopping the server…", "$accent"), id="relaunch-steps")
            yield Static("", id="relaunch-result")

    def add_progress(self, progress: Progress) -> None:
        if self.steps and self.steps[-1].step == progress.step:
            self.steps[-1] = progress
        else:
            self.steps.append(progress)
        lines: list[Content] = []
        for i, p in enumerate(self.steps):
            last = i == len(self.steps) - 1
            busy = last and not self.finished and p.step not in (Step.LAUNCH, Step.DONE)
            icon, style = ("⟳ ", "$accent") if busy else ("✔ ", "$success")
            left = f"  ({p.time_left:.0f} s left)" if last and p.time_left is not None else ""
            lines.append(
                Content.assemble((icon, style), (f"{STEP_WORDS.get(p.step, str(p.step)):<21}", "bold"),
                                 p.message, (left, "$muted"))
            )
        self.query_one("#relaunch-steps", Static).update(Content("\n").join(lines))

    def finish(self, text: str, *, error: bool) -> None:
        self.finished = True
        if self.steps:
            self.add_progress(self.steps[-1])
        style = "bold $error" if error else "bold $success"
        self.query_one("#relaunch-result", Static).update(
            Content.assemble(("✖ " if error else "✔ ", style), (text, style), ("   (Enter or Escape to close)", "$muted"))
        )

    def action_close(self) -> None:
        self.dismiss()
