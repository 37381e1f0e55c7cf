"""A yes/no modal: y or Enter confirms, n or Escape cancels; a yes that comes too soon is ignored."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

KEY_GUARD = 0.4
"""Seconds after a question opens during which its yes is ignored: keys typed ahead (a burst meant for a
search box, a y meant for an earlier question) never confirm what the user has not read."""


class Guard:
    """When a modal opened, and whether a confirming key may count yet (``KEY_GUARD`` later), on the app's
    clock (``SymmApp.clock``: the tests drive one)."""

    def __init__(self, app: App[object]) -> None:
        self.clock: Callable[[], float] = getattr(app, "clock", time.monotonic)
        self.opened = self.clock()

    @property
    def accepting(self) -> bool:
        return self.clock() - self.opened >= KEY_GUARD


class ConfirmScreen(ModalScreen[bool]):
    """Ask one question; dismiss with True (y/Enter) or False (n/Escape). A yes within ``KEY_GUARD`` of
    the question opening is ignored (the answer waits for a key the user meant for it)."""

    BINDINGS = [
        Binding("y,enter", "answer(True)", "Yes", priority=True),
        Binding("n,escape", "answer(False)", "No", priority=True),
    ]

    def __init__(self, title: str, body: str | Content, yes: str = "Yes", no: str = "Cancel") -> None:
        super().__init__(classes="dialog-screen")
        self._title = title
        self._body = body
        self._yes = yes
        self._no = no

    def on_mount(self) -> None:
        self.guard = Guard(self.app)

    @property
    def accepting(self) -> bool:
        """A yes counts now (``KEY_GUARD`` has passed since the question opened)."""
        return self.guard.accepting

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="confirm-dialog") as box:
            box.border_title = self._title
            yield Static(self._body, id="confirm-body")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self._yes} (y)", id="yes", variant="primary", compact=True)
                yield Button(f"{self._no} (n)", id="no", compact=True)

    def action_answer(self, yes: bool) -> None:
        if yes and not self.accepting:
            self.app.bell()  # too soon: typed ahead, not an answer
            return
        self.dismiss(yes)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_answer(event.button.id == "yes")
