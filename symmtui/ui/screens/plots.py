"""The plots screen (G): every GPU's memory and utilisation over the last 10 minutes, the phases marked on
the time axis. The app gives it the GPU panel's history and the phases' start times (``show``)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen

from symmtui.ui.widgets.plots import GpuHistory, GpuPlots

__all__ = ["PlotsScreen"]


class PlotsScreen(ModalScreen[None]):
    """The charts; Escape, q or G closes it."""

    BINDINGS = [Binding("escape,q,G", "close", "Close")]

    def __init__(self, history: GpuHistory, marks: list[tuple[float, str]]) -> None:
        super().__init__(classes="dialog-screen")
        self.history = history
        self.marks = marks

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="plots-dialog") as box:
            box.border_title = "GPU memory and utilisation, the last 10 minutes (G)"
            with VerticalScroll(id="plots-scroll"):
                yield GpuPlots(id="plots")

    def on_mount(self) -> None:
        self.show(self.history, self.marks)

    def show(self, history: GpuHistory, marks: list[tuple[float, str]]) -> None:
        """A new round (or new phases): draw again."""
        self.history, self.marks = history, marks
        self.query_one(GpuPlots).show(history, marks)

    def action_close(self) -> None:
        self.dismiss(None)
